"""The recorder's pure parts: what a request is matched by, how an answer is kept, what its shape
is, and the events cut out of bytes as they arrive."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from harness.capture.drift import drifts, event_shape, shape_diff
from harness.capture.recorded import recorded_scenario, text_formats
from harness.capture.recording import (
    EventSplitter,
    build_recording,
    canonical_request,
    nearest,
    request_diff,
    request_key,
)
from harness.cli.main import main
from harness.core.dialects import OPENAI
from harness.core.dialects.responses_request import chat_to_responses, responses_to_chat
from harness.core.nonce import place_nonce
from harness.run.recorder import CaptureStore, upstream_url

BASE: dict[str, Any] = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("label", "other"), [
    ("a harness nonce", place_nonce(BASE, "tcc-" + "0" * 32)),
    ("another end user", {**BASE, "user": "someone-else"}),
    ("request metadata", {**BASE, "metadata": {"session": "abc"}}),
    ("other call ids, same order", {**BASE, "messages": [
        {"role": "assistant", "tool_calls": [{"id": "call_x9", "type": "function",
                                              "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_x9", "content": "ok"}]}),
])
def test_volatile_fields_do_not_change_what_a_request_asks(label: str, other: dict[str, Any]) -> None:
    if "tool_call_id" in json.dumps(other):
        same = json.loads(json.dumps(other).replace("call_x9", "call_zz"))
        assert request_key(same) == request_key(other), label
    else:
        assert request_key(other) == request_key(BASE), label


@pytest.mark.parametrize(("change", "lines"), [
    ({"model": "n"}, ['- /model: "m"', '+ /model: "n"']),
    ({"temperature": 0.2}, ["+ /temperature: 0.2"]),
    ({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]},
     ['- /messages/0/role: "user"', '+ /messages/0/role: "system"']),
])
def test_a_request_diff_names_each_changed_pointer(change: dict[str, Any], lines: list[str]) -> None:
    diff = request_diff(BASE, {**BASE, **change})
    assert all(line in diff for line in lines), diff


def test_nearest_is_the_recording_that_differs_least() -> None:
    def made(body: dict[str, Any]) -> Any:
        return build_recording(dialect=OPENAI, path="/v1/chat/completions", request=body, request_headers={},
                               status=200, response_headers={}, events=None, body=b"{}", server="s", version="1",
                               recorded_on=None)
    far = made({**BASE, "model": "x", "messages": [{"role": "user", "content": "other"}]})
    near = made({**BASE, "temperature": 1})
    found = nearest({**BASE, "temperature": 0}, "/v1/chat/completions", [("far.json", far), ("near.json", near)])
    assert found is not None and found.name == "near.json"
    assert found.diff == ("- /temperature: 1", "+ /temperature: 0")
    assert nearest(BASE, "/v1/messages", [("far.json", far)]) is None


@pytest.mark.parametrize("pieces", [
    [b"data: {\"a\":1}\n\ndata: {\"a\":2}\n\n"],
    [b"data: {\"a\"", b":1}\n", b"\ndata: {\"a\":2}\n\n"],
    [b"data: {\"a\":1}\r\n\r\n", b"data: {\"a\":2}\r\n\r\n"],
])
def test_events_are_cut_where_they_end_however_the_bytes_arrive(pieces: list[bytes]) -> None:
    splitter = EventSplitter()
    events = [e for piece in pieces for e in splitter.feed(piece)]
    assert [json.loads(e.decode().strip().removeprefix("data:")) for e in events] == [{"a": 1}, {"a": 2}]
    assert b"".join(events) == b"".join(pieces) and splitter.rest() == b""


def test_ids_and_clocks_are_canonical_and_secrets_scrubbed() -> None:
    chunk = {"id": "chatcmpl-9f8e7d", "created": 1731000000, "system_fingerprint": "fp_44709d6fcb",
             "choices": [{"index": 0, "delta": {"content": "the key is sk-abcdefghijklmnop1234"}}]}
    kept = build_recording(dialect=OPENAI, path="/v1/chat/completions",
                           request={**BASE, "api_key": "hunter2hunter2"},
                           request_headers={"Authorization": "Bearer sk-live-secret-000000", "User-Agent": "x"},
                           status=200, response_headers={"Content-Type": "text/event-stream"},
                           events=[(f"data: {json.dumps(chunk)}\n\n".encode(), 3.0)], body=None, server="s",
                           version="1", recorded_on=None)
    again = build_recording(dialect=OPENAI, path="/v1/chat/completions", request=BASE, request_headers={},
                            status=200, response_headers={}, body=None, server="s", version="1", recorded_on=None,
                            events=[(f"data: {json.dumps({**chunk, 'id': 'chatcmpl-other', 'created': 5})}\n\n"
                                     .encode(), 1.0)])
    text = json.dumps(kept.to_json())
    assert "sk-live-secret" not in text and "hunter2hunter2" not in text and "sk-abcdefghijklmnop1234" not in text
    assert kept.events[0].text == again.events[0].text  # a re-run matches
    assert "authorization" not in kept.request_headers and kept.request_headers["user-agent"] == "x"


def _stream(*chunks: dict[str, Any]) -> list[tuple[bytes, float]]:
    return [(f"data: {json.dumps(c)}\n\n".encode(), 1.0) for c in chunks] + [(b"data: [DONE]\n\n", 1.0)]


def _chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **more}


def _recording(events: list[tuple[bytes, float]], version: str = "1") -> Any:
    return build_recording(dialect=OPENAI, path="/v1/chat/completions", request=BASE, request_headers={},
                           status=200, response_headers={}, events=events, body=None, server="vllm",
                           version=version, recorded_on=None)


SHORT = _stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hi"}), _chunk({}, "stop"))
LONGER = _stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hello"}),
                 _chunk({"content": " there, friend"}), _chunk({}, "stop"))


@pytest.mark.parametrize(("label", "after", "drifted"), [
    ("other text, more chunks of the same shape", LONGER, False),
    ("usage in the finish chunk", _stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hi"}),
                                           _chunk({}, "stop", usage={"prompt_tokens": 1})), True),
    ("the finish in the last content chunk", _stream(_chunk({"role": "assistant", "content": ""}),
                                                     _chunk({"content": "Hi"}, "stop")), True),
    ("a new chunk field", _stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hi"}),
                                  _chunk({}, "stop", service_tier="default")), True),
    ("no [DONE]", _stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": "Hi"}),
                          _chunk({}, "stop"))[:-1], True),
])
def test_shape_drift_is_judged_by_shape_not_text(label: str, after: list[tuple[bytes, float]], drifted: bool) -> None:
    assert bool(shape_diff(_recording(SHORT), _recording(after))) is drifted, label
    found = drifts([("a.json", _recording(SHORT, "0.10")), ("b.json", _recording(after, "0.11"))])
    assert bool(found) is drifted
    if found:
        assert found[0].versions == ("0.10", "0.11") and "vllm 0.10 -> 0.11" in found[0].describe()


def test_event_shape_keeps_kinds_and_drops_values() -> None:
    assert event_shape('event: message_start\ndata: {"type": "message_start", "n": 3}\n\n') == \
        'event: message_start {"n": "int", "type": "message_start"}'


def test_drift_command_exits_1_on_shape_drift(tmp_path: Any) -> None:
    store = CaptureStore(tmp_path)
    store.add(_recording(SHORT, "0.10"))
    store.add(_recording(LONGER, "0.10"))
    assert CliRunner().invoke(main, ["drift", str(tmp_path)]).exit_code == 0
    store.add(_recording(_stream(_chunk({"content": "Hi"}, "stop")), "0.11"))
    result = CliRunner().invoke(main, ["drift", str(tmp_path)])
    assert result.exit_code == 1 and "shape drift: vllm 0.10 -> 0.11" in result.output


def test_text_format_markup_is_named_not_derived() -> None:
    text = 'I will look.<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    assert "hermes" in text_formats(text) and text_formats("Just prose, no markup.") == []
    made = recorded_scenario(_recording(_stream(_chunk({"role": "assistant", "content": ""}), _chunk({"content": text}),
                                                _chunk({}, "stop")), "1"), capture_path="c.json")
    assert made.scenario.expect.content is None and made.scenario.expect.tool_calls == ()
    assert any("hermes" in line for line in made.not_derived) and "not derived, fill it in" in made.text


@pytest.mark.parametrize("body", [
    {"model": "m", "stream": True, "instructions": "be brief", "max_output_tokens": 50,
     "input": [{"type": "message", "role": "user", "content": "hi"},
               {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
               {"type": "function_call_output", "call_id": "call_1", "output": "ok"}],
     "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
     "tool_choice": {"type": "function", "name": "f"}},
])
def test_a_responses_request_reads_back_into_chat_words(body: dict[str, Any]) -> None:
    chat = responses_to_chat(body)
    assert chat["messages"][0] == {"role": "system", "content": "be brief"}
    again = chat_to_responses({**chat, "messages": chat["messages"][1:]})
    assert again["input"] == body["input"] and again["tools"] == body["tools"]
    assert again["tool_choice"] == body["tool_choice"] and again["max_output_tokens"] == 50


@pytest.mark.parametrize(("base", "path", "url"), [
    ("http://h:8000/v1", "/v1/chat/completions", "http://h:8000/v1/chat/completions"),
    ("http://h:8000", "/v1/messages", "http://h:8000/v1/messages"),
    ("http://h:8000/openai/v1/", "/v1/responses", "http://h:8000/openai/v1/responses"),
])
def test_upstream_url(base: str, path: str, url: str) -> None:
    assert upstream_url(base, path) == url


def test_canonical_request_leaves_what_is_asked() -> None:
    assert canonical_request({**BASE, "user": "u", "store": False}) == BASE
