"""The OpenAI Responses dialect of the mock backend, over real sockets, read by the
official ``openai`` SDK's Responses client and by httpx.

Expectations come from each scenario's frames as the Responses streaming grammar lays
them out (consecutive text frames one message item, a call an item of its own), never
from the mock's code.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from harness.core.dialects import DIALECTS, NotPortable
from harness.core.dialects.frames import ContentFrame, ToolUseFrame
from harness.core.dialects.script import serve_as
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.servers import serve
from mock_backends.app import create_app
from mock_backends.control import MockControl
from support.library import load_library
from support.sdk_http import openai_sdk

TOOLS = [{"type": "function", "name": n, "parameters": {"type": "object"}} for n in ("get_weather", "read_file")]
REQUEST = {"model": "m", "input": [{"role": "user", "content": "hi"}], "tools": TOOLS}


def scenario(frames: list[Any], **backend: Any) -> Scenario:
    return parse_scenario({
        "id": "responses-mock", "title": "t", "source": "synthetic",
        "backend": {"dialect": "responses", "frames": frames, **backend},
        "client": {"profile": "anthropic", "request": {"model": "m", "max_tokens": 9, "messages": [
            {"role": "user", "content": "hi"}], "tools": [{"name": n, "input_schema": {"type": "object"}}
                                                          for n in ("get_weather", "read_file")]}},
        "expect": {},
    })


CASES: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "text": (["Hel", "lo ✓", ""], {"usage": {"input_tokens": 4, "output_tokens": 2}}),
    "text-then-calls": (
        ["Let me look. ",
         {"tool_use": {"id": "call_a", "name": "get_weather", "input_json": ['{"city": ', '"Paris"}']}},
         {"tool_use": {"name": "read_file", "input_json": ['{"path": "ä.txt"}']}}],
        {"finish_reason": "function_calls"},
    ),
    "call-then-text": ([{"tool_use": {"name": "read_file", "input_json": []}}, "after", " it"],
                       {"finish_reason": "function_calls"}),
    "no-frames": ([], {}),
    "length": (["cut"], {"finish_reason": "max_output_tokens"}),
}


def expected_output(s: Scenario) -> list[tuple[str, Any]]:
    """(``message``, text) and (``function_call``, (name, arguments)) in order."""
    out: list[tuple[str, Any]] = []
    for frame in s.backend.frames:
        if isinstance(frame, ContentFrame):
            if out and out[-1][0] == "message":
                out[-1] = ("message", out[-1][1] + frame.content)
            else:
                out.append(("message", frame.content))
        elif isinstance(frame, ToolUseFrame):
            out.append(("function_call", (frame.name, "".join(frame.input_json))))
    return out


def summary(output: list[Any]) -> list[tuple[str, Any]]:
    return [("message", "".join(p.text for p in item.content)) if item.type == "message"
            else ("function_call", (item.name, item.arguments)) for item in output]


@pytest.fixture(scope="module")
def mock() -> Iterator[tuple[str, MockControl]]:
    with serve(create_app()) as server, MockControl(server.url) as control:
        yield server.url, control


def client(url: str, nonce: str) -> openai.OpenAI:
    return openai_sdk(base_url=url + "/v1", api_key="x", default_headers={NONCE_HEADER: nonce}, max_retries=0)


@pytest.mark.parametrize("case", list(CASES))
def test_the_sdk_stream_accumulates_every_item(mock: tuple[str, MockControl], case: str) -> None:
    url, control = mock
    s = scenario(*CASES[case][:1], **CASES[case][1])
    with client(url, control.arm(s)).responses.stream(**REQUEST) as stream:  # type: ignore[call-overload]
        events = list(stream)
    types = [event.type for event in events]
    # The API ends an answer cut at max_output_tokens with response.incomplete, which the
    # SDK's get_final_response() does not take for an end: read the last event's response.
    last = "response.incomplete" if case == "length" else "response.completed"
    assert types[:2] == ["response.created", "response.in_progress"] and types[-1] == last
    final = events[-1].response
    assert summary(final.output) == expected_output(s)
    assert final.status == ("incomplete" if case == "length" else "completed")
    calls = [item for item in final.output if item.type == "function_call"]
    assert len({c.call_id for c in calls}) == len(calls) and all(c.call_id for c in calls)
    if case == "text":
        assert final.usage is not None and (final.usage.input_tokens, final.usage.output_tokens) == (4, 2)


@pytest.mark.parametrize("case", ["text-then-calls", "length"])
def test_the_sdk_reads_the_whole_response(mock: tuple[str, MockControl], case: str) -> None:
    url, control = mock
    s = scenario(*CASES[case][:1], **CASES[case][1])
    answer = client(url, control.arm(s)).responses.create(**REQUEST)  # type: ignore[call-overload]
    assert summary(answer.output) == expected_output(s)
    assert answer.object == "response" and answer.id.startswith("resp_")


def _events(text: str) -> list[dict[str, Any]]:
    out = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            payload = json.loads(lines["data"])
            assert lines["event"] == payload["type"]
            out.append(payload)
    return out


def test_events_are_numbered_and_every_item_is_closed_once(mock: tuple[str, MockControl]) -> None:
    url, control = mock
    s = scenario(*CASES["text-then-calls"][:1], **CASES["text-then-calls"][1])
    nonce = control.arm(s)
    with httpx.Client() as http:
        answer = http.post(url + "/v1/responses", json={**REQUEST, "stream": True}, headers={NONCE_HEADER: nonce})
    events = _events(answer.text)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    done = [e["output_index"] for e in events if e["type"] == "response.output_item.done"]
    assert added == done == [0, 1, 2]
    deltas = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert [(e["output_index"], e["delta"]) for e in deltas] == [(1, '{"city": '), (1, '"Paris"}'), (2, '{"path": "ä.txt"}')]
    assert events[-1]["response"]["output"] == [e["item"] for e in events if e["type"] == "response.output_item.done"]


def test_errors_are_openai_shaped_and_the_sdk_raises(mock: tuple[str, MockControl]) -> None:
    url, control = mock
    s = scenario(["x"], fault={"kind": "http_error", "status": 429})
    with pytest.raises(openai.RateLimitError):
        client(url, control.arm(s)).responses.create(**REQUEST)  # type: ignore[call-overload]
    dropped = scenario(["a", "b"], fault={"kind": "drop", "after_frame": 1})
    with pytest.raises(openai.APIError), client(url, control.arm(dropped)).responses.stream(  # type: ignore[call-overload]
            **REQUEST) as stream:
        for _ in stream:
            pass
        stream.get_final_response()


def test_an_output_answering_no_call_is_refused(mock: tuple[str, MockControl]) -> None:
    url, control = mock
    nonce = control.arm(scenario(["x"]))
    body = {**REQUEST, "input": [{"type": "function_call_output", "call_id": "call_z", "output": "ok"}]}
    with httpx.Client() as http:
        answer = http.post(url + "/v1/responses", json=body, headers={NONCE_HEADER: nonce})
    assert answer.status_code == 400 and "call_z" in answer.json()["error"]["message"]


def test_library_scenarios_with_native_calls_play_in_responses_form(mock: tuple[str, MockControl]) -> None:
    url, control = mock
    played = 0
    for s in load_library():
        if s.family not in ("plain", "anthropic"):  # where the native calls are
            continue
        try:
            served = serve_as(s, DIALECTS["responses"])
        except NotPortable:
            continue
        if not any(isinstance(f, ToolUseFrame) for f in served.backend.frames) or s.backend.fault is not None:
            continue
        with client(url, control.arm(served)).responses.stream(**REQUEST) as stream:  # type: ignore[call-overload]
            final = stream.get_final_response()
        assert summary(final.output) == expected_output(served), s.id
        played += 1
    assert played >= 5
