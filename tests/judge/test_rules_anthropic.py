"""The Anthropic Messages rules, case by case.

Each case is a small anthropic-profile scenario, the exact bytes a proxy answered,
and the set of rule ids that must fail; every other rule must pass. Cases are judged
strict (all rules) and default (client rules only). Every Anthropic rule has at least
one case that breaks it, and the variations real clients accept (pings anywhere,
CRLF, ``partial_json`` in one fragment or many, extra fields, no text block before a
tool_use block, ...) produce no failure at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.messages_answers import (
    CALL_STREAM,
    JSON,
    MESSAGE,
    OVERLOADED,
    PARIS,
    PARIS_JSON,
    PARIS_USE,
    PING,
    S_CALL,
    S_CALL_ANY,
    S_SINGLE,
    S_SINGLE_TEXT,
    S_TEXT,
    S_TEXT_CALL,
    S_TIME,
    S_TWO,
    S_UPSTREAM,
    STOP,
    TEXT_CALL_STREAM,
    TEXT_CONTENT,
    TEXT_STREAM,
    TWO_STREAM,
    block_start,
    block_stop,
    ev,
    exchange,
    json_delta,
    message,
    message_delta,
    scenario,
    start,
    stream,
    text_block,
    text_delta,
    tool_block,
)
from support.rule_family import Family


from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange, RecordedRequest
from harness.core.scenario.model import Scenario
from harness.judge.readers.reading import read_answer
from harness.judge.readers.sdk_compat import read_anthropic_stream
from harness.judge.rules import RULES, Options, compare_answers, evaluate

# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    scenario: Scenario
    exchange: Exchange
    fails: frozenset[str]


def case(id: str, sc: Scenario, raw: str | bytes, fails: Sequence[str] | set[str] = (), **extra: Any) -> Case:
    return Case(id, sc, exchange(sc, raw, **extra), frozenset(fails))


def crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


ACCEPTABLE: list[Case] = [
    case("ok-text-then-call", S_TEXT_CALL, TEXT_CALL_STREAM),
    case("ok-call-without-text-block", S_CALL, CALL_STREAM),
    case("ok-call-any-text-stop-reason-tool-use", S_CALL_ANY, TEXT_CALL_STREAM),
    case("ok-text", S_TEXT, TEXT_STREAM),
    case("ok-two-calls", S_TWO, TWO_STREAM),
    case(
        "ok-pings-everywhere",
        S_TEXT_CALL,
        "".join(ev(PING) + part + "\n\n" for part in TEXT_CALL_STREAM.strip().split("\n\n")) + ev(PING),
    ),
    case("ok-crlf", S_TEXT_CALL, crlf(TEXT_CALL_STREAM)),
    case("ok-cr-only", S_TEXT_CALL, TEXT_CALL_STREAM.replace("\n", "\r")),
    case("ok-data-without-space", S_TEXT_CALL, TEXT_CALL_STREAM.replace("data: ", "data:").replace("event: ", "event:")),
    case("ok-partial-json-one-fragment", S_CALL, stream(start(), tool_block(0, PARIS_JSON), message_delta(), STOP)),
    case(
        "ok-partial-json-char-by-char",
        S_CALL,
        stream(start(), tool_block(0, "", *PARIS_JSON, ""), message_delta(), STOP),
    ),
    case("ok-text-char-by-char", S_TEXT, stream(start(), text_block(0, *"Hello world"), message_delta("end_turn"), STOP)),
    case("ok-tool-without-input-deltas", S_TIME, stream(start(), tool_block(0, name="get_time"), message_delta(), STOP)),
    case("ok-tool-empty-fragment-only", S_TIME, stream(start(), tool_block(0, "", name="get_time"), message_delta(), STOP)),
    case(
        "ok-extra-unknown-fields",
        S_TEXT_CALL,
        stream(
            {**start(x_vendor={"a": 1}, usage={"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": 0}), "x": 1},
            {**block_start(0, {"type": "text", "text": "", "citations": None}), "x": 2},
            {**text_delta(0, "Let me check."), "x": 3},
            block_stop(0),
            block_start(1, {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {}, "caller": None}),
            json_delta(1, PARIS_JSON),
            {**block_stop(1), "x": 4},
            {**message_delta(output_tokens=9, input_tokens=3), "x_timing": {"ms": 2}},
            {**STOP, "amazon-bedrock-invocationMetrics": {"inputTokenCount": 3}},
        ),
    ),
    case(
        "ok-thinking-block-first",
        S_TEXT_CALL,
        stream(
            start(),
            block_start(0, {"type": "thinking", "thinking": ""}),
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "The user wants"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkY"}},
            block_stop(0),
            text_block(1, "Let me check."),
            tool_block(2, PARIS_JSON),
            message_delta(),
            STOP,
        ),
    ),
    case("ok-odd-unique-ids", S_TWO, TWO_STREAM.replace("toolu_01", "call_9f1c2d3e").replace("toolu_02", "0")),
    case("ok-sse-id-and-comment-lines", S_TEXT, ": keep-alive\n\n" + TEXT_STREAM.replace("event: ", "id: 7\nevent: ")),
    case("ok-single-answer", S_SINGLE, message([TEXT_CONTENT, PARIS_USE])),
    case("ok-single-text", S_SINGLE_TEXT, message([{"type": "text", "text": "Hello world"}], "end_turn")),
    case(
        "ok-single-extra-fields",
        S_SINGLE,
        message(
            [{**TEXT_CONTENT, "citations": None}, {**PARIS_USE, "caller": None}],
            container=None,
            usage={"input_tokens": 3, "output_tokens": 9, "service_tier": "standard"},
        ),
    ),
    case(
        "ok-upstream-assertion",
        S_UPSTREAM,
        TEXT_STREAM,
        upstream=(RecordedRequest("POST", "/v1/messages", "", {}, dict(S_UPSTREAM.client.request), None, 0.0),),
    ),
]

_NO_TEXT_DELTA_EVENT = ev(text_delta(0, " world"), name=None)

BROKEN: list[Case] = [
    # event names and JSON
    case(
        "aev-001-data-only-event",
        S_TEXT,
        stream(start(), block_start(0, {"type": "text", "text": ""}), text_delta(0, "Hello"), _NO_TEXT_DELTA_EVENT, block_stop(0), message_delta("end_turn"), STOP),
        {"AEV-001", "TEXT-001", "ASDK-002"},
    ),
    case(  # the SDKs read it by its data's `type` (anthropic-sdk-python 0.75.0 lost it)
        "aev-014-wrong-name",
        S_TEXT,
        TEXT_STREAM.replace("event: content_block_delta", "event: message", 1),
        {"AEV-014"},
    ),
    case(
        "aev-002-not-json",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), "event: content_block_delta\ndata: oops\n\n", message_delta("end_turn"), STOP),
        {"AEV-002", "ASDK-001"},
    ),
    case(
        "aev-015-no-type",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), 'event: content_block_delta\ndata: {"index": 0}\n\n', message_delta("end_turn"), STOP),
        {"AEV-015"},
    ),
    case("aev-015-empty-keep-alive", S_TEXT, 'event: ping\ndata: {}\n\n' + TEXT_STREAM, {"AEV-015"}),
    case(  # anthropic-sdk-python: "TypeError: Unexpected event runtime type"
        "aev-002-array-data",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), "event: content_block_delta\ndata: [1]\n\n", message_delta("end_turn"), STOP),
        {"AEV-002", "ASDK-001"},
    ),
    case(
        "aev-003-message-start-without-model",
        S_TEXT,
        stream({"type": "message_start", "message": {k: v for k, v in MESSAGE.items() if k != "model"}}, text_block(0, "Hello world"), message_delta("end_turn"), STOP),
        {"AEV-003"},
    ),
    case(
        "aev-003-text-block-prefilled",
        S_TEXT,
        stream(start(), block_start(0, {"type": "text", "text": "Hello"}), text_delta(0, " world"), block_stop(0), message_delta("end_turn"), STOP),
        {"AEV-003"},
    ),
    # grammar
    case(
        "aev-004-block-before-message-start",
        S_TEXT,
        stream(block_start(0, {"type": "text", "text": ""}), start(), text_delta(0, "Hello world"), block_stop(0), message_delta("end_turn"), STOP),
        {"AEV-004", "ASDK-001", "TEXT-001"},
    ),
    case(
        "aev-004-second-message-start",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), start(id="msg_02"), message_delta("end_turn"), STOP),
        {"AEV-004"},
    ),
    case(
        "aev-005-first-block-at-index-one",
        S_TEXT,
        stream(start(), text_block(1, "Hello world"), message_delta("end_turn"), STOP),
        {"AEV-005", "ASDK-001", "TEXT-001"},
    ),
    case(
        "aev-005-index-reused",
        S_TWO,
        TWO_STREAM.replace('"index": 2', '"index": 1'),
        {"AEV-005", "CALLS-001"},
    ),
    case(
        "aev-006-block-never-closed",
        S_CALL,
        stream(start(), tool_block(0, PARIS_JSON)[:-1], message_delta(), STOP),
        {"AEV-006"},
    ),
    case(
        "aev-006-next-block-opens-first",
        S_TEXT_CALL,
        stream(start(), text_block(0, "Let me check.")[:-1], tool_block(1, PARIS_JSON)[:1], block_stop(0), json_delta(1, PARIS_JSON), block_stop(1), message_delta(), STOP),
        {"AEV-006", "AEV-007"},
    ),
    case(
        "aev-006-stream-ends-inside-block",
        S_TEXT,
        stream(start(), text_block(0, "Hello world")[:-1]),
        {"AEV-006", "AEV-008", "AEV-013", "ATOOL-004"},
    ),
    case(
        "aev-007-text-delta-in-tool-block",
        S_CALL,
        stream(start(), tool_block(0, PARIS_JSON)[:-1], text_delta(0, "oops"), block_stop(0), message_delta(), STOP),
        {"AEV-007"},
    ),
    case(
        "aev-007-delta-after-stop",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), text_delta(0, "!"), message_delta("end_turn"), STOP),
        {"AEV-007", "TEXT-001", "ASDK-002"},
    ),
    case(
        "aev-008-no-message-delta",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), STOP),
        {"AEV-008", "ATOOL-004"},
    ),
    case(
        "aev-008-no-usage",
        S_TEXT,
        stream(start(), text_block(0, "Hello world"), {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, STOP),
        {"AEV-008", "AEV-003", "ASDK-001"},
    ),
    case(
        "aev-008-null-stop-reason",
        S_CALL_ANY,
        stream(start(), tool_block(0, PARIS_JSON), message_delta(None), STOP),
        {"AEV-008", "AEV-003", "ATOOL-003"},
    ),
    case(
        "aev-008-block-after-message-delta",
        S_TEXT_CALL,
        stream(start(), text_block(0, "Let me check."), message_delta(), tool_block(1, PARIS_JSON), STOP),
        {"AEV-008"},
    ),
    case("aev-013-no-message-stop", S_TEXT, stream(start(), text_block(0, "Hello world"), message_delta("end_turn")), {"AEV-013"}),
    case(
        "aev-009-event-after-message-stop",
        S_TEXT,
        TEXT_STREAM + ev(message_delta("end_turn")),
        {"AEV-009"},
    ),
    # tool_use blocks
    case(
        "aev-010-unclosed-json-at-stop",
        S_CALL,
        stream(start(), tool_block(0, '{"city": "Paris", ', '"unit": "celsius"'), message_delta(), STOP),
        {"AEV-010", "CALLS-001"},
    ),
    case(
        "aev-010-stream-ends-in-tool-input",
        S_CALL_ANY,
        stream(start(), tool_block(0, '{"city": "Paris", "unit": "cel')[:-1]),
        {"AEV-010", "AEV-006", "AEV-008", "AEV-013", "CALLS-001", "ATOOL-003", "ASDK-002"},
    ),
    case(
        "aev-010-invalid-json",
        S_CALL,
        stream(start(), tool_block(0, '{"city": }'), message_delta(), STOP),
        {"AEV-010", "CALLS-001", "ASDK-001"},
    ),
    case(
        "aev-011-input-as-string",
        S_CALL,
        stream(start(), tool_block(0, input=PARIS_JSON), message_delta(), STOP),
        {"AEV-011", "AEV-003", "CALLS-001", "ASDK-002"},
    ),
    case(
        "aev-012-prefilled-input",
        S_CALL,
        stream(start(), tool_block(0, input={"city": "Paris", "unit": "celsius"}), message_delta(), STOP),
        {"AEV-012"},
    ),
    case(
        "atool-001-shared-id",
        S_TWO,
        TWO_STREAM.replace("toolu_02", "toolu_01"),
        {"ATOOL-001"},
    ),
    case(
        "atool-001-empty-id",
        S_CALL,
        CALL_STREAM.replace('"id": "toolu_01"', '"id": ""'),
        {"ATOOL-001", "AEV-003"},
    ),
    case(
        "atool-002-undeclared-tool",
        S_CALL,
        CALL_STREAM.replace('"name": "get_weather"', '"name": "get_forecast"'),
        {"ATOOL-002", "CALLS-001", "ASDK-002"},
    ),
    case(
        "atool-003-end-turn-after-tool-use",
        S_CALL_ANY,
        stream(start(), tool_block(0, PARIS_JSON), message_delta("end_turn"), STOP),
        {"ATOOL-003"},
    ),
    case("atool-004-max-tokens", S_TEXT, TEXT_STREAM.replace('"end_turn"', '"max_tokens"'), {"ATOOL-004"}),
    case(
        "atool-004-single",
        S_SINGLE_TEXT,
        message([{"type": "text", "text": "Hello world"}], "stop_sequence"),
        {"ATOOL-004"},
    ),
    # single answers
    case("abody-001-content-not-array", S_SINGLE, message("Let me check."), {"ABODY-001", "ABODY-002", "CALLS-001", "TEXT-001"}),
    case(
        "abody-001-error-with-200",
        S_SINGLE,
        json.dumps(OVERLOADED),
        {"ABODY-001", "AERR-002", "CALLS-001", "TEXT-001", "ATOOL-004"},
    ),
    case(
        "abody-002-no-usage",
        S_SINGLE,
        json.dumps({k: v for k, v in json.loads(message([TEXT_CONTENT, PARIS_USE])).items() if k != "usage"}),
        {"ABODY-002"},
    ),
    case(  # a server tool's call and result, as the API answers a web search (claude-code-router writes these)
        "abody-002-a-server-tool-result-is-a-block-of-the-api",
        S_SINGLE,
        message([{"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "paris"}},
                 {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}, TEXT_CONTENT, PARIS_USE]),
    ),
    case(
        "abody-002-a-server-tool-result-without-its-call-id",
        S_SINGLE,
        message([{"type": "web_search_tool_result", "content": []}, TEXT_CONTENT, PARIS_USE]),
        {"ABODY-002"},
    ),
    case(
        "abody-003-input-as-string",
        S_SINGLE,
        message([TEXT_CONTENT, {**PARIS_USE, "input": PARIS_JSON}]),
        {"ABODY-003", "ABODY-002", "CALLS-001"},
    ),
    case(
        "abody-openai-body-for-anthropic-client",
        S_SINGLE,
        json.dumps({"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}),
        {"ABODY-001", "ABODY-002", "CALLS-001", "TEXT-001", "ATOOL-004"},
    ),
    # errors
    case(
        "aerr-001-error-event-misnamed",
        S_TEXT,
        stream(start(), text_block(0, "Hello"), ev(OVERLOADED, name="message")),
        {"AERR-001", "TEXT-001", "ASDK-002"},
    ),
    case(
        "aerr-003-error-not-in-shape",
        S_TEXT,
        stream(start(), text_block(0, "Hello"), ev({"error": "upstream died"}, name="error")),
        {"AERR-003", "ASDK-001", "TEXT-001"},
    ),
    case(  # the SDKs raise on it all the same, its data as the message
        "aerr-003-chat-completions-shaped-error-event",
        S_TEXT,
        stream(start(), text_block(0, "Hello"), ev({"error": {"message": "upstream died", "type": "server_error"}},
                                                   name="error")),
        {"AERR-003", "ASDK-001", "TEXT-001"},
    ),
    case(
        "aerr-001-shaped-error-fails-the-answer",
        S_TEXT,
        stream(start(), text_block(0, "Hello"), ev(OVERLOADED)),
        {"ASDK-001", "TEXT-001"},
    ),
    case(
        "aerr-002-openai-shaped-error",
        S_TEXT,
        '{"error": {"message": "upstream failed", "type": "server_error"}}',
        {"HTTP-003", "AERR-002"},
        status=500,
        headers=JSON,
    ),
    case("aerr-002-text-body", S_TEXT, "Bad gateway", {"HTTP-003", "AERR-002"}, status=502, headers={"content-type": "text/plain"}),
    # dialect-neutral rules on an anthropic exchange
    case("http-003-anthropic-overloaded", S_TEXT, json.dumps(OVERLOADED), {"HTTP-003"}, status=529, headers=JSON),
    case("http-005-body-for-stream", S_TEXT, message([{"type": "text", "text": "Hello world"}], "end_turn"), {"HTTP-005"}, headers=JSON),
    case(
        "sse-002-glued-events",
        S_TEXT,
        TEXT_STREAM.replace("\n\nevent: content_block_stop", "\nevent: content_block_stop", 1),
        {"SSE-002", "AEV-002", "AEV-006", "ASDK-001", "TEXT-001"},
    ),
    case("calls-001-wrong-value", S_CALL, CALL_STREAM.replace("Paris", "paris"), {"CALLS-001", "ASDK-002"}),
    case("text-001-different", S_TEXT, TEXT_STREAM.replace(" world", " there"), {"TEXT-001", "ASDK-002"}),
    case(
        "text-003-leaked-markup",
        S_CALL_ANY,
        stream(start(), text_block(0, "Sure.\n<function_calls>"), tool_block(1, PARIS_JSON), message_delta(), STOP),
        {"TEXT-003"},
    ),
    case(
        "up-001-anthropic",
        S_UPSTREAM,
        TEXT_STREAM,
        {"UP-001", "UP-004"},  # the tools dropped upstream break UP-004 too
        upstream=(RecordedRequest("POST", "/v1/messages", "", {}, {**S_UPSTREAM.client.request, "tools": []}, None, 0.0),),
    ),
]

ALL = ACCEPTABLE + BROKEN
# Judged with every rule on; ``rule_proofs.families()`` counts these cases towards rule coverage.
FAMILY: Family = (ACCEPTABLE, BROKEN, lambda c: Options(profile=CLIENTS["anthropic"], strict=True))
ANTHROPIC_PREFIXES = ("AEV-", "ATOOL-", "ABODY-", "ASDK-", "AERR-")


def _client_rules(ids: frozenset[str]) -> set[str]:
    return {i for i in ids if RULES[i].severity == "client"}


@pytest.mark.parametrize("c", ALL, ids=[c.id for c in ALL])
def test_rule_case(c: Case) -> None:
    strict = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["anthropic"], strict=True))
    default = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["anthropic"]))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == _client_rules(c.fails)
    for f in strict:
        assert f.message and "could not be evaluated" not in f.message
        assert isinstance(f.evidence, dict)


def test_every_anthropic_rule_is_broken_by_some_case() -> None:
    ours = {i for i in RULES if i.startswith(ANTHROPIC_PREFIXES)}
    caught = set().union(*(c.fails for c in BROKEN))
    assert ours and ours - caught == set()


def test_case_ids_unique() -> None:
    ids = [c.id for c in ALL]
    assert len(ids) == len(set(ids))


def test_anthropic_exchange_is_never_judged_by_chat_completion_rules() -> None:
    """Whatever profile the options name, an anthropic exchange gets the Anthropic
    rules and the dialect-neutral ones only."""
    neutral = {"HTTP-", "SSE-001", "SSE-002", "SSE-008", "SSE-009", "CALLS-001", "TEXT-", "UP-", "EQ-"}
    for c in BROKEN:
        for profile in (CLIENTS["openai"], CLIENTS["xml-client"], CLIENTS["anthropic"]):
            failures = evaluate(c.scenario, c.exchange, Options(profile=profile, strict=True))
            assert {f.rule_id for f in failures} == set(c.fails)
    for rule_id in {i for c in BROKEN for i in c.fails}:
        assert rule_id.startswith(ANTHROPIC_PREFIXES) or any(rule_id.startswith(n) for n in neutral), rule_id


def test_chat_completion_stream_under_anthropic_options_is_judged_as_anthropic() -> None:
    """Options naming anthropic read any exchange as Messages events: an OpenAI chunk
    stream then breaks the event rules instead of passing unnoticed."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"content": "Hello world"}, "finish_reason": "stop"}]}
    raw = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n"
    ex = replace(exchange(S_TEXT, raw), profile=CLIENTS["openai"])
    ids = {f.rule_id for f in evaluate(S_TEXT, ex, Options(profile=CLIENTS["anthropic"], strict=True))}
    assert {"AEV-015", "AEV-004", "TEXT-001"} <= ids
    assert not any(i.startswith(("CHUNK-", "TOOL-", "SDK-")) for i in ids)


