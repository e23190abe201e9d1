"""The conformance rules, case by case.

Each case is a small scenario, the exact bytes a proxy answered, and the set of rule
ids that must fail; every other rule must pass. Cases are judged with ``strict`` on
(all rules) and off (client rules only), so a spec rule can never break a default
run. Every rule has at least one case that breaks it (here, or among the Anthropic
and fault cases of ``test_rules_anthropic.py`` and ``test_rules_faults.py``) on a
scenario that a correct answer passes, and every rule judges at least one correct
answer, so a rule that always fails is caught too. The acceptable variations (CRLF,
``data:`` without a space, comments, one-fragment arguments, ...) must produce no
failure at all.
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
from harness.core.dialects.frames import RawFrame, ToolCallFrame
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

ACCEPTABLE: list[Case] = [
    case("iso-005-two-choices-apart", S_TWO_CHOICES, two_choices(CHOICE_0, CHOICE_1)),
    case("ok-call-split-arguments", S_CALL, CALL_STREAM),
    case(
        "ok-broken-arguments-relayed-as-sent",
        S_BROKEN,
        sse(ROLE, chunk(start(name="write_file", args="")), chunk(args(BROKEN_ARGS[:12])), chunk(args(BROKEN_ARGS[12:])),
            chunk(finish="tool_calls")),
    ),
    case(
        "ok-broken-arguments-kept-as-text",
        S_BROKEN,
        sse(ROLE, chunk({"content": BROKEN_ARGS}), chunk(finish="stop")),
    ),
    case(  # the other right answer: a clean error inside the stream (the regex stands aside for the error's text)
        "ok-broken-arguments-answered-with-an-error",
        S_BROKEN,
        sse(ROLE, ev('{"error": {"message": "the model wrote arguments that are no JSON", "type": "server_error", '
                     '"param": null, "code": null}}')),
    ),
    case("ok-name-and-arguments-in-one-delta", S_CALL, sse(ROLE, chunk(start(args=PARIS_ARGS)), chunk(finish="tool_calls"))),
    case(
        "ok-arguments-in-one-later-fragment",
        S_CALL,
        sse(ROLE, chunk(start(args=None)), chunk(args(PARIS_ARGS)), chunk(finish="tool_calls")),
    ),
    case(
        "ok-arguments-char-by-char",
        S_CALL,
        sse(ROLE, chunk(start()), *(chunk(args(c)) for c in PARIS_ARGS), chunk(args("")), chunk(finish="tool_calls")),
    ),
    case(
        "ok-text-char-by-char",
        S_TEXT,
        sse(ROLE, *(chunk({"content": c}) for c in "Hello world"), chunk(finish="stop")),
    ),
    case("ok-text-one-delta-role-merged", S_TEXT, sse(chunk({"role": "assistant", "content": "Hello world"}), chunk(finish="stop"))),
    case("ok-finish-with-last-content", S_TEXT, sse(ROLE, chunk({"content": "Hello"}), chunk({"content": " world"}, "stop"))),
    case("ok-empty-and-null-content-deltas", S_CALL, sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({**start(args=PARIS_ARGS), "content": None}),
        chunk({"content": None}, "tool_calls"),
    )),
    case("ok-role-merged-with-call", S_CALL, sse(chunk({"role": "assistant", **start(args=PARIS_ARGS)}), chunk(finish="tool_calls"))),
    case("ok-data-without-space", S_CALL, CALL_STREAM.replace("data: ", "data:")),
    case("ok-crlf", S_CALL, crlf(CALL_STREAM)),
    case("ok-cr-only", S_TEXT, TEXT_STREAM.replace("\n", "\r")),
    case(
        "ok-keep-alive-comments",
        S_TEXT,
        ": keep-alive\n\n" + TEXT_STREAM.replace("\n\ndata:", "\n\n: ping\n\n:\n\ndata:", 2),
    ),
    case(
        "ok-event-id-retry-fields",
        S_TEXT,
        "".join(
            f"event: message\nid: {i}\nretry: 3000\n" + e + "\n\n"
            for i, e in enumerate(TEXT_STREAM.strip().split("\n\n"))
        ),
    ),
    case(
        "ok-extra-unknown-fields",
        S_CALL,
        sse(
            chunk({"role": "assistant", "reasoning_content": None}, system_fingerprint="fp_1", service_tier="default", x_vendor={"a": 1}),
            {**BASE, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": PARIS_ARGS, "x": 1}, "x_extra": True}]}, "finish_reason": None, "logprobs": None, "stop_reason": None}]},
            chunk(finish="tool_calls", usage=None, x_timing={"ms": 3}),
        ),
    ),
    case(
        "ok-odd-unique-ids",
        S_TWO,
        sse(
            chunk({"role": "assistant", "content": "Let me check."}),
            chunk(start(0, "toolu_01A09q90qw90lq917835lq9", args='{"city":"Paris"}')),
            chunk(start(1, "0", name="get_time", args="{}")),
            chunk(finish="tool_calls"),
        ).replace('"id": "chatcmpl-1"', '"id": "9f1c2d3e-aaaa-bbbb-cccc-0123456789ab"'),
    ),
    case("ok-text-then-two-calls", S_TWO, TWO_CALL_STREAM),
    case(
        "ok-two-calls-in-one-delta",
        S_TWO,
        sse(
            chunk({"role": "assistant", "content": "Let me check."}),
            chunk({"tool_calls": [start(0, "call_a", args='{"city":')["tool_calls"][0], start(1, "call_b", name="get_time", args="{}")["tool_calls"][0]]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "Paris"}'}}]}),
            chunk(finish="tool_calls"),
        ),
    ),
    case("ok-no-arguments-as-braces", S_NOARGS, sse(ROLE, chunk(start(name="get_time", args="{}")), chunk(finish="tool_calls"))),
    case("ok-usage-when-requested", S_USAGE, sse(ROLE, chunk({"content": "Hello world"}), chunk(finish="stop"), usage_chunk())),
    case("ok-blank-lines-after-done", S_TEXT, TEXT_STREAM + "\n\n"),
    case("ok-comments-after-done", S_TEXT, TEXT_STREAM + ": keep-alive\n\n: bye\n"),
    case("ok-prose-about-tags", S_PROSE, sse(ROLE, chunk({"content": "Wrap a call in <tool_call> and </tool_call>  tags."}), chunk(finish="stop"))),
    case(
        "ok-lines-other-spacing",
        S_LINES,
        sse(ROLE, chunk({"content": " Line one. \r\n\r\n\r\n"}), chunk({"content": "Line two: done.\n"}), chunk(finish="stop")),
    ),
    case("ok-exact", S_EXACT, TEXT_STREAM),
    case("ok-regex", S_REGEX, sse(ROLE, chunk({"content": "Hello there, friend"}), chunk(finish="stop"))),
    case("ok-single-answer", S_SINGLE, completion(PARIS_MESSAGE)),
    case(
        "ok-single-answer-extra-fields",
        S_SINGLE,
        completion({**PARIS_MESSAGE, "refusal": None, "reasoning_content": "..."}, system_fingerprint=None, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
    ),
    case("ok-json-content-type-with-charset", S_SINGLE, completion(PARIS_MESSAGE), headers={"content-type": "application/json; charset=utf-8"}),
    case(
        "ok-upstream-assertions",
        S_UPSTREAM,
        TEXT_STREAM,
        upstream=(upstream_request({"model": "other"}), upstream_request(dict(GOOD_UPSTREAM))),
    ),
    case("ok-loop-guard-no-upstream", S_LOOP, TEXT_STREAM),
    case("ok-sampling-forwarded", S_SAMPLING, TEXT_STREAM, upstream=(upstream_request(dict(S_SAMPLING.client.request)),)),
    case("ok-fast-enough", S_SLOW, TEXT_STREAM, elapsed=0.2, features=("fails-fast",)),
    case("ok-loop-guard-answers-alone", S_LOOP, TEXT_STREAM, features=("loop-guard",)),
    # A proxy with no loop guard is not held to the count.
    case("ok-upstream-count-without-loop-guard", S_LOOP, TEXT_STREAM, upstream=(upstream_request(dict(GOOD_UPSTREAM)),)),
    # A proxy that retries a failing upstream with back-off takes longer; unless it claims
    # fails-fast, no client is known to mind (openai-python itself waits 600 s).
    case("ok-slow-when-fails-fast-is-not-claimed", S_SLOW, TEXT_STREAM, elapsed=3.5),
    case("ok-xml-client-cline-xml", S_XML_CLIENT, xml_client_stream(XML_READ), profile=XML_CLIENT),
    case(
        "ok-xml-client-invoke-xml",
        S_XML_CLIENT,
        xml_client_stream(
            'I will read it.\n<function_calls>\n<invoke name="read_file">\n<parameter name="path">src/main.py'
            "</parameter>\n</invoke>\n</function_calls>",
            split=3,
        ),
        profile=XML_CLIENT,
    ),
    case("ok-xml-client-tool-without-parameters", S_XML_CLIENT_TIME, xml_client_stream("Checking.\n<get_time>\n</get_time>"), profile=XML_CLIENT),
    case("ok-xml-client-write-content-with-closing-tag", S_XML_CLIENT_WRITE, xml_client_stream(XML_WRITE, split=5), profile=XML_CLIENT),
    case(
        "ok-xml-client-single-answer",
        replace(S_XML_CLIENT, client=replace(S_XML_CLIENT.client, request={**S_XML_CLIENT.client.request, "stream": False})),
        completion({"role": "assistant", "content": XML_READ}, "stop"),
        profile=XML_CLIENT,
    ),
]

UP_STREAMING = {**GOOD_UPSTREAM, "stream": True, "stream_options": {"include_usage": True}}

BROKEN: list[Case] = [
    # isolation: n > 1
    case("iso-005-choices-swapped", S_TWO_CHOICES, two_choices(CHOICE_1, CHOICE_0), {"CALLS-001", "SDK-002", "ISO-005"}),
    case("iso-005-choice-1-mixed", S_TWO_CHOICES, two_choices(CHOICE_0, '{"city": "Bergen-{{choice}}", "unit": "celsius"}'),
         {"ISO-005"}),
    # transport
    case("http-001-refused", S_TEXT, b"", {"HTTP-001"}, status=None, transport_error="ConnectError: connection refused"),
    case("http-002-timeout", S_TEXT, sse(ROLE, done=""), {"HTTP-002"}, timed_out=True, elapsed=30.0),
    case("http-003-status-500", S_TEXT, '{"error": {"message": "upstream failed", "type": "server_error"}}', {"HTTP-003"}, status=500, headers=JSON_HEADERS),
    case("http-004-content-type", S_TEXT, TEXT_STREAM, {"HTTP-004"}, headers={"content-type": "text/plain"}),
    case("http-005-json-for-stream", S_CALL, completion(PARIS_MESSAGE), {"HTTP-005"}, headers=JSON_HEADERS),
    case("http-006-too-slow", S_SLOW, TEXT_STREAM, {"HTTP-006"}, elapsed=3.5, features=("fails-fast",)),
    # framing
    case(
        "sse-001-line-without-data-field",
        S_TEXT,
        TEXT_STREAM.replace("data: " + json.dumps(ROLE), json.dumps(ROLE)),
        {"SSE-001", "CHUNK-012"},  # the role was on the line the parsers ignore
    ),
    case(
        "sse-002-missing-blank-line",
        S_TEXT,
        sse("data: " + json.dumps(ROLE) + "\n", chunk({"content": "Hello"}), chunk({"content": " world"}), chunk(finish="stop")),
        {"SSE-002", "CHUNK-001", "SDK-001", "TEXT-001", "CHUNK-012"},  # the role was in the lost payload
    ),
    case(
        "sse-003-json-over-two-data-lines",
        S_TEXT,
        sse(ROLE, "data: " + json.dumps(chunk({"content": "Hello"}), indent=1).replace("\n", "\ndata: ") + "\n\n", chunk({"content": " world"}), chunk(finish="stop")),
        {"SSE-003"},
    ),
    case("sse-004-no-done", S_TEXT, sse(ROLE, chunk({"content": "Hello world"}), chunk(finish="stop"), done=""), {"SSE-004"}),
    case("sse-005-done-trailing-space", S_TEXT, sse(ROLE, chunk({"content": "Hello world"}), chunk(finish="stop"), done="data: [DONE] \n\n"), {"SSE-005"}),
    case("sse-006-chunk-after-done", S_TEXT, TEXT_STREAM + ev(chunk({"content": " again"})), {"SSE-006"}),
    case("sse-007-done-twice", S_TEXT, TEXT_STREAM + "data: [DONE]\n\n", {"SSE-007"}),
    case("sse-007-field-after-done", S_TEXT, TEXT_STREAM + "event: bye\n\n", {"SSE-007"}),
    case(
        "sse-008-invalid-utf8",
        S_TEXT,
        TEXT_STREAM.encode().replace(b'"role": "assistant"', b'"role": "assistant", "x": "\xff"'),
        {"SSE-008", "SDK-001"},
    ),
    case(
        "sse-009-unterminated-last-event",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello world"}), done="") + "data: " + json.dumps(chunk(finish="stop")),
        {"SSE-009", "SSE-004"},
    ),
    # chunks
    case("chunk-001-not-json", S_TEXT, sse(ROLE, "data: Hello\n\n", chunk({"content": "Hello world"}), chunk(finish="stop")), {"CHUNK-001", "SDK-001"}),
    case(
        "chunk-002-no-choices",
        S_TEXT,
        sse(ROLE, {k: v for k, v in BASE.items()}, chunk({"content": "Hello world"}), chunk(finish="stop")),
        {"CHUNK-002", "CHUNK-003", "SDK-001"},
    ),
    case(
        "chunk-002-wrong-object",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello world"}, object="chat.completion"), chunk(finish="stop")),
        {"CHUNK-002", "CHUNK-003", "SDK-002"},
    ),
    case(
        "chunk-003-missing-created",
        S_TEXT,
        sse(ROLE, {k: v for k, v in chunk({"content": "Hello world"}).items() if k != "created"}, chunk(finish="stop")),
        {"CHUNK-003"},
    ),
    case("chunk-003-empty-tool-calls-on-text", S_TEXT, sse(ROLE, chunk({"content": "Hello world", "tool_calls": []}), chunk(finish="stop")), {"CHUNK-003"}),
    case("chunk-004-id-changes", S_TEXT, sse(ROLE, chunk({"content": "Hello world"}, id="chatcmpl-2"), chunk(finish="stop")), {"CHUNK-004"}),
    case("chunk-005-empty-role", S_TEXT, sse(chunk({"role": ""}), chunk({"content": "Hello world"}), chunk(finish="stop")), {"CHUNK-005", "CHUNK-003"}),
    case("chunk-006-two-role-chunks", S_TEXT, sse(ROLE, ROLE, chunk({"content": "Hello world"}), chunk(finish="stop")), {"CHUNK-006"}),
    case("chunk-012-no-role", S_TEXT, sse(chunk({"content": "Hello world"}), chunk(finish="stop")), {"CHUNK-012"}),
    case("chunk-010-role-late", S_TEXT, sse(chunk({"content": "Hello"}), chunk({"role": "assistant", "content": " world"}), chunk(finish="stop")), {"CHUNK-010"}),
    case("chunk-007-no-finish", S_TEXT, sse(ROLE, chunk({"content": "Hello world"})), {"CHUNK-007", "CALLS-002"}),
    case(
        "chunk-008-content-after-finish",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}, "stop"), chunk({"content": " world"})),
        {"CHUNK-008", "CHUNK-009"},
    ),
    case(
        "chunk-011-finish-changes",
        S_CALL,
        sse(ROLE, chunk(start(args=PARIS_ARGS)), chunk(finish="stop"), chunk(finish="tool_calls")),
        {"CHUNK-011", "CHUNK-009"},
    ),
    case("chunk-009-second-finish", S_TEXT, sse(ROLE, chunk({"content": "Hello world"}, "stop"), chunk(finish="stop")), {"CHUNK-009"}),
    # single answers
    case(
        "body-001-no-choices",
        S_SINGLE,
        json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m"}),
        {"BODY-001", "BODY-002", "CALLS-001", "CALLS-002"},
    ),
    case("body-001-error-with-200", S_SINGLE, '{"error": {"message": "no", "type": "x"}}', {"BODY-001", "ERR-002", "CALLS-001", "CALLS-002"}),
    case("body-002-missing-created", S_SINGLE, json.dumps({k: v for k, v in json.loads(completion(PARIS_MESSAGE)).items() if k != "created"}), {"BODY-002"}),
    case(
        "body-003-arguments-object",
        S_SINGLE,
        completion({**PARIS_MESSAGE, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]}),
        {"BODY-003", "BODY-002"},
    ),
    case(
        "body-003-choice-zero-listed-second",  # the client reads choice 0, wherever it sits
        S_SINGLE,
        json.dumps({**json.loads(completion(PARIS_MESSAGE)), "choices": [
            {"index": 1, "message": PARIS_MESSAGE, "finish_reason": "tool_calls"},
            {"index": 0, "message": {**PARIS_MESSAGE, "tool_calls": [{**PARIS_MESSAGE["tool_calls"][0], "id": ""}]},
             "finish_reason": "tool_calls"},
        ]}),
        {"BODY-003", "BODY-002"},
    ),
    case(
        "body-003-no-id",
        S_SINGLE,
        completion({**PARIS_MESSAGE, "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": PARIS_ARGS}}]}),
        {"BODY-003", "BODY-002"},
    ),
    # tool-call deltas
    case(
        "tool-001-no-index",
        S_CALL,
        sse(ROLE, chunk(start()), chunk({"tool_calls": [{"function": {"arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-001", "CHUNK-003", "SDK-001", "TOOL-008", "CALLS-001"},
    ),
    case(
        "tool-001-no-function",
        S_CALL,
        sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0}]}), chunk(args(PARIS_ARGS)), chunk(finish="tool_calls")),
        {"TOOL-001", "SDK-001"},
    ),
    case(
        "tool-002-no-id",
        S_CALL,
        sse(ROLE, chunk({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "get_weather", "arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-002"},
    ),
    case(
        "tool-002-name-split",
        S_CALL,
        sse(ROLE, chunk(start(name="get_")), chunk({"tool_calls": [{"index": 0, "function": {"name": "weather", "arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-002", "TOOL-003"},
    ),
    case(
        "tool-003-id-repeated",
        S_CALL,
        sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0, "id": "call_1", "function": {"arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-003"},
    ),
    case(
        "tool-003-null-id-and-name-later-are-the-schema-s-concern",
        S_CALL,
        sse(ROLE, chunk(start()),
            chunk({"tool_calls": [{"index": 0, "id": None, "function": {"name": None, "arguments": PARIS_ARGS}}]}),
            chunk(finish="tool_calls")),
        {"CHUNK-003"},
    ),
    case(
        "tool-003-type-null",
        S_CALL,
        sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0, "type": None, "function": {"arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-003", "CHUNK-003", "SDK-001"},
    ),
    case(
        "tool-003-name-repeated",
        S_CALL,
        sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0, "function": {"name": "get_weather", "arguments": PARIS_ARGS}}]}), chunk(finish="tool_calls")),
        {"TOOL-003", "CALLS-001", "SDK-002"},
    ),
    case(
        "tool-004-starts-at-one",
        S_CALL,
        sse(ROLE, chunk(start(1)), chunk(args(PARIS_ARGS, 1)), chunk(finish="tool_calls")),
        {"TOOL-004", "SDK-001"},
    ),
    case(
        "tool-005-same-id-twice",
        S_TWO,
        sse(chunk({"role": "assistant", "content": "Let me check."}), chunk(start(0, "call_x", args='{"city": "Paris"}')), chunk(start(1, "call_x", name="get_time", args="{}")), chunk(finish="tool_calls")),
        {"TOOL-005"},
    ),
    case(
        "tool-006-unclosed-arguments",
        S_CALL,
        sse(ROLE, chunk(start(args='{"city": "Paris", "unit": "celsius"')), chunk(finish="tool_calls")),
        {"TOOL-006", "CALLS-001", "SDK-002"},
    ),
    case(
        "tool-007-placeholder-first",
        S_CALL,
        sse(ROLE, chunk(start(args="{}")), chunk(args(PARIS_ARGS)), chunk(finish="tool_calls")),
        {"TOOL-007", "TOOL-006", "CALLS-001", "SDK-002"},
    ),
    case(
        "tool-008-empty-arguments",
        S_NOARGS,
        sse(ROLE, chunk(start(name="get_time", args="")), chunk(finish="tool_calls")),
        {"TOOL-008", "CALLS-001", "SDK-002"},
    ),
    case(
        "tool-008-empty-arguments-single",
        replace(S_NOARGS, client=replace(S_NOARGS.client, request={**S_NOARGS.client.request, "stream": False})),
        completion({"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get_time", "arguments": ""}}]}),
        {"TOOL-008", "CALLS-001"},
    ),
    case(
        "calls-001-broken-arguments-as-empty-object",
        S_BROKEN,
        sse(ROLE, chunk(start(name="write_file", args="{}")), chunk(finish="tool_calls")),
        {"CALLS-001", "SDK-002", "TEXT-004"},
    ),
    case(
        "calls-001-broken-arguments-as-the-part-that-parses",
        S_BROKEN,
        sse(ROLE, chunk(start(name="write_file", args='{"path": "notes.txt"}')), chunk(finish="tool_calls")),
        {"CALLS-001", "SDK-002", "TEXT-004"},
    ),
    case(
        "tool-006-broken-arguments-changed-on-the-way",
        S_BROKEN,
        sse(ROLE, chunk(start(name="write_file", args=BROKEN_ARGS.replace("second", "2nd"))), chunk(finish="tool_calls")),
        {"TOOL-006", "CALLS-001", "SDK-002", "TEXT-004"},
    ),
    case(
        "text-004-broken-call-dropped",
        S_BROKEN,
        sse(ROLE, chunk(finish="tool_calls")),
        {"TEXT-004"},
    ),
    case("tool-009-finish-stop-with-calls", S_CALL, CALL_STREAM.replace('"finish_reason": "tool_calls"', '"finish_reason": "stop"'), {"TOOL-009", "CALLS-002"}),
    # expected calls and finish
    case(
        "calls-001-wrong-value",
        S_CALL,
        CALL_STREAM.replace("Paris", "paris"),
        {"CALLS-001", "SDK-002"},
    ),
    case(
        "calls-001-duplicated-call",
        S_CALL,
        sse(ROLE, chunk(start(0, "call_1", args=PARIS_ARGS)), chunk(start(1, "call_2", args=PARIS_ARGS)), chunk(finish="tool_calls")),
        {"CALLS-001", "SDK-002"},
    ),
    case(
        "calls-001-call-vanished",
        S_CALL,
        sse(ROLE, chunk(finish="stop")),
        {"CALLS-001", "CALLS-002", "SDK-002"},
    ),
    case(
        "calls-001-number-for-string",
        scenario({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}]}),
        sse(ROLE, chunk(start(args='{"city": "Paris", "days": true}')), chunk(finish="tool_calls")),
        {"CALLS-001", "SDK-002"},
    ),
    case("calls-002-wrong-finish", S_TEXT, TEXT_STREAM.replace('"finish_reason": "stop"', '"finish_reason": "length"'), {"CALLS-002"}),
    # content
    case("text-001-different", S_TEXT, TEXT_STREAM.replace(" world", " there"), {"TEXT-001", "SDK-002"}),
    case("text-001-text-sent-twice", S_TEXT, sse(ROLE, chunk({"content": "Hello"}), chunk({"content": "Hello world"}), chunk(finish="stop")), {"TEXT-001", "SDK-002"}),
    case(
        "text-001-line-break-becomes-space",
        S_LINES,
        sse(ROLE, chunk({"content": "Line one. "}), chunk({"content": "Line two:  done."}), chunk(finish="stop")),
        {"TEXT-001", "SDK-002"},
    ),
    case(
        "text-001-newline-delta-lost",
        S_LINES,
        sse(ROLE, chunk({"content": "Line one."}), chunk({"content": "Line two:  done."}), chunk(finish="stop")),
        {"TEXT-001", "SDK-002"},
    ),
    case("text-001-exact-trailing-space", S_EXACT, TEXT_STREAM.replace(" world", " world "), {"TEXT-001", "SDK-002"}),
    case("text-002-regex", S_REGEX, sse(ROLE, chunk({"content": "Well, Hello"}), chunk(finish="stop")), {"TEXT-002", "SDK-002"}),
    case(
        "text-003-leaked-closing-tag",
        S_CALL_ANY_TEXT,
        sse(ROLE, chunk(start(args=PARIS_ARGS)), chunk({"content": "</tools>"}), chunk(finish="tool_calls")),
        {"TEXT-003"},
    ),
    case("text-003-scenario-marker", S_REGEX, sse(ROLE, chunk({"content": "Hello count"}), chunk(finish="stop")), {"TEXT-003"}),
    case(
        "text-003-more-tags-than-expected",
        S_PROSE,
        sse(ROLE, chunk({"content": "Wrap a call in <tool_call> and </tool_call> tags."}), chunk({"content": "<tool_call>"}), chunk(finish="stop")),
        {"TEXT-001", "TEXT-003", "SDK-002"},
    ),
    # usage
    case("usage-001-missing", S_USAGE, TEXT_STREAM, {"USAGE-001"}),
    case("usage-001-not-last", S_USAGE, sse(ROLE, chunk({"content": "Hello world"}), usage_chunk(), chunk(finish="stop")), {"USAGE-001"}),
    case("usage-002-unasked", S_TEXT, sse(ROLE, chunk({"content": "Hello world"}), chunk(finish="stop"), usage_chunk()), {"USAGE-002"}),
    # xml-client (rule ids VTC-00N)
    case(
        "vtc-001-structured-calls",
        S_XML_CLIENT,
        sse(ROLE, chunk({"content": XML_READ}), chunk(start(name="read_file", args='{"path": "src/main.py"}')), chunk(finish="stop")),
        {"VTC-001"},
        profile=XML_CLIENT,
    ),
    case("vtc-002-wrong-path", S_XML_CLIENT, xml_client_stream(XML_READ.replace("main.py", "main.rs")), {"VTC-002"}, profile=XML_CLIENT),
    case("vtc-002-json-quoted-value", S_XML_CLIENT, xml_client_stream(XML_READ.replace("src/main.py", '"src/main.py"')), {"VTC-002"}, profile=XML_CLIENT),
    case("vtc-002-call-missing", S_XML_CLIENT, xml_client_stream("I will read it."), {"VTC-002"}, profile=XML_CLIENT),
    case(
        "vtc-002-unclosed",
        S_XML_CLIENT,
        xml_client_stream(XML_READ.removesuffix("</read_file>")),
        {"VTC-002"},
        profile=XML_CLIENT,
    ),
    case(
        "vtc-003-entity-escaped",
        S_XML_CLIENT_WRITE,
        xml_client_stream(XML_WRITE.replace("<p>1 < 2 &", "&lt;p&gt;1 &lt; 2 &amp;", 1)),
        {"VTC-003", "VTC-002"},
        profile=XML_CLIENT,
    ),
    case("vtc-004-finish-tool-calls", S_XML_CLIENT, xml_client_stream(XML_READ, finish="tool_calls"), {"VTC-004"}, profile=XML_CLIENT),
    case("xml-client-text-001-text-lost", S_XML_CLIENT, xml_client_stream(XML_READ.replace("I will read it.", "")), {"TEXT-001"}, profile=XML_CLIENT),
    case(
        "xml-client-text-003-stray-closing-tag",  # the call's own </parameter> comes first in the content
        S_XML_CLIENT,
        sse(ROLE, chunk({"content": "I will read it.\n\n"}), chunk({"content": INVOKE_READ}),
            chunk({"content": " </parameter>"}), chunk(finish="stop")),
        {"TEXT-001", "TEXT-003"},
        profile=XML_CLIENT,
    ),
    # upstream
    case(
        "up-001-assertions-fail",
        S_UPSTREAM,
        TEXT_STREAM,
        {"UP-001", "UP-004"},  # the tools dropped upstream break UP-004 too
        upstream=(upstream_request({**GOOD_UPSTREAM, "model": "other", "tools": []}),),
    ),
    case(
        "up-001-feature-bound",
        S_UPSTREAM,
        TEXT_STREAM,
        {"UP-001"},
        features=("force-non-stream",),
        upstream=(upstream_request(UP_STREAMING),),
    ),
    case("up-001-nothing-reached-backend", S_UPSTREAM, TEXT_STREAM, {"UP-001"}),
    case("up-003-sampling-rewritten", S_SAMPLING, TEXT_STREAM, {"UP-003"},
         upstream=(upstream_request({**S_SAMPLING.client.request, "temperature": 1.0, "top_p": 1}),)),
    case("up-002-loop-guard-called-upstream", S_LOOP, TEXT_STREAM, {"UP-002"}, upstream=(upstream_request(dict(GOOD_UPSTREAM)),),
         features=("loop-guard",)),
    # sdk (other cases above also break SDK-001/SDK-002 as a consequence)
    case("sdk-001-retry-only-event", S_TEXT, "retry: 3000\n\n" + TEXT_STREAM, {"SDK-001"}),
    # errors
    case(
        "err-001-error-not-in-shape",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": "upstream died"}')),
        {"ERR-001", "SDK-001", "TEXT-001", "CHUNK-007", "CALLS-002"},
    ),
    case(
        "err-001-null-type-is-what-clients-accept",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"message": "upstream died", "type": null, "param": null, "code": "500"}}')),
        {"SDK-001", "TEXT-001", "CHUNK-007", "CALLS-002"},
    ),
    case(
        "err-001-error-without-message",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"type": "server_error"}}')),
        {"ERR-001", "SDK-001", "TEXT-001", "CHUNK-007", "CALLS-002"},
    ),
    case(
        "err-001-shaped-error-only-fails-the-answer",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"message": "upstream died", "type": "server_error", "param": null, "code": null}}')),
        {"SDK-001", "TEXT-001", "CHUNK-007", "CALLS-002"},
    ),
    case("err-002-text-body", S_TEXT, "Bad gateway", {"HTTP-003", "ERR-002"}, status=502, headers={"content-type": "text/plain"}),
    case("err-002-wrong-shape", S_TEXT, '{"detail": "invalid model"}', {"HTTP-003", "ERR-002"}, status=400, headers=JSON_HEADERS),
]

ALL = ACCEPTABLE + BROKEN


def _options(c: Case, strict: bool) -> Options:
    return Options(profile=c.profile, strict=strict, features=c.features)


def _client_rules(ids: frozenset[str]) -> set[str]:
    """The rules judged without --strict: a client's needs, and the features the proxy claims."""
    return {i for i in ids if RULES[i].severity != "spec"}


