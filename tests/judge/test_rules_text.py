"""Chat-completion answers that break the rules on content, usage and what the SDKs read (TEXT, USAGE, SDK), case by case."""

from __future__ import annotations

import pytest
from support.chat_rules import (
    Case,
    PARIS_ARGS,
    ROLE,
    S_CALL_ANY_TEXT,
    S_EXACT,
    S_LINES,
    S_PROSE,
    S_REGEX,
    S_TEXT,
    S_USAGE,
    TEXT_STREAM,
    args,
    case,
    chunk,
    failure_text,
    judge_case,
    own_excerpt,
    replace,
    scenario,
    sse,
    start,
    usage_chunk,
)

BROKEN: list[Case] = [
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
    # sdk (other cases above also break SDK-001/SDK-002 as a consequence)
    case("sdk-001-retry-only-event", S_TEXT, "retry: 3000\n\n" + TEXT_STREAM, {"SDK-001"}),
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


@pytest.mark.parametrize(("case_id", "needle"), [
    ("sdk-001-retry-only-event", "JSONDecodeError"),
    ("text-003-leaked-closing-tag", "'</tools>' appears 1 time(s)"),
])
def test_failure_messages_are_readable(case_id: str, needle: str) -> None:
    assert needle in failure_text(next(c for c in BROKEN if c.id == case_id))


def test_a_located_finding_keeps_its_own_excerpt() -> None:
    c = next(c for c in BROKEN if c.id == "text-003-leaked-closing-tag")
    assert own_excerpt(c, "TEXT-003") == "</tools>"
