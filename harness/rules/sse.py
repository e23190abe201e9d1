"""SSE framing rules: how the bytes of a stream are cut into events."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.rules.context import Context
from harness.rules.registry import EVERY_PROFILE, Violation, rule_group
from harness.sse import AnomalyKind

rule = rule_group("framing", "SSE")


def _anomalies(ctx: Context, *kinds: AnomalyKind) -> Iterator[Violation]:
    for a in ctx.stream.of_kind(*kinds):
        evidence: dict[str, Any] = {"byte_offset": a.byte_offset, "excerpt": a.excerpt}
        if a.event_index is not None:
            evidence["event_index"] = a.event_index
        yield Violation(a.message, evidence)


@rule(
    "SSE-001",
    "Every payload is carried on `data:` lines (a payload line without the field is dropped by every SSE parser).",
    severity="client",
    stage="stream",
    profiles=EVERY_PROFILE,
)
def payload_on_data_lines(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "stray-payload")


@rule(
    "SSE-002",
    "Events are separated by a blank line: two payloads never share one event.",
    severity="client",
    stage="stream",
    profiles=EVERY_PROFILE,
)
def events_separated(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "glued-events")


@rule(
    "SSE-003",
    "Each JSON payload sits on a single `data:` line (Copilot parses line by line).",
    severity="client",
    stage="stream",
)
def one_data_line(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "split-payload")


@rule(
    "SSE-004",
    "The stream is terminated by `data: [DONE]`.",
    severity="spec",
    stage="stream",
)
def done_sent(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "done-missing")


@rule(
    "SSE-005",
    "The terminator's data is exactly `[DONE]`.",
    severity="client",
    stage="stream",
)
def done_exact(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "done-not-exact")


@rule(
    "SSE-006",
    "No chunk follows `[DONE]` (clients stop reading at the terminator).",
    severity="client",
    stage="stream",
)
def nothing_after_done(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "event-after-done")


@rule(
    "SSE-007",
    "`[DONE]` is sent once, ends with its blank line, and nothing but blank lines and comments follows it.",
    severity="spec",
    stage="stream",
)
def done_last(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "done-repeated", "bytes-after-done")


@rule(
    "SSE-008",
    "The stream is valid UTF-8.",
    severity="client",
    stage="stream",
    profiles=EVERY_PROFILE,
)
def valid_utf8(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "invalid-utf8")


@rule(
    "SSE-009",
    "Every chunk event ends with a blank line (the openai SDK drops an unterminated last event).",
    severity="client",
    stage="stream",
    profiles=EVERY_PROFILE,
)
def events_terminated(ctx: Context) -> Iterator[Violation]:
    yield from _anomalies(ctx, "unterminated-event")