@pytest.mark.parametrize("c", ALL, ids=[c.id for c in ALL])
def test_rule_case(c: Case) -> None:
    strict = evaluate(c.scenario, c.exchange, _options(c, True))
    default = evaluate(c.scenario, c.exchange, _options(c, False))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == _client_rules(c.fails)
    for f in strict:
        assert f.message and "could not be evaluated" not in f.message
        assert isinstance(f.evidence, dict)


@pytest.mark.parametrize(("upstream", "said"), [
    ((), "no request for it had reached the mock backend"),
    ((upstream_request(GOOD_UPSTREAM),), "1 request(s) for it had reached the mock backend"),
], ids=["proxy-stuck-before-the-backend", "backend-reached"])
def test_a_timeout_says_whether_the_proxy_reached_the_backend(upstream: tuple[RecordedRequest, ...], said: str) -> None:
    """A proxy stuck as a whole (busy with an earlier exchange) never reaches the backend;
    one stuck on this exchange usually has: the message tells them apart."""
    ex = exchange(S_TEXT, sse(ROLE, done=""), timed_out=True, elapsed=30.0, upstream=upstream)
    found = [f for f in evaluate(S_TEXT, ex, Options(profile=OPENAI_CLIENT)) if f.rule_id == "HTTP-002"]
    assert len(found) == 1 and found[0].message.endswith(said), found
    assert found[0].evidence["upstream_requests"] == len(upstream)


