"""Scenario validation: every broken file is reported at the right place, and the
bundled library is complete and self-consistent (its expectations are the spec
proxies are judged by, so a slip there is a bug like any other)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.errors import ScenarioProblem
from harness.scenario import ContentFrame, Scenario, bundled_scenarios_dir, validate_paths

BAD = Path(__file__).parent / "bad_scenarios"
LIBRARY = bundled_scenarios_dir()
FAMILIES = {"qwen-tools", "hermes", "invoke-xml", "qwen-coder", "tool-code", "cline-xml", "plain", "features"}


@dataclass(frozen=True)
class BadCase:
    """One broken file (or set of files validated together) and the problem it must produce."""

    files: tuple[str, ...]
    reported: str  # the file the problem is reported against
    line: int | None
    field: str
    fragment: str  # part of the message that names the actual mistake

    @property
    def id(self) -> str:
        return self.reported.removesuffix(".yaml")


def _case(name: str, line: int | None, field: str, fragment: str) -> BadCase:
    return BadCase((name,), name, line, field, fragment)


BAD_CASES: list[BadCase] = [
    _case("invalid-yaml.yaml", 7, "(yaml)", "not valid YAML: expected ',' or ']'"),
    _case("not-a-mapping.yaml", 1, "(top level)", "a scenario file holds one mapping"),
    _case("unknown-top-level-key.yaml", 4, "tag", "unknown key 'tag'"),
    _case("unknown-nested-key.yaml", 8, "backend.finish", "unknown key 'finish'"),
    _case("missing-frames.yaml", 4, "backend", "missing required key 'frames'"),
    _case("missing-request-messages.yaml", 9, "client.request", "missing required key 'messages'"),
    _case("frame-wrong-shape.yaml", 8, "backend.frames[1]", "found key(s) 'text'"),
    _case(
        "tool-call-frame-without-index.yaml",
        7,
        "backend.frames[0].tool_call",
        "missing required key 'index'",
    ),
    _case("undeclared-expected-tool.yaml", 20, "expect.tool_calls[0].name", "'get_wether' is not among the request's tools"),
    _case("bad-regex.yaml", 14, "expect.content_regex", "not a valid regular expression"),
    _case("bad-upstream-regex.yaml", 18, "expect.upstream[0].matches", "not a valid regular expression"),
    _case("two-checks-in-assertion.yaml", 19, "expect.upstream[1]", "exactly one check per assertion, found ['equals', 'absent']"),
    _case("content-and-regex.yaml", 15, "expect.content_regex", "either 'content' or 'content_regex'"),
    _case("wrong-type.yaml", 4, "stream_equivalence", "is not of type 'boolean'"),
    _case("profile-not-in-profiles.yaml", 9, "client.profile", "profile 'vtc' is not among 'profiles'"),
    _case("unknown-feature.yaml", 4, "requires[0]", "'loop-guards' is not one of"),
    _case("rechunk-non-stream.yaml", 4, "rechunk", "streaming requests only"),
    _case("bad-id.yaml", 1, "id", "does not match"),
    BadCase(
        ("duplicate-id-first.yaml", "duplicate-id-second.yaml"),
        "duplicate-id-second.yaml",
        1,
        "id",
        "id 'bad-duplicate-id' is already used by",
    ),
]




def _problems(case: BadCase) -> tuple[list[Scenario], list[ScenarioProblem]]:
    return validate_paths([BAD / name for name in case.files])


# --------------------------------------------------------------------------- broken files


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.id)
def test_bad_scenario_problem_is_located(case: BadCase) -> None:
    _, problems = _problems(case)
    where = (str(BAD / case.reported), case.line, case.field)
    located = [p for p in problems if (p.path, p.line, p.field) == where]
    assert located, f"no problem at {where}; got: {[str(p) for p in problems]}"
    assert any(case.fragment in p.message for p in located), [str(p) for p in located]


@pytest.mark.parametrize("case", BAD_CASES, ids=lambda c: c.id)
def test_bad_scenario_reports_one_problem(case: BadCase) -> None:
    scenarios, problems = _problems(case)
    assert len(problems) == 1, [str(p) for p in problems]
    assert len(scenarios) == len(case.files) - 1


def test_every_bad_file_is_in_the_table() -> None:
    tabled = {name for case in BAD_CASES for name in case.files}
    on_disk = {p.name for p in BAD.glob("*.yaml")}
    assert on_disk == tabled
    assert len(BAD_CASES) >= 10


# --------------------------------------------------------------------------- the library


def _library() -> list[Scenario]:
    scenarios, problems = validate_paths([LIBRARY])
    assert problems == []
    return scenarios


def test_library_validates_and_covers_every_family() -> None:
    scenarios = _library()
    assert len(scenarios) >= 40
    per_family = Counter(s.family for s in scenarios)
    assert set(per_family) == FAMILIES, per_family
    assert all(n >= 3 for n in per_family.values()), per_family


@pytest.mark.parametrize("scenario", validate_paths([LIBRARY])[0], ids=lambda s: s.id)
def test_library_scenario_is_consistent(scenario: Scenario) -> None:
    assert scenario.path is not None
    path = Path(scenario.path)
    assert path.parent.name == scenario.family
    assert scenario.id == f"{scenario.family}-{path.stem}", "id is <family>-<file stem>"
    assert scenario.tags and scenario.source.strip()

    expect = scenario.expect
    assert expect.finish_reason is not None, "every case states the finish reason the client gets"
    assert expect.content is not None or expect.content_regex is not None
    if scenario.client.profile == "vtc":
        assert expect.finish_reason == "stop", "an XML client always gets 'stop'"
        assert "vtc" in scenario.requires and scenario.client.profiles == ("vtc",)
    elif expect.tool_calls:
        assert expect.finish_reason == "tool_calls"
    else:
        assert expect.finish_reason in ("stop", "length")
        assert expect.finish_reason == "stop" or scenario.backend.finish_reason == "length"

    text = "".join(f.content for f in scenario.backend.frames if isinstance(f, ContentFrame))
    for marker in expect.markers:
        assert marker in text, f"marker {marker!r} never occurs in the backend's text, so it checks nothing"
    if not scenario.streams:
        assert "stream_options" not in scenario.client.request
    if "stream_options" in scenario.client.request:
        assert not scenario.stream_equivalence, "stream_options has no stream:false twin"


# --------------------------------------------------------------------------- CLI


def test_cli_validate_reports_every_bad_file() -> None:
    result = CliRunner().invoke(main, ["validate", str(BAD)])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    for case in BAD_CASES:
        prefix = f"{BAD / case.reported}:{case.line}: {case.field}: "
        assert any(line.startswith(prefix) for line in lines), (prefix, lines)
    assert all(line.startswith(str(BAD)) for line in lines), lines
    valid = len(BAD_CASES[-1].files) - 1
    assert result.stdout.strip() == f"{valid} valid, {len(lines)} problem(s)"


def test_cli_validate_accepts_the_library() -> None:
    result = CliRunner().invoke(main, ["validate"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout.strip() == f"{len(_library())} valid, 0 problem(s)"


def _listed(args: list[str]) -> list[tuple[str, str]]:
    result = CliRunner().invoke(main, ["list", *args])
    assert result.exit_code == 0, result.stderr
    rows = [line.split()[:2] for line in result.stdout.splitlines()]
    assert result.stderr.strip() == f"{len(rows)} scenario(s)"
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize(
    ("args", "family", "tags"),
    [
        ([], None, ()),
        (["--family", "invoke-xml"], "invoke-xml", ()),
        (["--family", "cline-xml"], "cline-xml", ()),
        (["--tag", "negative"], None, ("negative",)),
        (["--tag", "parallel", "--tag", "native"], None, ("parallel", "native")),
        (["--family", "hermes", "--tag", "parallel"], "hermes", ("parallel",)),
    ],
)
def test_cli_list_filters(args: list[str], family: str | None, tags: tuple[str, ...]) -> None:
    wanted = [
        (s.id, s.family)
        for s in _library()
        if (family is None or s.family == family) and all(t in s.tags for t in tags)
    ]
    assert wanted, "the filter must select something for the test to mean anything"
    assert _listed([*args, "--scenarios", str(LIBRARY)]) == wanted
