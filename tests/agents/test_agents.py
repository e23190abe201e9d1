"""The agents tier without npm: each agent's event-stream reader on captured streams, the
judge on a good and a broken run, the cases it plays, and skipping an agent that cannot be
installed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.agents.agents import AGENTS
from harness.agents.base import ToolRun, Transcript
from harness.agents.cases import DEFAULT_FORMATS, FINAL_TEXT, all_cases, build_case
from harness.agents.install import Installed, install, pins
from harness.agents.judge import Facts, judge
from harness.agents.runner import Outcome, Target, play, table
from harness.cli.main import main
from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES
from harness.core.exchange import RecordedAnswer, RecordedRequest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"


def events(agent: str, name: str) -> str:
    version = pins()[agent].version
    return (FIXTURES / f"{agent}-{version}" / name).read_text("utf-8")


def test_claude_code_stream() -> None:
    got = AGENTS["claude-code"].read_events(events("claude-code", "events-native-call.jsonl"))
    assert [(r.name, r.ok, r.call_id) for r in got.tool_runs] == [("Bash", True, "toolu_conformance01")]
    assert got.tool_runs[0].arguments["command"].endswith("> conformance-result.txt")
    assert got.final_text == FINAL_TEXT and got.problems == ()


def test_codex_stream() -> None:
    got = AGENTS["codex"].read_events(events("codex", "events-native-call.jsonl"))
    # Its "model metadata not found" item is a warning, not a problem.
    assert [(r.name, r.ok, r.exit_code) for r in got.tool_runs] == [("exec_command", True, 0)]
    assert got.final_text == FINAL_TEXT and got.problems == ()


def test_opencode_stream() -> None:
    got = AGENTS["opencode"].read_events(events("opencode", "events-hermes-call.jsonl"))
    assert [(r.name, r.ok, r.exit_code) for r in got.tool_runs] == [("bash", True, 0)]
    assert got.tool_runs[0].call_id
    assert got.final_text == FINAL_TEXT


def test_a_failed_claude_run_is_a_problem() -> None:
    line = ('{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400 bad"}\n')
    got = AGENTS["claude-code"].read_events(line)
    assert got.final_text is None and "API Error: 400" in got.problems[0]


def _request(body: dict[str, object], status: int = 200) -> RecordedRequest:
    return RecordedRequest("POST", "/v1/chat/completions", "", {}, body, None, 0.0, RecordedAnswer(status, {}, b"", 0.1))


TOOLS = [{"type": "function", "function": {"name": "bash"}}]
TURN1 = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS}
TURN2 = {"messages": [{"role": "user", "content": "go"},
                      {"role": "assistant", "tool_calls": [{"id": "call_9", "type": "function",
                                                            "function": {"name": "bash", "arguments": "{}"}}]},
                      {"role": "tool", "tool_call_id": "call_9", "content": ""}], "tools": TOOLS}
GOOD = Facts("bash", OPENAI, 0, 60.0, Transcript((ToolRun("bash", "call_9", True, 0),), FINAL_TEXT),
             "ok", "ok", FINAL_TEXT, [_request({"messages": []}), _request(TURN1), _request(TURN2)])


def test_judge_passes_a_good_run() -> None:
    assert judge(GOOD) == []


def test_judge_names_step_and_rule_of_a_broken_run() -> None:
    broken_turn2 = {**TURN2, "messages": [*TURN2["messages"][:2], {"role": "tool", "tool_call_id": "call_X"}]}
    broken = dataclasses.replace(GOOD, exit_code=None, file_content=None,
                                 transcript=Transcript((), "I will write the file now. <tool_call>"),
                                 requests=[_request(TURN1), _request(broken_turn2)])
    failures = {(f.rule, f.step) for f in judge(broken)}
    assert failures == {("tool-ran", 1), ("file-written", 1), ("result-id", 2), ("agent-exit", 2), ("final-text", 2)}
    text = str(judge(broken)[0])
    assert text.startswith("step 1, rule tool-ran")


def test_judge_sees_the_result_returned_under_another_id() -> None:
    moved = dataclasses.replace(GOOD, transcript=Transcript((ToolRun("bash", "call_1", True, 0),), FINAL_TEXT))
    assert [(f.rule, f.step) for f in judge(moved)] == [("result-id", 2)]


def test_judge_reports_a_refused_request() -> None:
    refused = dataclasses.replace(GOOD, requests=[*GOOD.requests, _request(TURN2, 400)])
    assert ("steps", 2) in {(f.rule, f.step) for f in judge(refused)}


def test_every_agent_plays_every_pair_it_speaks_in_each_format() -> None:
    cases = all_cases(list(AGENTS.values()))
    pairs = {(c.agent.id, c.pair) for c in cases}
    assert pairs == {("claude-code", "anthropic->openai"), ("claude-code", "anthropic->anthropic"),
                     ("claude-code", "anthropic->responses"), ("codex", "responses->responses"),
                     ("codex", "responses->openai"), ("opencode", "openai->openai"),
                     ("opencode", "openai->anthropic"), ("opencode", "openai->responses")}
    assert len(cases) == len(pairs) * len(DEFAULT_FORMATS)
    case = build_case(AGENTS["codex"], OPENAI, "qwen-coder")
    assert "<function=exec_command>" in case.scenario.backend.text
    assert case.scenario.raw["steps"][0]["frames"] == [FINAL_TEXT]


def test_an_agent_that_cannot_be_installed_is_skipped(tmp_path: Path) -> None:
    installed = install(pins()["codex"], tmp_path, allow_download=False)
    assert installed.binary is None and "not installed" in installed.reason
    outcome = play(build_case(AGENTS["codex"], RESPONSES, "native"), installed, Target(), cache=tmp_path)
    assert outcome.status == "skip"
    assert "skip" in table([outcome])


def test_missing_npm_skips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    installed = install(pins()["opencode"], tmp_path / "cache")
    assert installed == Installed(None, installed.reason) and "npm is not installed" in installed.reason


def test_command_skips_without_failing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["agents", "--agent", "codex", "--format", "native", "--cache",
                                       str(tmp_path), "--no-install"])
    assert result.exit_code == 0, result.output
    assert "skip" in result.output and "0 failed, 2 skipped" in result.output


def test_outcome_report_names_agent_pair_format_and_tail() -> None:
    case = build_case(AGENTS["opencode"], ANTHROPIC, "hermes")
    failure = judge(dataclasses.replace(GOOD, exit_code=3))[0]
    text = Outcome(case, "FAIL", (failure,), tail="last line").report()
    assert "opencode (openai->anthropic, format hermes)" in text and "agent-exit" in text and "last line" in text