# Every family of rule cases, with the strict options a case is judged under: the chat
# completion cases here, the Anthropic Messages and fault cases in their own files (which
# judge them case by case); here they all count towards rule coverage.
FAMILY: Family = (ACCEPTABLE, BROKEN, lambda c: _options(c, True))
def test_case_ids_unique() -> None:
    ids = [c.id for c in ALL]
    assert len(ids) == len(set(ids))


def test_feature_bound_assertion_needs_the_feature() -> None:
    c = next(c for c in BROKEN if c.id == "up-001-feature-bound")
    assert evaluate(c.scenario, c.exchange, Options()) == []
    failures = evaluate(c.scenario, c.exchange, Options(features=frozenset({"force-non-stream"})))
    assert [f.rule_id for f in failures] == ["UP-001"]
    assert "/stream_options absent" in failures[0].message and "/stream equals false" in failures[0].evidence["more"][0]


@pytest.mark.parametrize(
    ("case_id", "needle"),
    [
        ("calls-001-wrong-value", "'city': expected \"Paris\", got \"paris\""),
        ("calls-001-duplicated-call", "#2 extra: get_weather"),
        ("calls-001-duplicated-call", "(duplicate of #1)"),
        ("calls-001-call-vanished", "#1 missing: expected get_weather"),
        ("calls-001-number-for-string", "'days': expected 1, got true"),
        ("tool-003-id-repeated", 'id="call_1"'),
        ("sdk-001-retry-only-event", "JSONDecodeError"),
        ("tool-001-no-index", "RuntimeError: Expected list delta entry to have an `index` key"),
        ("tool-004-starts-at-one", "IndexError"),
        ("vtc-003-entity-escaped", "&lt;"),
        ("up-001-assertions-fail", "/model matches \"^m$\": found \"other\""),
        ("text-003-leaked-closing-tag", "'</tools>' appears 1 time(s)"),
    ],
)
def test_failure_messages_are_readable(case_id: str, needle: str) -> None:
    c = next(c for c in ALL if c.id == case_id)
    failures = evaluate(c.scenario, c.exchange, _options(c, True))
    text = "\n".join([f.message for f in failures] + [m for f in failures for m in f.evidence.get("more", [])])
    assert needle in text