@pytest.mark.parametrize(
    ("case_id", "needle"),
    [
        ("aev-001-data-only-event", "has no 'event:' line (the SDK skips it)"),
        ("aev-014-wrong-name", "is named 'message'"),
        ("aev-004-block-before-message-start", "comes before any message_start"),
        ("aev-005-first-block-at-index-one", "a new block takes index 1, expected 0"),
        ("aev-006-block-never-closed", "message_delta while block 0"),
        ("aev-006-stream-ends-inside-block", "the stream ends inside block 0"),
        ("aev-007-text-delta-in-tool-block", 'a "text_delta" delta in tool_use block 0 (it takes input_json_delta)'),
        ("aev-008-no-usage", "the SDK raises reading it"),
        ("aev-010-unclosed-json-at-stop", "not one JSON object at its content_block_stop"),
        ("aev-010-stream-ends-in-tool-input", "when the stream ends inside it"),
        ("aev-010-invalid-json", "Unable to parse tool parameter JSON"),
        ("aev-011-input-as-string", "sends input as a string"),
        ("atool-001-shared-id", "share the id 'toolu_01'"),
        ("atool-002-undeclared-tool", "calls 'get_forecast', which the request did not declare"),
        ("atool-003-end-turn-after-tool-use", 'stop_reason is "end_turn"'),
        ("abody-003-input-as-string", "input is a string"),
        ("aerr-001-error-event-misnamed", "the event is named \"message\""),
        ("aerr-001-shaped-error-fails-the-answer", "APIStatusError"),
        ("calls-001-wrong-value", "'city': expected \"Paris\", got \"paris\""),
    ],
)
def test_failure_messages_are_readable(case_id: str, needle: str) -> None:
    c = next(c for c in ALL if c.id == case_id)
    failures = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["anthropic"], strict=True))
    text = "\n".join([f.message for f in failures] + [m for f in failures for m in f.evidence.get("more", [])])
    assert needle in text


