"""Multi-step scenarios: the step a request gets is read from its conversation, in every
dialect, so retries and side requests never take another step; a request past the last
step is refused naming the nearest one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.core.dialects import DIALECTS
from harness.core.errors import ScenarioError
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.core.scenario.steps import SIDE_TEXT, choose_step, step_scenarios, tool_results
from harness.run.servers import serve
from mock_backends.app import create_app
from mock_backends.control import MockControl

FIXTURES = Path(__file__).parents[1] / "fixtures" / "agents"


def stepped(dialect: str) -> Scenario:
    frames: list[Any]
    if dialect == "openai":
        frames = [{"tool_call": {"index": 0, "id": "call_1", "type": "function", "name": "bash",
                                 "arguments": '{"command": "true"}'}}]
    else:
        frames = [{"tool_use": {"name": "bash", "id": "call_1", "input_json": ['{"command": "true"}']}}]
    return parse_scenario({
        "id": f"steps-{dialect}", "title": "two steps", "source": "test",
        "backend": {"dialect": dialect, "frames": frames},
        "steps": [{"frames": ["all done"]}],
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "go"}],
                               "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}]}},
        "expect": {},
    })


TOOLS: dict[str, Any] = {"tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}]}
TURN1 = {
    "openai": {"model": "m", "messages": [{"role": "user", "content": "go"}], **TOOLS},
    "anthropic": {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "go"}],
                  "tools": [{"name": "bash", "input_schema": {"type": "object"}}]},
    "responses": {"model": "m", "input": [{"role": "user", "content": "go"}],
                  "tools": [{"type": "function", "name": "bash", "parameters": {}}]},
}


def turn2(dialect: str) -> dict[str, Any]:
    body = copy.deepcopy(TURN1[dialect])
    if dialect == "openai":
        body["messages"] += [{"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
    elif dialect == "anthropic":
        body["messages"] += [{"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "bash",
                                                                "input": {}}]},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                           "content": "ok"}]}]
    else:
        body["input"] += [{"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{}"},
                          {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]
    return body


def past_steps(dialect: str) -> dict[str, Any]:
    body = turn2(dialect)
    again = turn2(dialect)
    key = "input" if dialect == "responses" else "messages"
    body[key] += again[key][1:]
    return body


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "responses"])
def test_the_step_is_the_number_of_tool_results_plus_one(dialect: str) -> None:
    scenario = stepped(dialect)
    assert choose_step(scenario, DIALECTS[dialect], TURN1[dialect]).step == 1
    assert choose_step(scenario, DIALECTS[dialect], turn2(dialect)).step == 2
    assert choose_step(scenario, DIALECTS[dialect], turn2(dialect)).step == 2  # a retry gets the same step
    side = choose_step(scenario, DIALECTS[dialect], {**TURN1[dialect], "tools": []})
    assert side.side and side.step is None
    missed = choose_step(scenario, DIALECTS[dialect], past_steps(dialect))
    assert missed.step is None and missed.problem is not None and "nearest is step 2" in missed.problem


def test_step_scenarios_carry_each_steps_frames() -> None:
    first, second = step_scenarios(stepped("openai"))
    assert second.backend.text == "all done" and second.backend.finish_reason == "stop"
    assert first.backend.frames != second.backend.frames


def test_a_step_must_have_frames() -> None:
    data = stepped("openai").to_mapping()
    data["steps"] = [{"finish_reason": "stop"}]
    with pytest.raises(ScenarioError, match="frames"):
        parse_scenario(data)


@pytest.mark.parametrize(("agent", "request_file", "dialect", "results"), [
    ("claude-code-2.1.197", "turn1", "anthropic", 0), ("claude-code-2.1.197", "turn2", "anthropic", 1),
    ("codex-0.171.0", "turn1", "responses", 0), ("codex-0.171.0", "turn2", "responses", 1),
    ("codex-0.171.0", "codemode-turn2", "responses", 1),
    ("opencode-1.18.33", "turn1", "openai", 0), ("opencode-1.18.33", "turn2", "openai", 1),
])
def test_captured_agent_requests_count_their_tool_results(agent: str, request_file: str, dialect: str,
                                                          results: int) -> None:
    body = json.loads((FIXTURES / agent / "requests" / f"{request_file}.json").read_text())["body"]
    assert tool_results(DIALECTS[dialect], body) == results
    assert choose_step(stepped(dialect), DIALECTS[dialect], body).step == results + 1


@pytest.mark.parametrize(("agent", "dialect"), [("claude-code-2.1.197", "anthropic"), ("opencode-1.18.33", "openai")])
def test_captured_title_requests_are_side_requests(agent: str, dialect: str) -> None:
    body = json.loads((FIXTURES / agent / "requests" / "side-title.json").read_text())["body"]
    assert choose_step(stepped(dialect), DIALECTS[dialect], body).side


ENDPOINT = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "responses"])
def test_the_mock_answers_each_step_side_requests_and_probes(dialect: str) -> None:
    with serve(create_app()) as server, MockControl(server.url) as control, httpx.Client(timeout=10) as http:
        nonce = control.arm(stepped(dialect))
        url = server.url + ENDPOINT[dialect]
        assert http.head(server.url + "/").status_code == 200
        second = http.post(url, json=turn2(dialect))  # the step comes from the conversation, not the order
        first = http.post(url, json=TURN1[dialect])
        side = http.post(url, json={k: v for k, v in TURN1[dialect].items() if k != "tools"})
        refused = http.post(url, json=past_steps(dialect))
        assert (first.status_code, second.status_code, side.status_code) == (200, 200, 200)
        assert "call_1" in first.text and "all done" not in first.text
        assert "all done" in second.text and "call_1" not in second.text
        assert SIDE_TEXT in side.text
        assert refused.status_code == 400
        error = refused.json()["error"]
        assert "nearest is step 2" in error["message"]
        assert error["type"] == "invalid_request_error"
        recorded = control.recorded(nonce)
        assert [r.method for r in recorded] == ["HEAD", "POST", "POST", "POST", "POST"]
