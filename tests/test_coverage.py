"""The case taxonomy against the library: every format × case id cell is a scenario or
has a recorded reason, and the generated files are what the generator writes."""

from __future__ import annotations

import re

import pytest

from harness.formats import FORMATS
from harness.formats.cases import BUILDERS, taxonomy
from harness.formats.generate import ROOT, coverage, stale
from harness.scenario import load_library

LIBRARY = load_library()
TAGGED = [(s.id, s.tags) for s in LIBRARY]


def test_the_taxonomy_is_well_formed() -> None:
    tax = taxonomy()
    ids = [c.id for c in tax.cases]
    assert len(ids) >= 24 and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", i) for i in ids)
    assert all(c.meaning and "\n" not in c.meaning for c in tax.cases)
    assert set(BUILDERS) == set(ids), "one scenario builder per case id"
    for fmt, cells in tax.not_applicable.items():
        assert fmt in FORMATS, f"not_applicable names an unknown format {fmt}"
        assert set(cells) <= set(ids), f"{fmt}: unknown case ids {set(cells) - set(ids)}"
    assert set(tax.pending) <= set(FORMATS)


def test_generated_files_are_up_to_date() -> None:
    problems = stale()
    assert not problems, "run `python -m harness.formats.generate`; stale: " + ", ".join(problems[:20])


def test_every_cell_has_a_scenario_or_a_reason() -> None:
    cov = coverage(TAGGED)
    assert cov.missing() == []
    assert set(cov.formats) == set(FORMATS)


def test_a_removed_cell_fails_the_coverage_check() -> None:
    """The check can fail: take one cell's scenarios out of the library and it reports it."""
    cov = coverage(TAGGED)
    cell = next(k for k, v in sorted(cov.scenarios.items()) if v)
    remaining = [(i, tags) for i, tags in TAGGED if i not in cov.scenarios[cell]]
    assert coverage(remaining).missing() == [cell]


@pytest.mark.parametrize("cell", [("hermes", "two-calls-one-block"), ("bare-json", "orphan-closer")])
def test_a_reason_stands_only_for_an_empty_cell(cell: tuple[str, str]) -> None:
    """A cell with a recorded reason has no generated scenario (the reason would be stale)."""
    cov = coverage(TAGGED)
    assert cell in cov.reasons and not cov.scenarios.get(cell)


def test_generated_scenarios_carry_their_cell() -> None:
    generated = [s for s in LIBRARY if "generated" in s.tags]
    assert generated
    for s in generated:
        formats = [t for t in s.tags if t.startswith("format-")]
        cases = [t for t in s.tags if t.startswith("case-")]
        assert len(formats) == 1 and len(cases) == 1, s.id
        assert s.path is not None and s.path.endswith(f"{formats[0][7:]}.{cases[0][5:]}.yaml")
        assert (ROOT / s.path).is_file() or s.path.startswith(str(ROOT))