def test_evidence_locates_the_event() -> None:
    c = next(c for c in BROKEN if c.id == "chunk-006-two-role-chunks")
    (failure,) = evaluate(c.scenario, c.exchange, Options())
    assert failure.evidence["event_index"] == 1
    assert failure.evidence["byte_offset"] == c.exchange.raw.index(b"data:", 1)


# (case, rule, the excerpt the rule itself gives)
OWN_EXCERPTS = [
    ("text-003-leaked-closing-tag", "TEXT-003", "</tools>"),
    ("xml-client-text-003-stray-closing-tag", "TEXT-003", "I will read it.\n\n </parameter>"),
    ("vtc-002-wrong-path", "VTC-002", shorten(XML_READ.replace("main.py", "main.rs"), 300)),
]


@pytest.mark.parametrize(("case_id", "rule_id", "excerpt"), OWN_EXCERPTS, ids=[f"{c}-{r}" for c, r, _ in OWN_EXCERPTS])
def test_a_located_finding_keeps_its_own_excerpt(case_id: str, rule_id: str, excerpt: str) -> None:
    c = next(c for c in BROKEN if c.id == case_id)
    failure = next(f for f in evaluate(c.scenario, c.exchange, _options(c, True)) if f.rule_id == rule_id)
    assert failure.evidence["excerpt"] == excerpt
    assert Position.of(failure.evidence).event_index is not None


