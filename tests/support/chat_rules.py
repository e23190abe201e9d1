"""The chat-completion rule cases' builders: scenarios, wire bytes, and how one case is judged.

Each case is a small scenario, the exact bytes a proxy answered, and the set of rule ids that
must fail; every other rule must pass. A case is judged with ``strict`` on (all rules) and off
(client rules only), so a spec rule can never break a default run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import messages_answers as messages
from support.rule_family import Family

from harness.core.dialects.clients import ANTHROPIC_CLIENT, OPENAI_CLIENT, XML_CLIENT, Profile
from harness.core.dialects.frames import EventFrame, RawFrame, ToolCallFrame
from harness.core.exchange import Exchange, RecordedRequest
from harness.core.scenario.loading import bundled_scenarios_dir, load_scenario, parse_scenario
from harness.core.scenario.model import PROFILES, Scenario
from harness.judge.compare import (
    content_equal,
    first_difference,
    fold_ws,
    folded_units,
    json_equal,
    matched_prefix,
    shorten,
)
from harness.judge.readers.reading import read_answer
from harness.judge.readers.transcript import Position
from harness.judge.readers.xml_calls import parse_xml_calls, tool_vocabulary
from harness.judge.rules import RULES, Options, compare_answers, compare_item, evaluate, rules_markdown
from harness.judge.rules.citations import Breaks
from harness.judge.rules.registry import ENTRIES, Severity, rule_group

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------- scenarios

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
READ_FILE = {
    "type": "function",
    "function": {"name": "read_file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}},
}
WRITE_FILE = {
    "type": "function",
    "function": {
        "name": "write_to_file",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "line_count": {"type": "integer"}},
        },
    },
}


def scenario(
    expect: Mapping[str, Any],
    *,
    stream: bool = True,
    tools: tuple[Mapping[str, Any], ...] = (WEATHER, TIME),
    request: Mapping[str, Any] | None = None,
    profile: Profile = OPENAI_CLIENT,
) -> Scenario:
    return parse_scenario(
        {
            "id": "case",
            "title": "rule case",
            "source": "synthetic",
            "backend": {"dialect": "openai", "frames": ["x"]},
            "client": {
                "profile": profile.name,
                "request": {
                    "model": "m",
                    "stream": stream,
                    "messages": [{"role": "user", "content": "question"}],
                    "tools": list(tools),
                    **(request or {}),
                },
            },
            "expect": dict(expect),
        }
    )


PARIS = {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}
S_CALL = scenario({"tool_calls": [PARIS], "content": "", "finish_reason": "tool_calls"})
S_CALL_ANY_TEXT = scenario({"tool_calls": [PARIS], "finish_reason": "tool_calls"})
S_TEXT = scenario({"content": "Hello world", "finish_reason": "stop"})
S_TWO = scenario(
    {
        "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}],
        "content": "Let me check.",
        "finish_reason": "tool_calls",
    }
)
S_NOARGS = scenario({"tool_calls": [{"name": "get_time", "arguments": {}}], "finish_reason": "tool_calls"})
S_USAGE = scenario(
    {"content": "Hello world", "finish_reason": "stop"}, request={"stream_options": {"include_usage": True}}
)
S_SAMPLING = scenario({"content": "Hello world", "finish_reason": "stop"}, request={"temperature": 0.2, "seed": 7})
S_LINES = scenario({"content": "Line one.\n\nLine two:  done.", "finish_reason": "stop"})
S_EXACT = scenario({"content": "Hello world", "content_exact": True, "finish_reason": "stop"})
S_REGEX = scenario({"content_regex": "^Hello\\b", "markers": ["count"]})
# The backend sends a native call whose arguments are cut JSON: no object made of them is the model's call.
_BROKEN = load_scenario(bundled_scenarios_dir() / "faults" / "openai-broken-native-arguments.yaml")
S_BROKEN = replace(_BROKEN, expect=replace(_BROKEN.expect, proxy_survives=False))  # no survival probe here
BROKEN_ARGS = '{"path": "notes.txt", "content": "first line\\nsecond'
# Kiro cuts a Write input mid-JSON and says no more: its toolUseEvent inputs, joined, are what a gateway may pass on.
_KIRO_CUT = load_scenario(bundled_scenarios_dir() / "faults" / "kiro-truncated-large-input.yaml")
S_KIRO_CUT = replace(_KIRO_CUT, expect=replace(_KIRO_CUT.expect, proxy_survives=False))
KIRO_CUT_INPUT = "".join(f.payload.get("input", "") for f in _KIRO_CUT.backend.frames if isinstance(f, EventFrame))
S_PROSE = scenario({"content": "Wrap a call in <tool_call> and </tool_call> tags.", "finish_reason": "stop"})
S_SINGLE = scenario({"tool_calls": [PARIS], "finish_reason": "tool_calls"}, stream=False)
S_SLOW = scenario({"content": "Hello world", "within_seconds": 1})
S_UPSTREAM = scenario(
    {
        "content": "Hello world",
        "upstream": [
            {"path": "/messages/0/role", "equals": "user"},
            {"path": "/tools/*/function/name", "equals": ["get_weather", "get_time"]},
            {"path": "/tools", "equals_request": True},
            {"path": "/messages/-1/content", "contains": "question"},
            {"path": "/messages/*/role", "not_contains": "system"},
            {"path": "/model", "matches": "^m$"},
            {"path": "/stream_options", "absent": True, "requires": ["force-non-stream"]},
            {"path": "/stream", "equals": False, "requires": ["force-non-stream"]},
        ],
    }
)
S_LOOP = scenario({"content": "Hello world", "upstream_requests": 0})
WRITTEN = '<p>1 < 2 & "x"</p>\n</content>\ndone'
WRITE_CALL = {"name": "write_to_file", "arguments": {"path": "a.html", "content": WRITTEN, "line_count": 3}}
S_XML_CLIENT = scenario(
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/main.py"}}], "content": "I will read it."},
    tools=(READ_FILE, WRITE_FILE),
    profile=XML_CLIENT,
)
S_XML_CLIENT_TIME = scenario(
    {"tool_calls": [{"name": "get_time", "arguments": {}}], "content": "Checking."}, tools=(READ_FILE, TIME), profile=XML_CLIENT
)
S_XML_CLIENT_WRITE = scenario({"tool_calls": [WRITE_CALL], "content": ""}, tools=(READ_FILE, WRITE_FILE), profile=XML_CLIENT)

# --------------------------------------------------------------------------- wire builders

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}


def chunk(delta: Mapping[str, Any] | None = None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish}], **top}


def usage_chunk() -> dict[str, Any]:
    return {**BASE, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def ev(obj: Mapping[str, Any] | str) -> str:
    data = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
    return f"data: {data}\n\n"


def sse(*parts: Mapping[str, Any] | str, done: str = "data: [DONE]\n\n") -> str:
    """Events in order; a str part is written verbatim (framing included)."""
    return "".join(p if isinstance(p, str) else ev(p) for p in parts) + done


def start(index: int = 0, id: str = "call_1", name: str = "get_weather", args: str | None = "") -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name}
    if args is not None:
        fn["arguments"] = args
    return {"tool_calls": [{"index": index, "id": id, "type": "function", "function": fn}]}


def args(fragment: str, index: int = 0) -> dict[str, Any]:
    return {"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}


ROLE = chunk({"role": "assistant"})
PARIS_ARGS = '{"city": "Paris", "unit": "celsius"}'
CALL_STREAM = sse(
    ROLE,
    chunk(start()),
    chunk(args("{")),
    chunk(args('"city": "Paris", ')),
    chunk(args('"unit": "celsius"')),
    chunk(args("}")),
    chunk(finish="tool_calls"),
)
TEXT_STREAM = sse(ROLE, chunk({"content": "Hello"}), chunk({"content": " world"}), chunk(finish="stop"))
TWO_CALL_STREAM = sse(  # the Copilot service plan, section 5.3.4: text, then two calls
    ROLE,
    chunk({"content": "Let me "}),
    chunk({"content": "check."}),
    chunk(start(0, "call_a")),
    chunk(args('{"city": "Paris"}', 0)),
    chunk(start(1, "call_b", name="get_time")),
    chunk(args("{}", 1)),
    chunk(finish="tool_calls"),
)


def completion(message: Mapping[str, Any], finish: str = "tool_calls", **top: Any) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish}],
        **top,
    }
    return json.dumps(body)


PARIS_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": PARIS_ARGS}}],
}

SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8"}
JSON_HEADERS = {"content-type": "application/json"}


def upstream_request(body: Any) -> RecordedRequest:
    return RecordedRequest("POST", "/v1/chat/completions", "", {"content-type": "application/json"}, body, None, 0.0)


def exchange(
    sc: Scenario,
    raw: str | bytes,
    *,
    status: int | None = 200,
    headers: Mapping[str, str] | None = None,
    profile: Profile = OPENAI_CLIENT,
    **extra: Any,
) -> Exchange:
    stream = bool(sc.client.request.get("stream"))
    return Exchange(
        scenario_id=sc.id,
        profile=profile,
        stream=stream,
        request_body=dict(sc.client.request),
        request_headers={},
        status=status,
        response_headers=dict(headers if headers is not None else (SSE_HEADERS if stream else JSON_HEADERS)),
        raw=raw if isinstance(raw, bytes) else raw.encode(),
        **extra,
    )


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    scenario: Scenario
    exchange: Exchange
    fails: frozenset[str] = frozenset()
    profile: Profile = OPENAI_CLIENT
    features: frozenset[str] = field(default_factory=frozenset)


def case(
    id: str,
    sc: Scenario,
    raw: str | bytes,
    fails: set[str] | tuple[str, ...] = (),
    *,
    profile: Profile = OPENAI_CLIENT,
    features: tuple[str, ...] = (),
    **exchange_args: Any,
) -> Case:
    return Case(
        id, sc, exchange(sc, raw, profile=profile, **exchange_args), frozenset(fails), profile, frozenset(features)
    )


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


GOOD_UPSTREAM = {**S_UPSTREAM.client.request}
XML_READ = "I will read it.\n\n<read_file>\n<path>src/main.py</path>\n</read_file>"
XML_WRITE = (
    "<write_to_file>\n<path>a.html</path>\n<content>\n<p>1 < 2 & \"x\"</p>\n</content>\ndone\n</content>\n"
    "<line_count>3</line_count>\n</write_to_file>"
)

INVOKE_READ = '<function_calls><invoke name="read_file"><parameter name="path">src/main.py</parameter></invoke></function_calls>'


def xml_client_stream(text: str, finish: str = "stop", split: int = 7) -> str:
    pieces = [text[i : i + split] for i in range(0, len(text), split)]
    return sse(ROLE, *(chunk({"content": p}) for p in pieces), chunk(finish=finish))


def two_choices(first: str, second: str, *, done: bool = True) -> str:
    """A stream of two choices, each with one whole call, interleaved as a backend sends them."""
    def on(i: int, delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**BASE, "choices": [{"index": i, "delta": dict(delta), "finish_reason": finish}]}

    return sse(on(0, {"role": "assistant"}), on(1, {"role": "assistant"}),
               on(0, start(args=first)), on(1, start(id="call_2", args=second)),
               on(0, {}, "tool_calls"), on(1, {}, "tool_calls"))


BERGEN = {"name": "get_weather", "arguments": {"city": "Bergen-{{choice}}", "unit": "celsius"}}
S_TWO_CHOICES = scenario({"tool_calls": [BERGEN], "content": "", "finish_reason": "tool_calls"}, request={"n": 2})
CHOICE_0 = '{"city": "Bergen-{{choice}}", "unit": "celsius"}'
CHOICE_1 = '{"city": "Bergen-1", "unit": "celsius"}'



UP_STREAMING = {**GOOD_UPSTREAM, "stream": True, "stream_options": {"include_usage": True}}


def options_for(c: Case, strict: bool) -> Options:
    return Options(profile=c.profile, strict=strict, features=c.features)


def client_rules(ids: frozenset[str]) -> set[str]:
    """The rules judged without --strict: a client's needs, and the features the proxy claims."""
    return {i for i in ids if RULES[i].severity != "spec"}


def judge_case(c: Case) -> None:
    """The case fails exactly its rules when strict, and only their client rules by default."""
    strict = evaluate(c.scenario, c.exchange, options_for(c, True))
    default = evaluate(c.scenario, c.exchange, options_for(c, False))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == client_rules(c.fails)
    for f in strict:
        assert f.message and "could not be evaluated" not in f.message
        assert isinstance(f.evidence, dict)


def failure_text(c: Case) -> str:
    """Every message and further line the strict run gives for the case."""
    failures = evaluate(c.scenario, c.exchange, options_for(c, True))
    return "\n".join([f.message for f in failures] + [m for f in failures for m in f.evidence.get("more", [])])


def own_excerpt(c: Case, rule_id: str) -> str:
    """The excerpt the rule's finding gives, checked to come with a position."""
    failure = next(f for f in evaluate(c.scenario, c.exchange, options_for(c, True)) if f.rule_id == rule_id)
    assert Position.of(failure.evidence).event_index is not None
    return str(failure.evidence["excerpt"])
