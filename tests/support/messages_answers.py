"""Anthropic Messages answers to judge, and the scenarios they answer, built from plain
data: events and streams as the API writes them, whole ``message`` bodies, exchanges."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario

# --------------------------------------------------------------------------- scenarios

WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
}
TIME = {"name": "get_time", "description": "The time.", "input_schema": {"type": "object", "properties": {}}}


def scenario(
    expect: Mapping[str, Any],
    *,
    stream: bool = True,
    tools: Sequence[Mapping[str, Any]] = (WEATHER, TIME),
    **top: Any,
) -> Scenario:
    return parse_scenario(
        {
            "id": "case",
            "title": "anthropic rule case",
            "source": "synthetic",
            "backend": {"dialect": "anthropic", "frames": ["x"]},
            "client": {
                "profile": "anthropic",
                "request": {
                    "model": "claude-test",
                    "max_tokens": 1024,
                    "stream": stream,
                    "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
                    "tools": list(tools),
                },
            },
            "expect": dict(expect),
            **top,
        }
    )


PARIS = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
S_CALL = scenario({"tool_calls": [PARIS], "content": "", "finish_reason": "tool_use"})
S_CALL_ANY = scenario({"tool_calls": [PARIS]})
S_TEXT_CALL = scenario({"tool_calls": [PARIS], "content": "Let me check.", "finish_reason": "tool_use"})
S_TEXT = scenario({"content": "Hello world", "finish_reason": "end_turn"})
S_TWO = scenario(
    {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}],
        "content": "Let me check.",
        "finish_reason": "tool_use",
    }
)
S_TIME = scenario({"tool_calls": [{"name": "get_time", "arguments": {}}], "finish_reason": "tool_use"})
S_SINGLE = scenario({"tool_calls": [PARIS], "content": "Let me check.", "finish_reason": "tool_use"}, stream=False)
S_SINGLE_TEXT = scenario({"content": "Hello world", "finish_reason": "end_turn"}, stream=False)
S_UPSTREAM = scenario(
    {"content": "Hello world", "upstream": [{"path": "/tools/*/name", "equals": ["get_weather", "get_time"]}]}
)

# --------------------------------------------------------------------------- wire builders

MESSAGE: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "content": [],
    "model": "claude-test",
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 1},
}


def ev(payload: Mapping[str, Any], name: str | None = "", data: str | None = None) -> str:
    """One event; the name defaults to the payload's type, None leaves the line out."""
    line = f"event: {payload.get('type') if name == '' else name}\n" if name is not None else ""
    return line + f"data: {json.dumps(payload) if data is None else data}\n\n"


def start(**message: Any) -> dict[str, Any]:
    return {"type": "message_start", "message": {**MESSAGE, **message}}


PING = {"type": "ping"}
STOP = {"type": "message_stop"}


def block_start(index: int, block: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": dict(block)}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}


def json_delta(index: int, fragment: str) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": fragment}}


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    return [block_start(index, {"type": "text", "text": ""}), *(text_delta(index, p) for p in pieces), block_stop(index)]


def tool_block(
    index: int, *fragments: str, id: str = "toolu_01", name: str = "get_weather", input: Any = None
) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": id, "name": name, "input": {} if input is None else input}
    return [block_start(index, block), *(json_delta(index, f) for f in fragments), block_stop(index)]


def message_delta(stop_reason: str | None = "tool_use", **usage: Any) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": usage or {"output_tokens": 20},
    }


def stream(*parts: Mapping[str, Any] | str | list[dict[str, Any]]) -> str:
    """Events in order; a list is spliced in, a str is written verbatim."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif isinstance(part, list):
            out.extend(ev(p) for p in part)
        else:
            out.append(ev(part))
    return "".join(out)


PARIS_JSON = '{"city": "Paris", "unit": "celsius"}'
CALL_STREAM = stream(start(), PING, tool_block(0, '{"city": ', '"Paris", "unit"', ': "celsius"}'), message_delta(), STOP)
TEXT_CALL_STREAM = stream(
    start(),
    PING,
    text_block(0, "Let me ", "check."),
    tool_block(1, '{"city": "Par', 'is", "unit": "celsius"}'),
    message_delta(),
    STOP,
)
TEXT_STREAM = stream(start(), text_block(0, "Hello", " world"), message_delta("end_turn"), STOP)
TWO_STREAM = stream(
    start(),
    text_block(0, "Let me check."),
    tool_block(1, '{"city": "Paris"}'),
    tool_block(2, "{}", id="toolu_02", name="get_time"),
    message_delta(),
    STOP,
)


def message(content: Any, stop_reason: str = "tool_use", **top: Any) -> str:
    return json.dumps({**MESSAGE, "content": content, "stop_reason": stop_reason, **top})


TEXT_CONTENT = {"type": "text", "text": "Let me check."}
PARIS_USE = {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris", "unit": "celsius"}}
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

SSE = {"content-type": "text/event-stream; charset=utf-8"}
JSON = {"content-type": "application/json"}


def exchange(sc: Scenario, raw: str | bytes, *, status: int | None = 200, headers: Mapping[str, str] | None = None, **extra: Any) -> Exchange:
    is_stream = bool(sc.client.request.get("stream"))
    return Exchange(
        scenario_id=sc.id,
        profile=CLIENTS["anthropic"],
        stream=is_stream,
        request_body=dict(sc.client.request),
        request_headers={},
        status=status,
        response_headers=dict(headers if headers is not None else (SSE if is_stream else JSON)),
        raw=raw if isinstance(raw, bytes) else raw.encode(),
        **extra,
    )