def test_spec_rules_only_when_strict() -> None:
    c = next(c for c in BROKEN if c.id == "sse-004-no-done")
    assert evaluate(c.scenario, c.exchange, Options()) == []
    assert [f.rule_id for f in evaluate(c.scenario, c.exchange, Options(strict=True))] == ["SSE-004"]


def test_garbage_never_raises() -> None:
    """Whatever the bytes, evaluate judges; no rule may crash on them."""
    samples = [b"", b"\x00\xff", b"data: {}\n\n", b"data: []\n\n", b"data: null\n\n", b'data: {"choices": 5}\n\n',
               b'data: {"choices": [null, 1, {"delta": 3}]}\n\n', b'data: {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}\n\n',
               b'data: {"choices": [{"delta": {"tool_calls": [null, 1, {"index": "0", "function": 2}]}}]}\n\n',
               b"\r\r\r\n\n:", b"data", b"[1,2]", b'{"choices": [{"message": {"tool_calls": [1, {"function": []}]}}]}',
               b'data: {"choices": [{"delta": {"content": "<get_time><read_file><path>"}}]}\n\n',
               b'{"choices": [{"message": {"content": "<invoke name=\\"a\\"><parameter name=\\"b\\">"}}]}']
    for sc in (S_CALL, S_XML_CLIENT, S_XML_CLIENT_TIME, S_SINGLE, S_UPSTREAM):
        for raw in samples:
            for status in (200, 500):
                ex = exchange(sc, raw, status=status, upstream=(upstream_request(None),))
                for profile in PROFILES:
                    failures = evaluate(sc, ex, Options(profile=profile, strict=True))
                    assert all("could not be evaluated" not in f.message for f in failures), failures


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])]


