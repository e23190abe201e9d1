"""The ollama dialect end to end: the mock's Ollama route over real sockets (NDJSON lines, a
call whole before a separate done line, ``stream: false``, Ollama's refusals and error shape),
a gateway's request read as the neutral request, every portable library scenario served as
NDJSON, and the reference proxy's reading of Ollama's lines however the bytes are cut."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.dialects import OLLAMA, NotPortable
from harness.core.dialects.script import serve_as
from harness.core.replay.planned import wire_events
from harness.core.nonce import NONCE_HEADER
from harness.core.replay import ollama as ollama_replay
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.readers.ollama_events import read_ollama_lines, read_ollama_whole
from reference_proxy.upstreams.ollama import chat_to_ollama, ollama_completion
from reference_proxy.upstreams.ollama_stream import LineReader, OllamaAsChunks
from support.mock_server import Mock, shared  # noqa: F401  (the fixture)
from support.upstream_dialect import TOOLS, dialect_scenario, gateway_chat, portable, proxy_chunks

CHAT = gateway_chat("llama3.2", [{"type": "text", "text": "Read a.txt"}], temperature=0.3, max_tokens=50)


def scenario(frames: list[Any], **backend: Any) -> Scenario:
    return dialect_scenario(OLLAMA, frames, **backend)


FRAMES: list[Any] = ["Hel", "lo ✓", {"tool_use": {"name": "Read", "input_json": ['{"file_', 'path": "a"}']}}]


def test_the_mock_streams_ndjson_with_the_call_before_a_separate_done_line(shared: Mock) -> None:
    url, control, _ = shared
    nonce = control.arm(scenario(FRAMES, usage={"prompt_tokens": 3, "completion_tokens": 5}))
    body = chat_to_ollama(CHAT, True)
    response = httpx.post(url + "/api/chat", json=body, headers={NONCE_HEADER: nonce})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == OLLAMA.media_type
    lines = [json.loads(line) for line in response.content.splitlines()]
    assert [line["done"] for line in lines] == [False, False, False, True]
    call = lines[2]["message"]["tool_calls"][0]
    assert call["function"] == {"index": 0, "name": "Read", "arguments": {"file_path": "a"}}
    assert call["id"].startswith("call_") and len(call["id"]) == 13
    assert lines[3]["done_reason"] == "stop" and lines[3]["eval_count"] == 5 and lines[3]["prompt_eval_count"] == 3
    assert "tool_calls" not in lines[3]["message"]
    answer = read_ollama_lines(response.content)
    assert answer.content == "Hello ✓" and answer.finish_reason == "stop"
    assert [(c.name, json.loads(c.arguments)) for c in answer.tool_calls] == [("Read", {"file_path": "a"})]
    recorded = control.recorded(nonce)[0].body
    assert recorded == body


def test_the_mock_answers_one_object_for_stream_false_and_streams_by_default(shared: Mock) -> None:
    url, control, _ = shared
    nonce = control.arm(scenario(FRAMES))
    whole = httpx.post(url + "/api/chat", json=chat_to_ollama(CHAT, False), headers={NONCE_HEADER: nonce})
    assert whole.headers["content-type"] == "application/json"
    body = whole.json()
    assert body["done"] is True and body["message"]["content"] == "Hello ✓"
    assert body["message"]["tool_calls"][0]["function"]["arguments"] == {"file_path": "a"}
    assert read_ollama_whole(body).tool_calls[0].name == "Read"
    completion = ollama_completion(body, "m")
    assert completion["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(completion["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {
        "file_path": "a"}
    unsaid = {k: v for k, v in chat_to_ollama(CHAT, True).items() if k != "stream"}
    streamed = httpx.post(url + "/api/chat", json=unsaid, headers={NONCE_HEADER: nonce})
    assert streamed.headers["content-type"] == OLLAMA.media_type


@pytest.mark.parametrize(("change", "said"), [
    (lambda b: b.pop("model"), "model is required"),
    (lambda b: b["messages"][2]["tool_calls"][0]["function"].update(arguments='{"file_path": "a.txt"}'),
     "cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments"),
    (lambda b: b["messages"][1].update(content=[{"type": "text", "text": "x"}]),
     "cannot unmarshal array into Go struct field ChatRequest.messages.content of type string"),
    (lambda b: b.update(think="extreme"), "invalid think value"),
    (lambda b: b["messages"][1].update(role="function"), "invalid role"),
], ids=["no-model", "string-arguments", "content-parts", "think", "role"])
def test_the_mock_refuses_what_ollama_refuses_in_its_error_shape(shared: Mock, change: Any,
                                                                 said: str) -> None:
    url, control, _ = shared
    body = chat_to_ollama(CHAT, True)
    change(body)
    response = httpx.post(url + "/api/chat", json=body, headers={NONCE_HEADER: control.arm(scenario(["hi"]))})
    assert response.status_code == 400
    assert list(response.json()) == ["error"] and said in response.json()["error"]


def test_a_gateway_request_reads_as_the_neutral_request() -> None:
    body = chat_to_ollama(CHAT, True)
    assert body["options"] == {"temperature": 0.3, "num_predict": 50} and body["stream"] is True
    assert body["messages"][1]["content"] == "Read a.txt"
    assert body["messages"][3] == {"role": "tool", "content": "hello", "tool_name": "Read", "tool_call_id": "call_1"}
    read = OLLAMA.requests.read(body)
    assert read.system == ("Be brief.",)
    assert [t.role for t in read.turns] == ["user", "assistant", "user"]
    assert read.calls[0].id == "call_1" and read.calls[0].arguments == {"file_path": "a.txt"}
    assert read.results[0].call_id == "call_1" and read.results[0].text == "hello"
    assert [t.name for t in read.tools] == ["Read"] and read.stream


def test_an_error_body_is_ollamas_shape_and_no_other_dialects() -> None:
    assert OLLAMA.errors.write("model 'x' not found", "not_found") == {"error": "model 'x' not found"}
    assert OLLAMA.errors.read({"error": "boom"}) == "boom"
    assert OLLAMA.errors.read({"error": {"message": "boom", "type": "x"}}) is None


def test_a_call_whose_arguments_are_not_one_object_is_not_portable() -> None:
    broken = parse_scenario({
        "id": "broken-args", "title": "t", "source": "s",
        "backend": {"dialect": "openai", "frames": [{"tool_call": {"index": 0, "id": "c", "type": "function", "name": "Read",
                                              "arguments": '{"file_path": "a'}}], "finish_reason": "tool_calls"},
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": TOOLS}},
        "expect": {},
    })
    with pytest.raises(NotPortable, match="not JSON"):
        serve_as(broken, OLLAMA)


PORTABLE = portable(OLLAMA)


def test_every_portable_scenario_is_served_as_ndjson_lines() -> None:
    assert len(PORTABLE) > 600
    for s in PORTABLE:
        data = b"".join(e.data for e in wire_events(s))
        if any(frame.__class__.__name__ == "RawFrame" for frame in s.backend.frames) or s.backend.fault is not None:
            continue
        lines = [json.loads(line) for line in data.splitlines()]
        assert lines[-1]["done"] is True and all(line["done"] is False for line in lines[:-1]), s.id


def _chunks(data: bytes, cuts: list[int]) -> list[Any]:
    lines = LineReader()
    return proxy_chunks(data, cuts, lambda piece: [line.decode("utf-8") for line in lines.feed(piece)],
                        OllamaAsChunks("m"))


LINE = '{{"model":"m","created_at":"t","message":{{"role":"assistant","content":"","tool_calls":[{calls}]}},"done":false}}'
CALL = '{{"id":"{ident}","function":{{"index":0,"name":"Read","arguments":{{"file_path":"{path}"}}}}}}'
HABITS = scenario([
    {"raw": '{"model":"m","created_at":"t","message":{"role":"assistant","content":"","thinking":"hm"},"done":false}\n'},
    "Looking ✓. ",
    {"raw": LINE.format(calls=CALL.format(ident="call_a", path="a")) + "\n"},
    {"raw": LINE.format(calls=CALL.format(ident="call_b", path="b") + "," + CALL.format(ident="call_c", path="c"))
     + "\n"},
])
DATA = b"".join(e.data for e in ollama_replay.planned_events(HABITS.backend, {}))


def test_the_proxy_numbers_every_call_and_finishes_with_tool_calls() -> None:
    chunks = _chunks(DATA, [])
    calls = [c for x in chunks if isinstance(x, tuple) for c in x[0].get("tool_calls", [])]
    assert [(c["index"], c["id"], c["function"]["arguments"]) for c in calls] == [
        (0, "call_a", '{"file_path": "a"}'), (1, "call_b", '{"file_path": "b"}'), (2, "call_c", '{"file_path": "c"}')]
    assert "".join(x[0].get("content", "") for x in chunks if isinstance(x, tuple)) == "Looking ✓. "
    assert [x[0].get("reasoning_content") for x in chunks if isinstance(x, tuple) and "reasoning_content" in x[0]] == [
        "hm"]
    assert chunks[-2][1] == "tool_calls" and chunks[-1] == "[DONE]"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(DATA) - 1), max_size=40))
def test_the_proxy_reads_the_same_answer_however_the_bytes_are_cut(cuts: list[int]) -> None:
    def strip(items: list[Any]) -> list[Any]:
        return [json.dumps(d, sort_keys=True) if isinstance(d, dict) and "tool_calls" not in d else
                [c["function"]["arguments"] for c in d["tool_calls"]] if isinstance(d, dict) else d
                for d in (x[0] if isinstance(x, tuple) else x for x in items)]
    assert strip(_chunks(DATA, cuts)) == strip(_chunks(DATA, []))


def test_a_result_named_only_by_its_tool_answers_the_first_unanswered_call_of_that_tool() -> None:
    body = {"model": "m", "messages": [
        {"role": "user", "content": "Read a and b"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "function": {"name": "Read", "arguments": {"file_path": "a"}}},
            {"id": "c2", "function": {"name": "Read", "arguments": {"file_path": "b"}}}]},
        {"role": "tool", "content": "A", "tool_name": "Read"},
        {"role": "tool", "content": "B", "tool_name": "Read"}]}
    assert [(r.call_id, r.text) for r in OLLAMA.requests.read(body).results] == [("c1", "A"), ("c2", "B")]
