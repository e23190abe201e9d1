"""Chat-completion answers that break the rules on the event-stream framing (SSE), case by case."""

from __future__ import annotations

import json

import pytest
from support.chat_rules import (
    Case,
    Options,
    ROLE,
    S_TEXT,
    TEXT_STREAM,
    case,
    chunk,
    ev,
    evaluate,
    exchange,
    judge_case,
    replace,
    scenario,
    sse,
)

BROKEN: list[Case] = [
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
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


def test_spec_rules_only_when_strict() -> None:
    c = next(c for c in BROKEN if c.id == "sse-004-no-done")
    assert evaluate(c.scenario, c.exchange, Options()) == []
    assert [f.rule_id for f in evaluate(c.scenario, c.exchange, Options(strict=True))] == ["SSE-004"]