def test_evidence_locates_the_event() -> None:
    c = next(c for c in BROKEN if c.id == "aev-014-wrong-name")
    (failure,) = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["anthropic"], strict=True))
    assert failure.evidence["byte_offset"] == c.exchange.raw.index(b"event: message\n")


def test_garbage_never_raises() -> None:
    samples = [
        b"", b"\x00\xff", b"event: message_start\ndata: {}\n\n", b"event: x\ndata: []\n\n", b"data: null\n\n",
        b'event: content_block_start\ndata: {"type": "content_block_start", "index": "0", "content_block": 5}\n\n',
        b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": true, "delta": []}\n\n',
        b'event: message_delta\ndata: {"type": "message_delta", "delta": 1, "usage": "x"}\n\n',
        b'event: error\ndata: {"type": "error", "error": null}\n\n', b"\r\r\r\n\n:", b"event", b"[1,2]",
        b'{"type": "message", "content": [1, {"type": "tool_use", "input": [], "name": 3}]}', b'{"type": "error"}',
        stream(start(), tool_block(0, "}{")[:2], {"type": "content_block_stop"}, {"type": "message_delta"}).encode(),
    ]
    for sc in (S_CALL, S_SINGLE, S_TEXT):
        for raw in samples:
            for status in (200, 500):
                failures = evaluate(sc, exchange(sc, raw, status=status), Options(profile=CLIENTS["anthropic"], strict=True))
                assert all("could not be evaluated" not in f.message for f in failures), failures


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])]


