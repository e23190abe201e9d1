"""Chat-completion answers that break the rules on tool-call deltas and the expected calls (TOOL, CALLS), case by case."""

from __future__ import annotations

import pytest
from support.chat_rules import (
    BROKEN_ARGS,
    CALL_STREAM,
    Case,
    PARIS_ARGS,
    ROLE,
    S_BROKEN,
    S_CALL,
    S_NOARGS,
    S_TEXT,
    S_TWO,
    TEXT_STREAM,
    args,
    case,
    chunk,
    completion,
    failure_text,
    judge_case,
    replace,
    scenario,
    sse,
    start,
)

BROKEN: list[Case] = [
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
    case("tool-009-finish-stop-with-calls", S_CALL, CALL_STREAM.replace('"finish_reason": "tool_calls"', '"finish_reason": "stop"'), {"TOOL-009"}),
    case("calls-002-calls-cut-at-length", S_CALL, CALL_STREAM.replace('"finish_reason": "tool_calls"', '"finish_reason": "length"'), {"CALLS-002"}),
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
        {"CALLS-001", "CALLS-003", "SDK-002"},
    ),
    case(
        "calls-001-number-for-string",
        scenario({"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris", "days": 1}}]}),
        sse(ROLE, chunk(start(args='{"city": "Paris", "days": true}')), chunk(finish="tool_calls")),
        {"CALLS-001", "SDK-002"},
    ),
    case("calls-003-wrong-finish", S_TEXT, TEXT_STREAM.replace('"finish_reason": "stop"', '"finish_reason": "length"'), {"CALLS-003"}),
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


@pytest.mark.parametrize(
    ("case_id", "needle"),
    [
        ("calls-001-wrong-value", "'city': expected \"Paris\", got \"paris\""),
        ("calls-001-duplicated-call", "#2 extra: get_weather"),
        ("calls-001-duplicated-call", "(duplicate of #1)"),
        ("calls-001-call-vanished", "#1 missing: expected get_weather"),
        ("calls-001-number-for-string", "'days': expected 1, got true"),
        ("tool-003-id-repeated", 'id="call_1"'),
        ("tool-001-no-index", "RuntimeError: Expected list delta entry to have an `index` key"),
        ("tool-004-starts-at-one", "IndexError"),
    ],
)
def test_failure_messages_are_readable(case_id: str, needle: str) -> None:
    assert needle in failure_text(next(c for c in BROKEN if c.id == case_id))
