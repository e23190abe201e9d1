"""Chat-completion answers that break the rules on the shape of chunks and of single answers (CHUNK, BODY), case by case."""

from __future__ import annotations

import json

import pytest
from support.chat_rules import (
    BASE,
    Case,
    Options,
    PARIS_ARGS,
    PARIS_MESSAGE,
    ROLE,
    S_CALL,
    S_SINGLE,
    S_TEXT,
    args,
    case,
    chunk,
    completion,
    evaluate,
    exchange,
    judge_case,
    scenario,
    sse,
    start,
)

BROKEN: list[Case] = [
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
    case("chunk-007-no-finish", S_TEXT, sse(ROLE, chunk({"content": "Hello world"})), {"CHUNK-007", "CALLS-003"}),
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
        {"BODY-001", "BODY-002", "CALLS-001", "CALLS-003"},
    ),
    case("body-001-error-with-200", S_SINGLE, '{"error": {"message": "no", "type": "x"}}', {"BODY-001", "ERR-002", "CALLS-001", "CALLS-003"}),
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
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


def test_evidence_locates_the_event() -> None:
    c = next(c for c in BROKEN if c.id == "chunk-006-two-role-chunks")
    (failure,) = evaluate(c.scenario, c.exchange, Options())
    assert failure.evidence["event_index"] == 1
    assert failure.evidence["byte_offset"] == c.exchange.raw.index(b"data:", 1)