@settings(max_examples=60, deadline=None)
@given(
    text_cuts=st.lists(st.integers(0, 100), max_size=8),
    arg_cuts=st.lists(st.integers(0, 100), max_size=8),
    name_with_args=st.booleans(),
    role=st.sampled_from(["separate", "merged"]),  # a stream with no role breaks CHUNK-012 (spec)
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    space=st.booleans(),
    comments=st.booleans(),
)
def test_acceptable_variations_never_fail(
    text_cuts: list[int],
    arg_cuts: list[int],
    name_with_args: bool,
    role: str,
    line_end: str,
    space: bool,
    comments: bool,
) -> None:
    """Any split of the text and the arguments, with any of the framing variations
    clients accept, passes every rule, strict ones included."""
    sc = scenario({"tool_calls": [PARIS], "content": "I'll check the weather.", "finish_reason": "tool_calls"})
    pieces = _split("I'll check the weather.", text_cuts)
    fragments = _split(PARIS_ARGS, arg_cuts)
    deltas: list[dict[str, Any]] = [{"content": p} for p in pieces if p]
    if role == "separate":
        deltas.insert(0, {"role": "assistant"})
    elif role == "merged":
        deltas[0] = {"role": "assistant", **deltas[0]}
    if name_with_args:
        deltas.append(start(args=fragments[0]))
        deltas.extend(args(f) for f in fragments[1:])
    else:
        deltas.append(start(args=None))
        deltas.extend(args(f) for f in fragments)
    text = sse(*(chunk(d) for d in deltas), chunk(finish="tool_calls"))
    if comments:
        text = ": keep-alive\n\n" + text.replace("\n\ndata:", "\n\n: ping\n\ndata:")
    if not space:
        text = text.replace("data: ", "data:")
    text = text.replace("\n", line_end)
    assert evaluate(sc, exchange(sc, text), Options(strict=True)) == []


XML_CASES = [
    ("cline", XML_READ, [("read_file", {"path": "src/main.py"})], "I will read it.", True),
    ("write-last-closing-tag", XML_WRITE, [("write_to_file", {"path": "a.html", "content": WRITTEN, "line_count": "3"})], "", True),
    ("invoke-single-quotes", "<invoke name='read_file'><parameter name='path'>x</parameter></invoke>", [("read_file", {"path": "x"})], "", True),
    ("undeclared-tag-is-prose", "use <list_files> to list", [], "use <list_files> to list", True),
    ("undeclared-param-ignored", "<read_file><mode>x</mode><path>p</path></read_file>", [("read_file", {"path": "p"})], "", True),
    ("unclosed", "text <read_file>\n<path>a", [("read_file", {"path": "a"})], "text", False),
    ("one-edge-newline-only", "<read_file><path>\n\n a \n\n</path></read_file>", [("read_file", {"path": "\n a \n"})], "", True),
    ("invoke-wrapped", f"a {INVOKE_READ} b", [("read_file", {"path": "src/main.py"})], "a b", True),
]


