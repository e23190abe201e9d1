"""The dialect objects, a backend script served in the other dialect, and the reference
proxy's own translation between the two APIs (pure parts; the live pairs are played by
the plugin tests)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.core.dialects import ANTHROPIC, DIALECTS, OPENAI, RESPONSES, NotPortable
from harness.core.dialects.clients import CLIENTS, default_profiles, reads_own_api
from harness.core.dialects.frames import ContentFrame, ToolCallFrame, ToolUseFrame
from harness.core.dialects.script import serve_as, upstream_dialects
from harness.core.scenario.loading import parse_scenario
from reference_proxy.errors import ProxyError
from reference_proxy.translate.answers import completion_to_message, message_to_completion
from reference_proxy.translate.requests import chat_to_messages, messages_to_chat
from reference_proxy.translate.streams import ChunksAsEvents, EventsAsChunks
from support.library import load_library


def _scenario(dialect: str, frames: list[Any], **backend: Any) -> Any:
    tools_openai = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]
    tools_anthropic = [{"name": "read", "input_schema": {"type": "object"}}]
    client: dict[str, Any] = (
        {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools_openai}}
        if dialect == "openai" else
        {"profile": "anthropic", "request": {"model": "m", "max_tokens": 9, "tools": tools_anthropic,
                                             "messages": [{"role": "user", "content": "hi"}]}}
    )
    return parse_scenario({"id": "s", "title": "t", "source": "synthetic", "backend": {"dialect": dialect,
                           "frames": frames, **backend}, "client": client, "expect": {}})


@pytest.mark.parametrize(
    ("dialect", "status", "expected"),
    [(OPENAI, 429, "rate_limit_error"), (OPENAI, 502, "server_error"), (OPENAI, 404, "invalid_request_error"),
     (ANTHROPIC, 529, "overloaded_error"), (ANTHROPIC, 503, "api_error"), (ANTHROPIC, 422, "invalid_request_error")],
)
def test_error_type_per_status(dialect: Any, status: int, expected: str) -> None:
    assert dialect.error_type(status) == expected


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
def test_error_shape_reads_what_it_writes_and_not_the_other(dialect: Any) -> None:
    other = ANTHROPIC if dialect.errors is OPENAI.errors else OPENAI  # Responses errors are OpenAI's shape
    assert dialect.errors.read(dialect.errors.write("boom", "x")) == "boom"
    assert dialect.errors.read(other.errors.write("boom", "x")) is None


@pytest.mark.parametrize(
    ("profile", "meaningful", "own_api", "endpoint"),
    [("openai", ("openai", "xml-client"), False, "/chat/completions"),
     ("xml-client", ("openai", "xml-client"), False, "/chat/completions"),
     ("anthropic", ("anthropic",), True, "/messages"),
     ("responses", ("openai", "xml-client"), True, "/responses")],  # its cases are chat cases, rewritten
)
def test_what_a_client_profile_implies(profile: str, meaningful: tuple[str, ...], own_api: bool,
                                       endpoint: str) -> None:
    assert tuple(p.name for p in default_profiles(CLIENTS[profile])) == meaningful
    assert reads_own_api(CLIENTS[profile]) is own_api
    assert CLIENTS[profile].endpoint == endpoint


@pytest.mark.parametrize(
    ("dialect", "tool", "choices"),
    [(OPENAI, {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}},
      ["auto", "required", {"type": "function", "function": {"name": "read"}}]),
     (ANTHROPIC, {"name": "read", "input_schema": {"type": "object"}},
      [{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "read"}]),
     (RESPONSES, {"type": "function", "name": "read", "parameters": {"type": "object"}},
      ["auto", "required", {"type": "function", "name": "read"}])],
    ids=["openai", "anthropic", "responses"],
)
def test_a_dialect_writes_its_own_requests(dialect: Any, tool: dict[str, Any], choices: list[Any]) -> None:
    requests = dialect.requests
    assert requests.tool("read", {"type": "object"}) == tool
    assert requests.tool_ok(tool)
    assert [requests.tool_choice("auto"), requests.tool_choice("any"), requests.tool_choice("one", "read")] == choices


def test_a_chat_tool_is_no_messages_tool_and_back() -> None:
    chat, messages = OPENAI.requests.tool("read", {}), ANTHROPIC.requests.tool("read", {})
    assert not ANTHROPIC.requests.tool_ok(chat)
    assert not OPENAI.requests.tool_ok(messages)


def test_openai_calls_become_tool_use_blocks_and_back() -> None:
    openai = _scenario("openai", [
        "Let me look.",
        {"tool_call": {"index": 0, "id": "call_1", "type": "function", "name": "read", "arguments": ""}},
        {"tool_call": {"index": 0, "arguments": '{"pa'}},
        {"tool_call": {"index": 0, "arguments": 'th": "a"}'}},
    ], finish_reason="tool_calls", usage={"prompt_tokens": 3, "completion_tokens": 4})
    served = serve_as(openai, DIALECTS["anthropic"])
    assert served.backend.dialect.name == "anthropic" and served.backend.finish_reason == "tool_use"
    assert served.backend.frames == (ContentFrame("Let me look."), ToolUseFrame("read", "call_1", ('{"pa', 'th": "a"}')))
    assert served.backend.usage == {"input_tokens": 3, "output_tokens": 4}
    assert parse_scenario(served.to_mapping()).backend == served.backend  # what the mock is armed with
    back = serve_as(served, DIALECTS["openai"])
    assert back.backend.frames[1:] == (ToolCallFrame(0, "call_1", "function", "read", ""),
                                       ToolCallFrame(0, arguments='{"pa'), ToolCallFrame(0, arguments='th": "a"}'))
    assert serve_as(openai, DIALECTS["openai"]) is openai


def test_a_fault_moves_with_the_frames_it_follows() -> None:
    anthropic = _scenario("anthropic", ["a", {"tool_use": {"name": "read", "input_json": ["{", "}"]}}, "b"],
                          fault={"kind": "drop", "after_frame": 2})
    served = serve_as(anthropic, DIALECTS["openai"])
    assert served.backend.fault is not None and served.backend.fault.after_frame == 4  # text, call start, 2 fragments


@pytest.mark.parametrize(
    ("frames", "backend", "reason"),
    [
        ([{"raw": "data: {}\n\n"}], {}, "raw frames"),
        ([{"tool_call": {"index": 0, "name": "read", "arguments": "{"}}, {"tool_call": {"index": 0, "arguments": "}"}}],
         {"fault": {"kind": "drop", "after_frame": 1}}, "inside a native call"),
        ([{"tool_call": {"index": 0, "name": "read"}}, {"tool_call": {"index": 1, "name": "read"}},
          {"tool_call": {"index": 0, "arguments": "{}"}}], {}, "resumes"),
        (["x"], {"finish_reason": "content_filter"}, "no Anthropic Messages equivalent"),
        (["x"], {"upstream_dialects": ["openai"]}, "backend.upstream_dialects"),
    ],
)
def test_what_cannot_be_said_in_the_other_dialect_says_why(frames: list[Any], backend: dict[str, Any],
                                                           reason: str) -> None:
    with pytest.raises(NotPortable, match=reason):
        serve_as(_scenario("openai", frames, **backend), DIALECTS["anthropic"])


def test_most_of_the_library_is_portable() -> None:
    library = load_library()
    portable = [s for s in library if all(r is None for r in upstream_dialects(s).values())]
    assert len(portable) >= len(library) * 3 // 4


# --------------------------------------------------------------------------- the reference proxy's translation


def test_messages_request_as_chat_request() -> None:
    body = {"model": "m", "max_tokens": 50, "system": [{"type": "text", "text": "be brief"}], "stream": True,
            "metadata": {"user_id": "u1"}, "tool_choice": {"type": "any"},
            "tools": [{"name": "read", "description": "d", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read",
                                                            "input": {"p": 1}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}]}
    chat = messages_to_chat(body)
    assert chat["messages"] == [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "ok"}]
    assert chat["tool_choice"] == "required" and chat["user"] == "u1" and chat["max_tokens"] == 50
    assert chat["tools"] == [{"type": "function", "function": {"name": "read", "description": "d",
                                                               "parameters": {"type": "object"}}}]


def test_chat_request_as_messages_request() -> None:
    body = {"model": "m", "user": "u1", "tool_choice": "auto", "stop": "END",
            "tools": [{"type": "function", "function": {"name": "read"}}],
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "",
                          "tool_calls": [{"id": "c1", "function": {"name": "read", "arguments": '{"p": 1}'}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                         {"role": "user", "content": "and?"}]}
    out = chat_to_messages(body)
    assert out["system"] == "sys" and out["max_tokens"] > 0 and out["metadata"] == {"user_id": "u1"}
    assert out["stop_sequences"] == ["END"] and out["tool_choice"] == {"type": "auto"}
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user"]
    assert out["messages"][1]["content"] == [{"type": "tool_use", "id": "c1", "name": "read", "input": {"p": 1}}]
    assert out["messages"][2]["content"][0] == {"type": "tool_result", "tool_use_id": "c1", "content": "ok"}
    with pytest.raises(ProxyError, match="role"):
        chat_to_messages({"messages": [{"role": "narrator", "content": "x"}]})


def test_whole_answers_both_ways() -> None:
    completion = {"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": "hi",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}},
                       {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{broken"}}]}}],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3}}
    message = completion_to_message(completion, "m")
    assert message["stop_reason"] == "tool_use" and message["usage"] == {"input_tokens": 2, "output_tokens": 3}
    # arguments that are no JSON object are never replaced by {}: their text stays visible
    assert message["content"] == [{"type": "text", "text": "hi"},
                                  {"type": "tool_use", "id": "c1", "name": "read", "input": {"p": 1}},
                                  {"type": "text", "text": "{broken"}]
    again = message_to_completion(message, "m")
    assert again["choices"][0]["finish_reason"] == "tool_calls"
    assert again["choices"][0]["message"]["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"p": 1}'}


def _feed(reader: Any, payloads: list[Any]) -> list[Any]:
    out: list[Any] = []
    for p in payloads:
        out += reader.read(p if isinstance(p, str) else json.dumps(p))
    return out


def test_an_openai_stream_read_as_messages_events() -> None:
    events = _feed(ChunksAsEvents("m"), [
        {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "read",
                                                                                                  "arguments": "{"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 7}},
        "[DONE]",
    ])
    kinds = [e["type"] for e in events]
    assert kinds == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                     "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                     "message_delta", "message_stop"]
    assert kinds.count("content_block_stop") == 2  # one per block, never two for one
    assert events[4]["content_block"] == {"type": "tool_use", "id": "c1", "name": "read", "input": {}}
    assert events[-2]["delta"]["stop_reason"] == "tool_use" and events[-2]["usage"] == {"output_tokens": 7}


def test_a_messages_stream_read_as_openai_chunks() -> None:
    chunks = _feed(EventsAsChunks("m"), [
        {"type": "message_start", "message": {"model": "claude", "usage": {"input_tokens": 4}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "ls",
                                                                      "input": {}}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ])
    assert chunks[-1] == "[DONE]"
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[:-1] if c["choices"]
             and "tool_calls" in c["choices"][0]["delta"]]
    assert calls[0]["function"] == {"name": "ls", "arguments": ""} and calls[1]["function"] == {"arguments": "{}"}
    assert chunks[-3]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-2]["usage"] == {"prompt_tokens": 4, "completion_tokens": 5, "total_tokens": 9}
    error = EventsAsChunks("m").read(json.dumps({"type": "error", "error": {"type": "overloaded_error",
                                                                             "message": "busy"}}))
    assert error == [{"error": {"message": "busy", "type": "overloaded_error", "param": None, "code": None}}]
