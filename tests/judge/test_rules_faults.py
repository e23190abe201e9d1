"""The fault rules, case by case, in both dialects.

Each case is a scenario with an upstream fault, a misbehaving client or an expected
error, the exact bytes the proxy answered, and the set of rule ids that must fail
(strict and default runs, as in ``test_rules.py``). Every FAULT rule has a case that
breaks it; the answers a good proxy gives (an error status in the client's dialect,
an error event after the text it had, a completed stream despite a missing upstream
terminator) pass every rule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from support.rule_family import Family

from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.exchange import Exchange
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.rules import RULES, Options, evaluate

WEATHER_OPENAI = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
WEATHER_ANTHROPIC = {"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}


def scenario(
    expect: Mapping[str, Any],
    *,
    fault: Mapping[str, Any] | None = None,
    profile: Profile = CLIENTS["openai"],
    frames: Sequence[Any] = ("Hello", " world"),
    stream: bool = True,
    **client: Any,
) -> Scenario:
    anthropic = profile.name == "anthropic"
    backend: dict[str, Any] = {"dialect": "anthropic" if anthropic else "openai", "frames": list(frames)}
    if fault is not None:
        backend["fault"] = dict(fault)
    request: dict[str, Any] = {
        "model": "m",
        "stream": stream,
        "messages": [{"role": "user", "content": "question"}],
        "tools": [WEATHER_ANTHROPIC if anthropic else WEATHER_OPENAI],
    }
    if anthropic:
        request["max_tokens"] = 256
    return parse_scenario(
        {
            "id": "fault-case",
            "title": "fault rule case",
            "source": "synthetic",
            "backend": backend,
            "client": {"profile": profile.name, "request": request, **client},
            "expect": dict(expect),
        }
    )


DROP = {"kind": "drop", "after_frame": 1}
BAD_GATEWAY = {"kind": "http_error", "status": 502}

S_STATUS = scenario({"error": {"status": [502, 503]}, "proxy_survives": True}, fault=BAD_GATEWAY)
S_ANY_STATUS = scenario({"error": {}}, fault=BAD_GATEWAY)
S_ALLOWED = scenario({"error": {"status": [502], "in_stream": "allowed"}, "content": "Hello"}, fault=DROP)
S_REQUIRED = scenario({"error": {"in_stream": "required"}, "content": "Hello"}, fault=DROP)
# A broken upstream event: skipping it and ending with a clean error after the text before it are both right.
S_EITHER = scenario({"error": {"in_stream": "allowed", "optional": True, "content": "Hello"},
                     "content": "Hello world", "content_exact": True, "finish_reason": "stop"})
S_FORBIDDEN = scenario({"error": {"status": [502], "in_stream": "forbidden"}}, fault=DROP)
S_DROP_NO_ERROR = scenario({"content": "Hello"}, fault=DROP)
S_NO_TERMINATOR = scenario({"content": "Hello world", "finish_reason": "stop"}, fault={"kind": "no_terminator"})
S_STALL = scenario(
    {"content": "Hello world", "within_seconds": 5}, fault={"kind": "stall", "after_frame": 1, "seconds": 2}
)
S_HELD_BACK = scenario(
    {"error": {"in_stream": "allowed", "status": [502]}, "content": "Hello world <fu"},
    fault={"kind": "drop", "after_frame": 2},
    frames=("Hello world", " <fu", "nction_calls>"),
)
S_RATE = scenario(
    {"error": {"status": [429]}}, fault={"kind": "http_error", "status": 429, "headers": {"Retry-After": "7"}}
)
S_BAD_JSON = scenario({"error": {"status": [400]}, "proxy_survives": True}, raw_body="{not json")
S_HALF_CALL = scenario(
    {"error": {"in_stream": "allowed"}, "content": "Checking."},
    fault={"kind": "drop", "after_frame": 2},
    frames=("Checking.", {"tool_call": {"index": 0, "id": "call_1", "type": "function", "name": "get_weather", "arguments": '{"city": "Par'}}, {"tool_call": {"index": 0, "arguments": 'is"}'}}),
)
A_STATUS = scenario({"error": {"status": [529, 503]}}, fault={"kind": "http_error", "status": 529}, profile=CLIENTS["anthropic"])
A_ALLOWED = scenario({"error": {"in_stream": "allowed"}, "content": "Hello"}, fault=DROP, profile=CLIENTS["anthropic"])
A_HELD_BACK = scenario(
    {"error": {"in_stream": "allowed"}, "content": "Hello world <fu"},
    fault={"kind": "drop", "after_frame": 2},
    frames=("Hello world", " <fu", "nction_calls>"),
    profile=CLIENTS["anthropic"],
)
A_TRUNCATED = scenario({"error": {"status": [400]}, "proxy_survives": True}, profile=CLIENTS["anthropic"], truncate_body=True)
A_HALF_TOOL = scenario(
    {"error": {"in_stream": "allowed"}, "content": "Checking."},
    fault={"kind": "drop", "after_frame": 2},
    frames=("Checking.", {"tool_use": {"name": "get_weather", "id": "toolu_1", "input_json": ['{"city": "Par', 'is"}']}}),
    profile=CLIENTS["anthropic"],
)

# --------------------------------------------------------------------------- wire builders

BASE = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}


def chunk(delta: Mapping[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {**BASE, "choices": [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish}]}


def sse(*payloads: Mapping[str, Any], done: bool = True) -> str:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads) + ("data: [DONE]\n\n" if done else "")


ROLE = chunk({"role": "assistant"})
OPENAI_ERROR = {"error": {"message": "upstream connection lost", "type": "server_error", "param": None, "code": None}}
BAD_GATEWAY_BODY = json.dumps({"error": {"message": "upstream returned 502", "type": "upstream_error"}})
DETAIL_BODY = json.dumps({"detail": "upstream returned 502"})  # a web framework's default: no error message


def openai_text(*pieces: str, error: bool = False, done: bool = True) -> str:
    body: list[Mapping[str, Any]] = [ROLE, *(chunk({"content": p}) for p in pieces)]
    body.append(OPENAI_ERROR if error else chunk(finish="stop"))
    return sse(*body, done=done)


def call_start(arguments: str) -> dict[str, Any]:
    return {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}}]}


MESSAGE: dict[str, Any] = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "content": [],
    "model": "m",
    "stop_reason": None,
    "stop_sequence": None,
    "usage": {"input_tokens": 3, "output_tokens": 1},
}
ANTHROPIC_ERROR = {"type": "error", "error": {"type": "api_error", "message": "upstream connection lost"}}


def aev(payload: Mapping[str, Any]) -> str:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"


def anthropic_events(*payloads: Mapping[str, Any]) -> str:
    return "".join(aev(p) for p in payloads)


def a_text(index: int, *pieces: str, stop: bool = True) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}]
    out += [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}} for p in pieces]
    return out + ([{"type": "content_block_stop", "index": index}] if stop else [])


def anthropic_text(*pieces: str, error: bool = False) -> str:
    start = {"type": "message_start", "message": MESSAGE}
    if error:
        return anthropic_events(start, *a_text(0, *pieces, stop=False), ANTHROPIC_ERROR)
    end: list[dict[str, Any]] = [
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    return anthropic_events(start, *a_text(0, *pieces), *end)


SSE = {"content-type": "text/event-stream"}
JSON = {"content-type": "application/json"}
HTML = {"content-type": "text/html; charset=utf-8"}
TRACEBACK_PAGE = (
    "<!DOCTYPE html><html><body><h1>Internal Server Error</h1><pre>Traceback (most recent call last):\n"
    '  File "proxy.py", line 12, in handle\nKeyError: \'choices\'</pre></body></html>'
)


def exchange(sc: Scenario, raw: str, *, status: int | None = 200, headers: Mapping[str, str] | None = None, **extra: Any) -> Exchange:
    is_stream = bool(sc.client.request.get("stream"))
    return Exchange(
        scenario_id=sc.id,
        profile=sc.client.profile,
        stream=is_stream,
        request_body=dict(sc.client.request),
        request_headers={},
        status=status,
        response_headers=dict(headers if headers is not None else (SSE if status == 200 and is_stream else JSON)),
        raw=raw.encode(),
        **extra,
    )


@dataclass(frozen=True)
class Case:
    id: str
    scenario: Scenario
    exchange: Exchange
    fails: frozenset[str]
    features: frozenset[str] = frozenset()  # what the proxy claims


def case(id: str, sc: Scenario, raw: str, fails: set[str] | Sequence[str] = (), *, features: Sequence[str] = (),
         **extra: Any) -> Case:
    return Case(id, sc, exchange(sc, raw, **extra), frozenset(fails), frozenset(features))


FAILS_FAST = ("fails-fast",)
ALIVE: dict[str, Any] = {"survived": True, "survival_detail": "200 after 0.01 s"}

ACCEPTABLE: list[Case] = [
    case("ok-optional-error-answered-whole", S_EITHER, openai_text("Hello", " world")),
    case("ok-optional-error-clean-error-after-the-text", S_EITHER, openai_text("Hello", error=True)),
    # The half call relayed as it came, then the error: openai-python and openai-node raise
    # at the error chunk, the AI SDK never emits a call whose arguments do not parse, and the
    # Anthropic SDKs raise at `event: error`. No client runs it (LiteLLM relays it so).
    case("ok-half-call-cut-by-the-error",
         S_HALF_CALL, sse(ROLE, chunk({"content": "Checking."}), chunk(call_start('{"city": "Par')), OPENAI_ERROR)),
    case(
        "ok-anthropic-half-tool-cut-by-the-error",
        A_HALF_TOOL,
        anthropic_events(
            {"type": "message_start", "message": MESSAGE},
            *a_text(0, "Checking."),
            {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par'}},
            ANTHROPIC_ERROR,
        ),
    ),
    case("ok-status-error-in-dialect", S_STATUS, BAD_GATEWAY_BODY, status=502, **ALIVE),
    case("ok-any-error-status", S_ANY_STATUS, BAD_GATEWAY_BODY, status=503),
    case("ok-clean-status-where-the-stream-must-not-carry-it", S_FORBIDDEN, BAD_GATEWAY_BODY, status=502, **ALIVE),
    case("ok-error-chunk-after-text", S_ALLOWED, openai_text("Hello", error=True)),
    case("ok-error-chunk-required", S_REQUIRED, openai_text("Hel", "lo", error=True)),
    case(
        "ok-xml-client-error-chunk-after-text",
        scenario({"error": {"in_stream": "allowed"}, "content": "Hello"}, fault=DROP, profile=CLIENTS["xml-client"]),
        openai_text("Hello", error=True),
    ),
    case("ok-status-where-stream-error-allowed", S_ALLOWED, BAD_GATEWAY_BODY, status=502),
    case("ok-no-upstream-terminator-completed", S_NO_TERMINATOR, openai_text("Hello", " world")),
    case("ok-stall-within-time", S_STALL, openai_text("Hello", " world"), elapsed=2.4),
    # a loaded machine played the backend's stall slowly: that time is the backend's, not the proxy's
    case("ok-slow-backend-not-counted", S_STALL, openai_text("Hello", " world"), elapsed=9.0, backend_seconds=6.5),
    case("ok-held-back-text-flushed", S_HELD_BACK, openai_text("Hello world", " <fu", error=True)),
    case(
        "ok-retry-after-passed-on",
        S_RATE,
        json.dumps({"error": {"message": "rate limited", "type": "rate_limit_error"}}),
        status=429,
        headers={**JSON, "retry-after": "7"},
    ),
    case(
        "ok-bad-client-json",
        S_BAD_JSON,
        json.dumps({"error": {"message": "request body is not JSON", "type": "invalid_request_error"}}),
        status=400,
        **ALIVE,
    ),
    case("ok-call-dropped-not-half-sent", S_HALF_CALL, openai_text("Checking.", error=True)),
    case("ok-anthropic-overloaded", A_STATUS, json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}), status=529),
    case("ok-anthropic-error-event-after-text", A_ALLOWED, anthropic_text("Hel", "lo", error=True)),
    case("ok-anthropic-held-back-text-flushed", A_HELD_BACK, anthropic_text("Hello world", " <fu", error=True)),
    case(
        "ok-anthropic-truncated-body",
        A_TRUNCATED,
        json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": "incomplete body"}}),
        status=400,
        **ALIVE,
    ),
    case("ok-anthropic-tool-dropped-not-half-sent", A_HALF_TOOL, anthropic_text("Checking.", error=True)),
]

BROKEN: list[Case] = [
    case("fault-001-no-error-reached-client", S_STATUS, openai_text("Hello", " world"), {"FAULT-001"}, **ALIVE),
    case("fault-001-wrong-status", S_STATUS, BAD_GATEWAY_BODY, {"FAULT-001"}, status=400, **ALIVE),
    case("fault-001-anthropic-no-error", A_STATUS, anthropic_text("Hello world"), {"FAULT-001"}),
    # Events relayed after the error: the Anthropic SDKs raise at the error, so the client's text is
    # what came before it (TEXT-001 holds); only the spec's "nothing after an error" is broken.
    case(
        "aev-009-events-relayed-after-the-error-event",
        A_ALLOWED,
        anthropic_text("Hel", "lo", error=True) + anthropic_events(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " world"}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 5}},
            {"type": "message_stop"}),
        {"AEV-009"},
    ),
    case(
        "fault-001-anthropic-required-stream-ended-normally",
        scenario({"error": {"in_stream": "required"}}, fault=DROP, profile=CLIENTS["anthropic"]),
        anthropic_text("Hello"),
        {"FAULT-001"},
    ),
    case("fault-002-stream-error-forbidden", S_FORBIDDEN, openai_text("Hello", error=True), {"FAULT-002", "SDK-001", "CHUNK-007"}),
    case(
        "fault-002-unexpected-error-in-fault-case",
        S_DROP_NO_ERROR,
        openai_text("Hello", error=True),
        {"FAULT-002", "SDK-001", "CHUNK-007"},
    ),
    case(
        "fault-002-anthropic-forbidden",
        scenario({"content": "Hello"}, fault=DROP, profile=CLIENTS["anthropic"]),
        anthropic_text("Hello", error=True),
        {"FAULT-002", "ASDK-001"},
    ),
    case("fault-003-html-traceback-page", S_STATUS, TRACEBACK_PAGE, {"FAULT-003", "ERR-002"}, status=502, headers=HTML, **ALIVE),
    case(
        "fault-003-traceback-in-json",
        S_BAD_JSON,
        json.dumps({"detail": "Traceback (most recent call last):\n  File \"app.py\", line 3\nValueError: bad"}),
        {"FAULT-001", "FAULT-003", "ERR-002"},
        status=500,
        **ALIVE,
    ),
    case("fault-003-plain-text-error", S_ANY_STATUS, "upstream error", {"FAULT-003", "ERR-002"}, status=502, headers={"content-type": "text/plain"}),
    case("fault-003-anthropic-gets-openai-shape", A_STATUS, BAD_GATEWAY_BODY, {"AERR-002"}, status=529),
    # anthropic-sdk-python 2.14.0 says "Error code: 529 - {'detail': ...}": the reason reaches the application.
    case("fault-003-anthropic-gets-the-body-whole", A_STATUS, DETAIL_BODY, {"AERR-002"}, status=529),
    case("fault-004-no-done-after-error", S_ALLOWED, openai_text("Hello", error=True, done=False), {"FAULT-004", "SSE-004"}),
    case("fault-005-retry-after-dropped", S_RATE, BAD_GATEWAY_BODY, {"FAULT-005"}, status=429),
    case("fault-005-retry-after-changed", S_RATE, BAD_GATEWAY_BODY, {"FAULT-005"}, status=429, headers={**JSON, "Retry-After": "30"}),
    case(
        "fault-006-held-back-text-lost",
        S_HELD_BACK,
        openai_text("Hello world", error=True),
        {"FAULT-006", "TEXT-001", "SDK-002"},
    ),
    case(
        "fault-006-anthropic-held-back-text-lost",
        A_HELD_BACK,
        anthropic_text("Hello world", error=True),
        {"FAULT-006", "TEXT-001", "ASDK-002"},
    ),
    case("fault-008-connection-cut-on-upstream-drop", S_REQUIRED, sse(ROLE, chunk({"content": "Hello"}), done=False),
         {"FAULT-008"}, transport_error="RemoteProtocolError: peer closed connection without sending complete message body"),
    case("text-001-optional-error-answer-cut-silently", S_EITHER, openai_text("Hello"), {"TEXT-001", "SDK-002"}),
    case("text-001-optional-error-text-before-it-lost", S_EITHER, openai_text(error=True), {"TEXT-001", "SDK-002"}),
    case("fault-007-proxy-died", S_STATUS, BAD_GATEWAY_BODY, {"FAULT-007"}, status=502, survived=False, survival_detail="ConnectError: connection refused"),
    case("fault-007-no-probe", S_BAD_JSON, json.dumps({"error": {"message": "bad", "type": "invalid_request_error"}}), {"FAULT-007"}, status=400),
    case("http-006-stall-too-slow", S_STALL, openai_text("Hello", " world"), {"HTTP-006"}, elapsed=7.5,
         features=FAILS_FAST),
    case("http-006-proxy-own-time-too-slow", S_STALL, openai_text("Hello", " world"), {"HTTP-006"}, elapsed=9.0,
         backend_seconds=2.0, features=FAILS_FAST),
    # A call cut short and then repaired into JSON that parses: the AI SDK emits it as soon
    # as it parses, before the error chunk, and the agent runs it with what the model never said.
    case(
        "calls-001-repaired-half-call-before-error",
        S_HALF_CALL,
        sse(ROLE, chunk({"content": "Checking."}), chunk(call_start('{"city": "Par"}')), OPENAI_ERROR),
        {"CALLS-001", "SDK-002"},
    ),
    case(
        "calls-001-anthropic-repaired-half-tool-before-error",
        A_HALF_TOOL,
        anthropic_events(
            {"type": "message_start", "message": MESSAGE},
            *a_text(0, "Checking."),
            {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"city": "Par"}'}},
            {"type": "content_block_stop", "index": 1},
            ANTHROPIC_ERROR,
        ),
        {"CALLS-001", "ASDK-002"},
    ),
]

ALL = ACCEPTABLE + BROKEN


def _options(c: Case, strict: bool) -> Options:
    return Options(profile=c.scenario.client.profile, strict=strict, features=c.features)


# Judged with every rule on; ``rule_proofs.families()`` counts these cases towards rule coverage.
FAMILY: Family = (ACCEPTABLE, BROKEN, lambda c: _options(c, True))


@pytest.mark.parametrize("c", ALL, ids=[c.id for c in ALL])
def test_rule_case(c: Case) -> None:
    strict = evaluate(c.scenario, c.exchange, _options(c, True))
    default = evaluate(c.scenario, c.exchange, _options(c, False))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == {i for i in c.fails if RULES[i].severity != "spec"}
    for f in strict:
        assert f.message and "could not be evaluated" not in f.message


def test_every_fault_rule_is_broken_by_some_case() -> None:
    ours = {i for i in RULES if i.startswith("FAULT-")}
    caught = set().union(*(c.fails for c in BROKEN))
    assert ours and ours - caught == set()


def test_case_ids_unique() -> None:
    ids = [c.id for c in ALL]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("case_id", "needle"),
    [
        ("fault-001-no-error-reached-client", "no error reached the client: status 200 with a stream that reports no error; expected status 502 or 503 or an error event"),
        ("fault-001-wrong-status", "status 400, expected status 502 or 503"),
        ("fault-002-stream-error-forbidden", "event 2 reports an error inside the stream; the scenario expects status 502"),
        ("fault-003-html-traceback-page", "with an HTML page"),
        ("fault-003-traceback-in-json", "the body holds no error message"),
        ("fault-004-no-done-after-error", "is not followed by 'data: [DONE]'"),
        ("fault-005-retry-after-dropped", "carried Retry-After: 7; the client's 429 has none"),
        ("fault-006-held-back-text-lost", "missing from character 11: ' <fu'"),
        ("fault-007-proxy-died", "ConnectError: connection refused"),
        ("fault-007-no-probe", "the survival probe was not made"),
    ],
)
def test_failure_messages_are_readable(case_id: str, needle: str) -> None:
    c = next(c for c in ALL if c.id == case_id)
    failures = evaluate(c.scenario, c.exchange, _options(c, True))
    assert needle in "\n".join(f.message for f in failures)


def test_an_accepted_error_relaxes_only_the_ending_rules() -> None:
    """The same error-ended stream passes when the scenario allows the error and fails
    the completion rules when it does not: acceptance is what changes the verdict."""
    raw = openai_text("Hello", error=True)
    allowed = evaluate(S_ALLOWED, exchange(S_ALLOWED, raw), Options(strict=True))
    plain = scenario({"content": "Hello"})
    normal = evaluate(plain, exchange(plain, raw), Options(strict=True))
    assert allowed == []
    assert {f.rule_id for f in normal} == {"SDK-001", "CHUNK-007"}


def test_a_clean_error_status_never_breaks_fault_002() -> None:
    """Where the scenario expects the error inside a started stream, a proxy that answers a
    clean 5xx before any stream instead still gives every client an error it handles."""
    clean = case("clean-5xx", S_REQUIRED, BAD_GATEWAY_BODY, status=502)
    assert "FAULT-002" not in {f.rule_id for f in evaluate(clean.scenario, clean.exchange, _options(clean, True))}