@pytest.mark.parametrize(("name", "text", "calls", "outside", "complete"), XML_CASES, ids=[c[0] for c in XML_CASES])
def test_xml_calls(name: str, text: str, calls: list[tuple[str, dict[str, str]]], outside: str, complete: bool) -> None:
    parsed = parse_xml_calls(text, tool_vocabulary({"tools": [READ_FILE, WRITE_FILE]}))
    assert [(c.name, dict(c.params)) for c in parsed.calls] == calls
    assert fold_ws(parsed.outside) == outside
    assert all(c.complete for c in parsed.calls) == complete
    assert [text[parsed.text_offset(i)] for i in range(len(parsed.outside))] == list(parsed.outside)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ({"x": 1, "y": [1, 2]}, {"y": [1.0, 2], "x": 1.0}, True),
        ({"x": True}, {"x": 1}, False),
        ({"x": 0}, {"x": False}, False),
        ({"x": None}, {"x": "null"}, False),
        ({"x": None}, {}, False),
        ([1, 2], [2, 1], False),
        ("a", "a", True),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal and json_equal(b, a) is equal


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" \t\r\n\u00a0\u2028ab<", max_size=30))
def test_folded_text_is_its_folded_units(text: str) -> None:
    assert fold_ws(text) == "".join(unit for unit, _ in folded_units(text))


# expected, actual, exact: where they part in each (None: they are equal)
PARTINGS: list[tuple[str, str, bool, tuple[int, int] | None]] = [
    ("Hello world", "Hello world", False, None),
    ("Hello  world", " Hello world\n", False, None),
    ("Hello  world", "Hello", False, (5, 5)),  # the expected text goes on: missing from its character 5
    ("Hello", "Hello there", False, (5, 5)),
    ("a\n\nb", "a b", False, (1, 1)),  # a line break is not a space
    ("Hi <fu", "Hi", False, (2, 2)),
    ("ab", "ab ", True, (2, 2)),
    ("ab", "ab", True, None),
]


@pytest.mark.parametrize(("expected", "actual", "exact", "parting"), PARTINGS)
def test_where_two_texts_part(expected: str, actual: str, exact: bool, parting: tuple[int, int] | None) -> None:
    assert content_equal(expected, actual, exact=exact) is (parting is None)
    assert first_difference(expected, actual, exact=exact) == (None if parting is None else parting[1])
    if parting is not None:
        assert matched_prefix(expected, actual, exact=exact) == parting


# --------------------------------------------------------------------------- stream vs non-stream


@dataclass(frozen=True)
class PairCase:
    id: str
    scenario: Scenario
    streamed: str
    plain: str
    fails: bool
    profile: Profile = OPENAI_CLIENT


PAIRS = [
    PairCase("same-call", S_CALL, CALL_STREAM, completion(PARIS_MESSAGE), False),
    PairCase(
        "same-call-other-key-order",
        S_CALL,
        sse(ROLE, chunk(start(args='{"unit":"celsius",  "city":"Paris"}')), chunk(finish="tool_calls")),
        completion(PARIS_MESSAGE),
        False,
    ),
    PairCase("same-text-other-spacing", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": " Hello \t world "}, "stop"), False),
    PairCase("line-break-lost", S_TEXT, TEXT_STREAM.replace(" world", "\\n\\nworld"), completion({"role": "assistant", "content": "Hello world"}, "stop"), True),
    PairCase("text-differs", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": "Hello"}, "stop"), True),
    PairCase("call-missing-in-stream", S_CALL, sse(ROLE, chunk({"content": "<tools>…</tools>"}), chunk(finish="stop")), completion(PARIS_MESSAGE), True),
    PairCase("finish-differs", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": "Hello world"}, "length"), True),
    PairCase(
        "argument-differs",
        S_CALL,
        CALL_STREAM,
        completion({**PARIS_MESSAGE, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}),
        True,
    ),
    PairCase("xml-client-same", S_XML_CLIENT, xml_client_stream(XML_READ), completion({"role": "assistant", "content": XML_READ}, "stop"), False, XML_CLIENT),
    PairCase(
        "xml-client-differs",
        S_XML_CLIENT,
        xml_client_stream(XML_READ),
        completion({"role": "assistant", "content": XML_READ.replace("main.py", "x.py")}, "stop"),
        True,
        XML_CLIENT,
    ),
]


@pytest.mark.parametrize("p", PAIRS, ids=[p.id for p in PAIRS])
def test_compare_answers(p: PairCase) -> None:
    plain_scenario = replace(p.scenario, client=replace(p.scenario.client, request={**p.scenario.client.request, "stream": False}))
    streamed = exchange(p.scenario, p.streamed, profile=p.profile)
    plain = exchange(plain_scenario, p.plain, profile=p.profile)
    failures = compare_answers(p.scenario, streamed, plain, Options(profile=p.profile))
    assert [f.rule_id for f in failures] == (["EQ-001"] if p.fails else [])


def test_compare_answers_skips_failed_runs_and_opted_out_scenarios() -> None:
    streamed = exchange(S_TEXT, TEXT_STREAM)
    broken = exchange(S_TEXT, "oops", status=500)
    assert compare_answers(S_TEXT, streamed, broken, Options()) == []
    different = exchange(S_TEXT, completion({"role": "assistant", "content": "Bye"}, "stop"))
    assert compare_answers(replace(S_TEXT, stream_equivalence=False), streamed, different, Options()) == []


# --------------------------------------------------------------------------- all the answers of an item

OTHER_ID = completion({**PARIS_MESSAGE, "tool_calls": [{**PARIS_MESSAGE["tool_calls"][0], "id": "call_2"}]})
S_NATIVE_ID = replace(S_CALL, backend=replace(S_CALL.backend, frames=(ToolCallFrame(0, "call_1", "function", "get_weather", PARIS_ARGS),)))
PLAIN = {"stream": False}
A_TWO_IDS = messages.TWO_STREAM  # toolu_01 and toolu_02
A_OTHER = messages.message([messages.TEXT_CONTENT, {**messages.PARIS_USE, "id": "toolu_99"}])
A_SAME = messages.message([messages.TEXT_CONTENT, messages.PARIS_USE])


def _raw_backend(sc: Scenario, *events: Mapping[str, Any]) -> Scenario:
    """``sc`` with a backend that sends ``events`` as raw frames."""
    frames = tuple(RawFrame(f"event: x\ndata: {json.dumps(e)}\n\n") for e in events)
    return replace(sc, backend=replace(sc.backend, frames=frames))


S_RAW_ID = _raw_backend(S_CALL, chunk(start(args=PARIS_ARGS)))
A_RAW_ID = _raw_backend(
    messages.S_TEXT_CALL,
    {"type": "content_block_start", "index": 1, "content_block": {**messages.PARIS_USE, "input": {}}},
)

# (id, scenario, [(request overrides, raw answer, status)], profile, whether TOOL-010 fails)
ITEMS: list[tuple[str, Scenario, list[tuple[dict[str, Any], str, int]], Profile, bool]] = [
    ("same-id-streamed-and-not", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)], OPENAI_CLIENT, True),
    ("other-ids", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, OTHER_ID, 200)], OPENAI_CLIENT, False),
    ("same-id-in-two-streams", S_CALL, [({}, CALL_STREAM, 200), ({}, CALL_STREAM, 200), (PLAIN, OTHER_ID, 200)],
     OPENAI_CLIENT, True),
    ("the-backends-own-id-passed-on", S_NATIVE_ID, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)],
     OPENAI_CLIENT, False),
    ("the-backends-own-id-in-a-raw-frame", S_RAW_ID, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)],
     OPENAI_CLIENT, False),
    ("an-error-answer-takes-no-part", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 500)],
     OPENAI_CLIENT, False),
    ("anthropic-same-tool-use-id", messages.S_TEXT_CALL,
     [({}, A_TWO_IDS, 200), (PLAIN, A_SAME, 200)], ANTHROPIC_CLIENT, True),
    ("anthropic-backends-own-id-in-a-raw-frame", A_RAW_ID,
     [({}, A_TWO_IDS, 200), (PLAIN, A_SAME, 200)], ANTHROPIC_CLIENT, False),
    ("anthropic-other-tool-use-id", messages.S_TEXT_CALL,
     [({}, A_TWO_IDS, 200), (PLAIN, A_OTHER, 200)], ANTHROPIC_CLIENT, False),
]


