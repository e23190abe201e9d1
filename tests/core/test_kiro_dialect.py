"""The kiro dialect end to end: the mock's Kiro route over real sockets (event-stream frames
with correct CRCs, ``POST /`` with ``X-Amz-Target``, Kiro's refusals), a request read as
the neutral request, every portable library scenario served in Kiro, and the reference
proxy's reading of Kiro's stream however its bytes are cut."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.dialects import KIRO
from harness.core.dialects.frames import ContentFrame, EventFrame, Frame, ToolUseFrame
from harness.core.eventstream import Decoder
from harness.core.replay.planned import wire_events
from harness.core.nonce import NONCE_HEADER
from harness.core.replay import kiro as kiro_replay
from harness.core.scenario.model import Scenario
from harness.judge.readers.kiro_events import read_kiro_stream
from reference_proxy.upstreams.kiro import chat_to_kiro
from reference_proxy.upstreams.kiro_stream import FrameReader, KiroAsChunks
from support.mock_server import Mock, shared  # noqa: F401  (the fixture)
from support.upstream_dialect import TOOLS, dialect_scenario, gateway_chat, portable, proxy_chunks

CHAT = gateway_chat("claude-sonnet-4.5")


def scenario(frames: list[Any], **backend: Any) -> Scenario:
    return dialect_scenario(KIRO, frames, **backend)


FRAMES: list[Any] = ["Hel", "lo ✓", {"tool_use": {"id": "tooluse_a", "name": "Read", "input_json": ['{"file_', 'path": "a"}']}}]


@pytest.mark.parametrize("where", [("/v1/generateAssistantResponse", {}), ("/", {"x-amz-target": KIRO.root_target})],
                         ids=["endpoint", "x-amz-target"])
def test_the_mock_answers_event_stream_frames(shared: Mock, where: tuple[str, dict[str, str]]) -> None:
    url, control, _ = shared
    nonce = control.arm(scenario(FRAMES, usage={"inputTokens": 3, "outputTokens": 5}))
    path, headers = where
    response = httpx.post(url + path, json=chat_to_kiro(CHAT), headers={NONCE_HEADER: nonce, **headers})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == KIRO.media_type
    decoder = Decoder()
    messages = decoder.feed(response.content)
    assert decoder.failed is None
    assert [m.event_type for m in messages] == ["assistantResponseEvent", "assistantResponseEvent", "toolUseEvent",
                                                "toolUseEvent", "toolUseEvent", "toolUseEvent", "contextUsageEvent",
                                                "metadataEvent"]
    answer = read_kiro_stream(response.content)
    assert answer.content == "Hello ✓" and answer.finish_reason == "end_turn" and answer.usage == {
        "inputTokens": 3, "outputTokens": 5}
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("tooluse_a", "Read", '{"file_path": "a"}')]


def test_the_mock_refuses_a_result_that_answers_no_call(shared: Mock) -> None:
    url, control, _ = shared
    body = chat_to_kiro({**CHAT, "messages": [*CHAT["messages"][:4], {"role": "tool", "tool_call_id": "call_9",
                                                                       "content": "x"}]})
    response = httpx.post(url + "/generateAssistantResponse", json=body,
                          headers={NONCE_HEADER: control.arm(scenario(["hi"]))})
    assert response.status_code == 400
    assert response.json()["__type"].endswith("#ValidationException")
    assert "Improperly formed request." in response.json()["message"]


def test_a_gateway_request_reads_as_the_neutral_request() -> None:
    read = KIRO.requests.read(chat_to_kiro(CHAT))
    assert [t.role for t in read.turns] == ["user", "assistant", "user", "assistant", "user"]
    assert "Be brief." in read.turns[0].text  # no system role: the first user turn carries it
    assert read.calls[0].id == "call_1" and read.calls[0].arguments == {"file_path": "a.txt"}
    assert read.results[0].call_id == "call_1" and read.results[0].text == "hello"
    assert [t.name for t in read.tools] == ["Read"] and read.tools[0].parameters == TOOLS[0]["function"]["parameters"]
    assert json.loads(json.dumps(chat_to_kiro(CHAT)))["conversationState"]["chatTriggerType"] == "MANUAL"


PORTABLE = portable(KIRO)


def test_every_portable_scenario_is_served_as_readable_frames() -> None:
    assert len(PORTABLE) > 300
    for s in PORTABLE:
        data = b"".join(e.data for e in wire_events(s))
        decoder = Decoder()
        messages = decoder.feed(data)
        decoder.finish()
        raw = any(frame.__class__.__name__ == "RawFrame" for frame in s.backend.frames)
        dropped = s.backend.fault is not None and s.backend.fault.kind == "drop"
        damaged = any(getattr(frame, "corrupt", None) for frame in s.backend.frames)
        assert raw or dropped or damaged or decoder.failed is None, s.id
        assert raw or damaged or s.backend.fault is not None or messages[-1].event_type == "metadataEvent", s.id


def _chunks(data: bytes, cuts: list[int]) -> list[Any]:
    frames = FrameReader()
    return proxy_chunks(data, cuts, lambda piece: [json.dumps({"event": headers[":event-type"],
                                                               "payload": json.loads(payload)})
                                                   for headers, payload in frames.feed(piece)], KiroAsChunks("m"))


HABITS = scenario([
    "Looking. ",
    {"event": "toolUseEvent", "payload": {"name": "Read", "input": '{"file_path": '}},
    {"event": "toolUseEvent", "payload": {"name": "Read", "toolUseId": "tooluse_b", "input": '"a.txt"}'}},
    {"event": "toolUseEvent", "payload": {"name": "Read", "toolUseId": "tooluse_b", "stop": True}},
    {"event": "toolUseEvent", "payload": {"name": "Read", "toolUseId": "tooluse_c", "input": {}}},
    {"event": "toolUseEvent", "payload": {"name": "Read", "toolUseId": "tooluse_c", "input": '{"file_path": "b"}'}},
    {"event": "toolUseEvent", "payload": {"name": "Read", "toolUseId": "tooluse_c", "stop": True}},
], finish_reason="tool_use")
_REPLAY = kiro_replay.prepare(HABITS.backend)
DATA = b"".join(e.data for e in kiro_replay.stream_events(_REPLAY, kiro_replay.plan_reply(_REPLAY, {})))


def test_the_proxy_reads_late_ids_and_an_empty_object_ahead_of_the_fragments() -> None:
    calls = [x[0]["tool_calls"][0] for x in _chunks(DATA, []) if isinstance(x, tuple) and "tool_calls" in x[0]]
    assert [(c["id"], c["function"]["arguments"]) for c in calls] == [
        ("tooluse_b", '{"file_path": "a.txt"}'), ("tooluse_c", '{"file_path": "b"}')]
    assert _chunks(DATA, [])[-2][1] == "tool_calls"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(DATA) - 1), max_size=40))
def test_the_proxy_reads_the_same_answer_however_the_bytes_are_cut(cuts: list[int]) -> None:
    def strip(items: list[Any]) -> list[Any]:
        return [(json.dumps(d, sort_keys=True), f) if isinstance(d, dict) and "tool_calls" not in d else
                (d["tool_calls"][0]["function"]["arguments"], f) if isinstance(d, dict) else d
                for d, f in (x if isinstance(x, tuple) else (x, None) for x in items)]
    assert strip(_chunks(DATA, cuts)) == strip(_chunks(DATA, []))


def _use(**payload: Any) -> EventFrame:
    return EventFrame("toolUseEvent", payload)


@pytest.mark.parametrize(("frames", "expected"), [
    pytest.param([_use(name="Read", toolUseId="a"), _use(name="Read", toolUseId="a", input='{"x": '),
                  _use(name="Read", toolUseId="a", input="1}"), _use(name="Read", toolUseId="a", stop=True)],
                 ('{"x": 1}',), id="one-call"),
    pytest.param([_use(name="Read"), _use(name="Read", input='{"x": '), _use(name="Read", toolUseId="a", input="1}")],
                 ('{"x": 1}',), id="late-id-joins-the-open-call"),
    pytest.param([_use(name="A", toolUseId="a", input="{}"), _use(name="B", toolUseId="b", input='{"y": 2}')],
                 ("{}", '{"y": 2}'), id="another-id-opens-another-call"),
    pytest.param([_use(name="A", toolUseId="a", input="{}", stop=True), _use(name="A", input="{}")],
                 ("{}", "{}"), id="stop-closes-the-call"),
    pytest.param([_use(name="A", toolUseId="a", input={"nested": 1}), ContentFrame("text")], ("",),
                 id="an-input-that-is-no-text-adds-none"),
    pytest.param([ToolUseFrame("Read", "toolu_1", ('{"x": ', "1}"))], ('{"x": 1}',), id="whole-tool-use-frames"),
])
def test_a_kiro_scripts_call_arguments_are_its_inputs_joined(frames: list[Frame], expected: tuple[str, ...]) -> None:
    """What the judge takes as the backend's own arguments (a gateway may pass a cut input on unchanged)."""
    assert KIRO.calls.arguments(frames) == expected