@settings(max_examples=60, deadline=None)
@given(
    text_cuts=st.lists(st.integers(0, 100), max_size=8),
    json_cuts=st.lists(st.integers(0, 100), max_size=8),
    with_text=st.booleans(),
    pings=st.lists(st.integers(0, 40), max_size=5),
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    space=st.booleans(),
)
def test_acceptable_variations_never_fail(
    text_cuts: list[int], json_cuts: list[int], with_text: bool, pings: list[int], line_end: str, space: bool
) -> None:
    """Any split of the text and of the input JSON, with or without a text block,
    pings anywhere, any line end, passes every rule, strict ones included."""
    words = "I'll check the weather."
    sc = scenario({"tool_calls": [PARIS], "content": words if with_text else "", "finish_reason": "tool_use"})
    events: list[Mapping[str, Any]] = [start()]
    if with_text:
        events.extend(text_block(0, *_split(words, text_cuts)))
    events.extend(tool_block(1 if with_text else 0, *_split(PARIS_JSON, json_cuts)))
    events.extend([message_delta(), STOP])
    for p in sorted(pings, reverse=True):
        events.insert(p % (len(events) + 1), PING)
    text = "".join(ev(e) for e in events)
    if not space:
        text = text.replace("data: ", "data:").replace("event: ", "event:")
    text = text.replace("\n", line_end)
    assert evaluate(sc, exchange(sc, text), Options(profile=CLIENTS["anthropic"], strict=True)) == []