@pytest.mark.parametrize(("sc", "answers", "profile", "fails"), [i[1:] for i in ITEMS], ids=[i[0] for i in ITEMS])
def test_compare_item(sc: Scenario, answers: list[tuple[dict[str, Any], str, int]], profile: Profile,
                      fails: bool) -> None:
    """Call ids repeated across the answers of one item (a proxy numbering calls per
    request) break TOOL-010, in both dialects; ids the backend sent do not count."""
    played = []
    for n, (overrides, raw, status) in enumerate(answers):
        asked = replace(sc, client=replace(sc.client, request={**sc.client.request, **overrides}))
        headers = SSE_HEADERS if asked.streams else JSON_HEADERS
        played.append((f"answer {n}", asked, exchange(asked, raw, status=status, headers=headers, profile=profile)))
    failures = compare_item(played, Options(profile=profile))
    assert [f.rule_id for f in failures] == (["TOOL-010"] if fails else [])
    if fails:
        assert "answer 0" in failures[0].message and "answer 1" in failures[0].message


# --------------------------------------------------------------------------- assembly and docs


def test_read_answer_stream_and_single() -> None:
    streamed = read_answer(exchange(S_TWO, TWO_CALL_STREAM))
    assert streamed.content == "Let me check."
    assert [(c.index, c.id, c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [
        (0, "call_a", "get_weather", {"city": "Paris"}),
        (1, "call_b", "get_time", {}),
    ]
    assert streamed.finish_reason == "tool_calls" and streamed.error is None
    single = read_answer(exchange(S_SINGLE, completion(PARIS_MESSAGE, usage={"total_tokens": 3})))
    assert single.content == "" and single.tool_calls[0].name == "get_weather" and single.usage == {"total_tokens": 3}
    error = read_answer(exchange(S_TEXT, '{"error": {"message": "m", "type": "t"}}', status=400))
    assert error.error == {"message": "m", "type": "t"}


def test_rules_table_is_complete_and_ids_are_well_formed() -> None:
    assert all(r.id == i and r.severity in ("client", "spec", "feature") and r.statement for i, r in RULES.items())
    table = rules_markdown()
    for rule_id in RULES:
        assert f"| {rule_id} |" in table


_CITED = Breaks(("openai-python",), "raises on it")


@pytest.mark.parametrize(
    ("severity", "cited", "refusal"),
    [
        ("client", {}, "cites the real clients it breaks"),
        ("client", {"breaks": Breaks((), "something breaks")}, "names no known client"),
        ("client", {"breaks": Breaks(("a client nobody can look up",), "it breaks")}, "names no known client"),
        ("client", {"breaks": Breaks(("openai-python",), " ")}, "not how it breaks"),
        ("client", {"breaks": Breaks(("openai-python",), "raises", ("see the SDK",))}, "public https URL"),
        ("spec", {"breaks": _CITED}, "only a 'client' rule cites the clients it breaks"),
        ("spec", {"source": "the spec"}, "public https URL"),
    ],
    ids=["client-uncited", "no-client", "unknown-client", "no-how", "source-not-url",
         "spec-citing-clients", "spec-source-not-url"],
)
def test_registration_refuses_a_rule_whose_citation_is_missing_or_wrong(
    severity: Severity, cited: dict[str, Any], refusal: str
) -> None:
    """A client rule names the real clients it breaks and how, or it is not registered: the
    import of its module fails (``_register``), so no client rule ships uncited."""
    rule = rule_group("citations", "CITE")
    with pytest.raises(ValueError, match=refusal):
        rule("CITE-001", "A rule under test.", severity=severity, **cited)(lambda ctx: iter(()))
    assert "CITE-001" not in ENTRIES


# --------------------------------------------------------------------------- relayed upstream output

@pytest.mark.parametrize(
    ("label", "sc", "raw", "rule"),
    [
        # Azure OpenAI's prompt-filter chunk, relayed unchanged: the official SDKs skip it.
        ("azure-prompt-filter-chunk", S_TEXT,
         sse({"id": "", "object": "", "created": 0, "model": "", "choices": [],
              "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]},
             ROLE, chunk({"content": "Hello"}), chunk({"content": " world"}), chunk(finish="stop")), "CHUNK-002"),
        # A later delta repeating type "function" (some backends do): clients ignore it.
        ("type-function-repeated", S_CALL,
         sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0, "type": "function",
                                                          "function": {"arguments": PARIS_ARGS}}]}),
             chunk(finish="tool_calls")), "TOOL-003"),
    ],
)
def test_valid_upstream_output_relayed_unchanged_breaks_no_client_rule(label: str, sc: Scenario, raw: str,
                                                                         rule: str) -> None:
    c = case(label, sc, raw)
    assert rule not in {f.rule_id for f in evaluate(c.scenario, c.exchange, Options())}
