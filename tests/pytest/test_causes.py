"""Failures grouped by cause: one defect that breaks thirty scenarios reads as one group (its rules
once, one scenario in full, the others one line each) that fits a screen, and points to the detail."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from mutants import ALL
from support.servers import ServeFn

from harness.core.scenario.loading import bundled_scenarios_dir
from harness.judge.rules import RULES
from harness.report.causes import SHOWN, group_failures, render_causes
from harness.report.summary import FailureRecord, ItemRecord
from mock_backends.app import create_app as create_mock

pytest_plugins = ["pytester"]


def _item(scenario: str, *rules: str, family: str = "hermes", cause: str = "", outcome: str = "failed",
          expected: bool = False) -> ItemRecord:
    failures = tuple(FailureRecord(rule, RULES[rule].group, RULES[rule].severity, "streaming",
                                   f"{rule} broken in {scenario}", expected, "event 1, byte 9") for rule in rules)
    return ItemRecord(scenario, family, "openai", outcome, failures=failures, cause=cause,
                      replay=f"toolcall-conformance replay {scenario} --proxy-url http://127.0.0.1:1/v1")


ORDER = list(RULES)

GROUPING_CASES: list[tuple[str, list[ItemRecord], list[tuple[str, str, int]]]] = [
    ("one defect: a text rule everywhere, a call rule too in one",
     [_item(f"hermes-{n}", "TEXT-001", "TEXT-003") for n in range(29)] + [_item("hermes-two", "CALLS-001", "TEXT-001")],
     [("TEXT-001", "", 30)]),
    ("two defects in different scenarios",
     [_item("a", "TEXT-001"), _item("b", "TEXT-001"), _item("c", "SSE-004", family="plain")],
     [("TEXT-001", "", 2), ("SSE-004", "", 1)]),
    ("the same rule for another cause is another group",
     [_item("a", "TEXT-001"), _item("b", "TEXT-001", cause="HTTP 404 from POST /v1/chat/completions")],
     [("TEXT-001", "", 1), ("TEXT-001", "HTTP 404 from POST /v1/chat/completions", 1)]),
    ("known failures and passes are not grouped",
     [_item("a", "TEXT-001", expected=True, outcome="xfailed"), _item("b", outcome="passed")], []),
]


@pytest.mark.parametrize(("items", "groups"), [c[1:] for c in GROUPING_CASES], ids=[c[0] for c in GROUPING_CASES])
def test_failures_are_grouped_by_the_rule_they_share_and_their_cause(
        items: list[ItemRecord], groups: list[tuple[str, str, int]]) -> None:
    causes = group_failures(items, ORDER)
    assert [(c.rule, c.cause, len(c.items)) for c in causes] == groups


def test_a_group_shows_a_typical_scenario_in_full_and_the_others_one_line_each() -> None:
    items = [_item("hermes-odd", "CALLS-001", "TEXT-001")] + [_item(f"hermes-{n}", "TEXT-001") for n in range(9)]
    cause, = group_failures(items, ORDER)
    assert cause.items[0].scenario == "hermes-0"  # a typical one first, not the odd one
    lines = [line.text for line in render_causes([cause], rules=RULES, width=60)]
    assert lines[0] == "TEXT-001 broken in 10 scenario(s)"
    assert sum(line.startswith("  TEXT-001 [") for line in lines) == 1  # the explanation once
    assert "  CALLS-001 (in 1) [" in "\n".join(lines)
    assert "  hermes-0:" in lines and "    TEXT-001 at event 1, byte 9: TEXT-001 broken in hermes-0" in lines
    assert lines.count("  … and 6 more (-v lists each)") == 1
    assert all(len(line) <= 60 for line in lines if not line.startswith(("    replay:", "      ")))
    every = [line.text for line in render_causes([cause], rules=RULES, width=60, every=True)]
    assert sum(line.startswith("  hermes-") for line in every) == 10 > SHOWN + 1
    assert any(line.startswith("  hermes-odd (also CALLS-001):") for line in every)


# --------------------------------------------------------------------------- a real run of one defect

HERMES = "hermes-rescue-off"  # one defect: the Hermes <tool_call> format is not rescued


@pytest.fixture
def hermes_run(pytester: pytest.Pytester, servers: ServeFn) -> list[str]:
    """The options of a run of the Hermes folder against a proxy that does not rescue Hermes."""
    shutil.copytree(bundled_scenarios_dir() / "hermes", pytester.path / "scenarios" / "hermes")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    mock_url = servers(create_mock()).url
    mutant = next(m for m in ALL if m.id == HERMES)
    proxy_url = servers(mutant.app(f"{mock_url}/v1")).url + "/v1"
    return ["--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
            "--conformance-scenarios", str(pytester.path / "scenarios")]


def test_one_defect_in_twenty_scenarios_fits_a_screen_and_points_to_the_detail(
        pytester: pytest.Pytester, hermes_run: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("NO_COLOR", "1")
    grouped = pytester.runpytest(*hermes_run)
    failed = grouped.parseoutcomes()["failed"]
    assert failed >= 20
    lines = grouped.stdout.lines
    assert len(lines) <= 45, "\n".join(lines)
    assert not any("\x1b[" in line for line in lines)
    start = next(n for n, line in enumerate(lines) if "failed scenario(s)" in line)
    end = next(n for n, line in enumerate(lines) if line.startswith("more: "))
    assert all(len(line) <= 100 for line in lines[start:end + 1] if not line.startswith(("    replay:", "      ")))
    grouped.stdout.fnmatch_lines([
        f"*= {failed} failed scenario(s), one cause =*",
        f"TEXT-003 broken in {failed} scenario(s)",
        "  TEXT-003 [[]client, breaks *]: No tool-call markup*",
        "  hermes-*:",
        "    TEXT-003 at event *: '<tool_call>' appears *",
        "   replay: *toolcall-conformance replay*", "     *--proxy-url *",
        f"  … and {failed - 1 - SHOWN} more (-v lists each)",
        "more: -v (every scenario), --tb=short (each in full), --tb=long (raw answers)",
        "*tool-call conformance*",
        f"  hermes * {failed} failed",
    ])
    assert "FAILED conformance::" not in grouped.stdout.str()  # not once more per scenario
    assert grouped.stdout.str().count("No tool-call markup") == 1  # the explanation once

    detailed = pytester.runpytest(*hermes_run, "--tb=short")
    assert len(detailed.stdout.lines) > 10 * len(lines)  # the full detail, on request
    assert detailed.stdout.str().count("FAILED conformance::") == failed


def test_the_run_commands_view_of_one_defect_is_at_most_forty_lines(
        pytester: pytest.Pytester, hermes_run: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``toolcall-conformance run`` passes (``--conformance-only -q``) at 80 columns: the
    run's header, the progress, the one group, the score card and pytest's totals, nothing of
    pytest's own header."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    result = pytester.runpytest("--conformance-only", "-q", *hermes_run)
    failed = result.parseoutcomes()["failed"]
    lines = result.stdout.lines
    assert failed >= 20 and len(lines) <= 40, "\n".join(lines)
    assert lines[0].startswith("conformance: ") and not any(line.startswith(("platform ", "rootdir:")) for line in lines)
    assert all(len(line) <= 80 for line in lines)
    result.stdout.fnmatch_lines([f"*= {failed} failed scenario(s), one cause =*", "   replay: *", "more: *",
                                 "*tool-call conformance*", f"{failed} failed, * passed* in *"])


def test_colour_follows_force_color_and_no_color(pytester: pytest.Pytester, hermes_run: list[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PY_COLORS", raising=False)  # pytester's own setting: without it, pytest reads these two
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    coloured = pytester.runpytest(*hermes_run, "-k", "hermes-single or hermes-parallel")
    red = re.compile(r"\x1b\[31m.*TEXT-001 broken in 2 scenario")
    assert any(red.search(line) for line in coloured.stdout.lines), coloured.stdout.str()
    monkeypatch.delenv("FORCE_COLOR")
    monkeypatch.setenv("NO_COLOR", "1")
    plain = pytester.runpytest(*hermes_run, "-k", "hermes-single or hermes-parallel")
    assert "\x1b[" not in plain.stdout.str()
    plain.stdout.fnmatch_lines(["TEXT-001 broken in 2 scenario(s)"])


def test_the_scenario_file_replays_from_where_the_user_is(tmp_path: Path) -> None:
    """The replay command of a group names the scenario file, relative to the current folder."""
    from harness.pytest.reproduce import shown_path

    inside = Path.cwd() / "scenarios" / "x.yaml"
    assert shown_path(str(inside)) == str(Path("scenarios") / "x.yaml")
    assert shown_path(str(tmp_path / "x.yaml")) == str(tmp_path / "x.yaml")