# --------------------------------------------------------------------------- assembly and the SDK


def test_read_answer_reads_messages() -> None:
    streamed = read_answer(exchange(S_TWO, TWO_STREAM))
    assert streamed.content == "Let me check."
    assert [(c.index, c.id, c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [
        (0, "toolu_01", "get_weather", {"city": "Paris"}),
        (1, "toolu_02", "get_time", {}),
    ]
    assert streamed.finish_reason == "tool_use" and streamed.error is None
    assert streamed.usage == {"input_tokens": 12, "output_tokens": 20}
    single = read_answer(exchange(S_SINGLE, message([TEXT_CONTENT, PARIS_USE])))
    assert single.content == "Let me check." and json.loads(single.tool_calls[0].arguments) == PARIS["arguments"]
    error = read_answer(exchange(S_TEXT, json.dumps(OVERLOADED), status=529))
    assert error.error == OVERLOADED["error"]
    cut = read_answer(exchange(S_TEXT, stream(start(), text_block(0, "Hel"), ev(OVERLOADED))))
    assert cut.content == "Hel" and cut.error == OVERLOADED["error"] and cut.finish_reason is None


def test_sdk_reading() -> None:
    ok = read_anthropic_stream(TEXT_CALL_STREAM.encode())
    assert ok.error is None and ok.content == "Let me check." and ok.finish_reason == "tool_use"
    assert [(c.name, json.loads(c.arguments)) for c in ok.tool_calls] == [("get_weather", PARIS["arguments"])]
    as_string = read_anthropic_stream(stream(start(), tool_block(0, input=PARIS_JSON), message_delta(), STOP).encode())
    assert as_string.error is None and json.loads(as_string.tool_calls[0].arguments) == PARIS_JSON
    failed = read_anthropic_stream(stream(start(), text_block(0, "Hel"), ev(OVERLOADED)).encode())
    assert failed.error_event and failed.error is not None and "Overloaded" in failed.error and failed.content == "Hel"
    broken = read_anthropic_stream(stream(start(), text_block(1, "x")).encode())
    assert broken.error is not None and broken.error.startswith("IndexError") and not broken.error_event


# --------------------------------------------------------------------------- stream vs single


@pytest.mark.parametrize(
    ("streamed", "plain", "fails"),
    [
        (TEXT_CALL_STREAM, message([TEXT_CONTENT, PARIS_USE]), False),
        (TEXT_CALL_STREAM.replace('"unit": "celsius"', '"unit":"celsius"'), message([{"type": "text", "text": " Let me \t check. "}, PARIS_USE]), False),
        (TEXT_CALL_STREAM, message([TEXT_CONTENT]), True),
        (TEXT_CALL_STREAM, message([TEXT_CONTENT, PARIS_USE], "end_turn"), True),
    ],
    ids=["same", "same-other-spacing", "call-missing", "stop-reason-differs"],
)
def test_compare_answers(streamed: str, plain: str, fails: bool) -> None:
    plain_exchange = exchange(S_SINGLE, plain)
    failures = compare_answers(S_TEXT_CALL, exchange(S_TEXT_CALL, streamed), plain_exchange, Options(profile=CLIENTS["anthropic"]))
    assert [f.rule_id for f in failures] == (["EQ-001"] if fails else [])
