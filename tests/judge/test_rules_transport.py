"""Chat-completion answers that break the rules on transport, HTTP status and error bodies (ISO, HTTP, ERR), case by case."""

from __future__ import annotations

import pytest
from support.chat_rules import (
    CHOICE_0,
    CHOICE_1,
    Case,
    JSON_HEADERS,
    PARIS_MESSAGE,
    ROLE,
    S_CALL,
    S_SLOW,
    S_TEXT,
    S_TWO_CHOICES,
    TEXT_STREAM,
    case,
    chunk,
    completion,
    ev,
    judge_case,
    sse,
    two_choices,
)

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
    # errors
    case(
        "err-001-error-not-in-shape",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": "upstream died"}')),
        {"ERR-001", "SDK-001", "TEXT-001", "CHUNK-007", "CALLS-003"},
    ),
    case(
        "err-001-null-type-is-what-clients-accept",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"message": "upstream died", "type": null, "param": null, "code": "500"}}')),
        {"SDK-001", "TEXT-001", "CHUNK-007", "CALLS-003"},
    ),
    case(
        "err-001-error-without-message",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"type": "server_error"}}')),
        {"ERR-001", "SDK-001", "TEXT-001", "CHUNK-007", "CALLS-003"},
    ),
    case(
        "err-001-shaped-error-only-fails-the-answer",
        S_TEXT,
        sse(ROLE, chunk({"content": "Hello"}), ev('{"error": {"message": "upstream died", "type": "server_error", "param": null, "code": null}}')),
        {"SDK-001", "TEXT-001", "CHUNK-007", "CALLS-003"},
    ),
    case("err-002-text-body", S_TEXT, "Bad gateway", {"HTTP-003", "ERR-002"}, status=502, headers={"content-type": "text/plain"}),
    case("err-002-wrong-shape", S_TEXT, '{"detail": "invalid model"}', {"HTTP-003", "ERR-002"}, status=400, headers=JSON_HEADERS),
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)
