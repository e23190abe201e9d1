"""Generated cases played side by side by worker processes: the same cases in the same order
as one at a time, the same findings, and every fuzz-only mutant still caught."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from mutants.base import Mutant
from mutants.fuzz_only import BUDGET, FUZZ_ONLY
from support.fuzz_runs import FEATURES, SEED, run_fuzz
from support.mutant_rig import Apart, Rig, apart, rig  # noqa: F401  (the module's servers)

from harness.cli.main import main
from harness.run.fuzz_pool import CasePool
from harness.run.fuzzing import FuzzReport, FuzzSettings, fuzz
from harness.run.settings import RunSettings
from mock_backends.control import MockControl

# What makes the split opener's case fail is where a frame ends, never the machine's timing:
# its finding is the same however the examples are played.
DETERMINISTIC = ("loses-split-opener", "retypes-nested-integers")


@pytest.fixture(scope="module")
def pool() -> Iterator[CasePool]:
    """Two workers that play through the proxy and the mock a test names (the user's-proxy mode)."""
    with CasePool(2, own=None) as started:
        yield started


def _played(rig: Rig, tmp_path: Path, pool: CasePool | None) -> tuple[list[str], list[int]]:
    seen: list[str] = []
    with MockControl(rig.mock_url) as mock:
        report = fuzz(FuzzSettings(run=RunSettings(proxy_url=rig.reference_url, features=FEATURES),
                                   formats=("hermes", "native"), examples=8, seed=SEED, out=tmp_path),
                      mock, replay_command=lambda scenario_id, _case: scenario_id,
                      observe=lambda case: seen.append(repr(case)), pool=pool)
    assert report.findings == []
    return seen, [r.examples for r in report.results]


def test_a_pool_plays_the_cases_one_at_a_time_plays(rig: Rig, pool: CasePool, tmp_path: Path) -> None:
    alone = _played(rig, tmp_path, None)
    side_by_side = _played(rig, tmp_path, pool)
    assert side_by_side == alone and len(alone[0]) >= 16


def _outcome(report: FuzzReport) -> list[tuple[str, int, str | None]]:
    return [(r.format_id, r.examples, repr(r.finding.case) if r.finding else None) for r in report.results]


@pytest.mark.parametrize("mutant", FUZZ_ONLY, ids=[m.id for m in FUZZ_ONLY])
def test_a_pool_catches_every_fuzz_only_mutant(mutant: Mutant, apart: Apart, pool: CasePool, tmp_path: Path) -> None:
    """Each caught side by side; where the finding does not hang on the machine's timing, the
    same finding after the same number of examples as one at a time, and the format after it
    (drawn while the failing one still played) as one at a time plays it. Where it does hang
    on timing (two writes a busy host delivers as one read), in one of two runs."""
    url, mock_url = apart.mutant_urls[mutant.id], apart.mock_url
    formats, budget = BUDGET[mutant.id]
    if mutant.id == DETERMINISTIC[0]:
        formats += ("native",)
    runs = 1 if mutant.id in DETERMINISTIC else 2
    for run in range(runs):
        found = run_fuzz(url, mock_url, formats, budget, tmp_path / f"pool-{run}", shrink_budget=5, pool=pool)
        if found.findings:
            break
    assert len(found.findings) == 1, f"{mutant.id} ({mutant.breaks}) not caught in {budget} examples side by side"
    assert set(mutant.rules) <= set(found.findings[0].rules)
    if mutant.id in DETERMINISTIC:
        alone = run_fuzz(url, mock_url, formats, budget, tmp_path / "alone", shrink_budget=5)
        assert _outcome(found) == _outcome(alone)


def test_the_command_plays_side_by_side_with_its_own_servers(tmp_path: Path) -> None:
    """``--jobs 2``: each worker serves its own mock and reference proxy; the output is the same lines."""
    result = CliRunner().invoke(main, ["fuzz", "--examples", "3", "--seed", "3", "--no-database", "--jobs", "2",
                                       "--formats", "hermes,native", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert re.search(r"hermes +3 example\(s\) .* examples/s  no failure", result.output)
    assert re.search(r"fuzz: 6 example\(s\) in .* examples/s\); no failure", result.output)
