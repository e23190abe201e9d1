"""Anthropic SDK rules: the stream read by the official anthropic SDK's own machinery."""

from __future__ import annotations

from collections.abc import Iterator

from harness.compare import CallView, content_equal, diff_calls, shorten
from harness.rules.context import Context
from harness.rules.registry import ANTHROPIC, Violation, rule_group

rule = rule_group("anthropic_sdk", "ASDK")


@rule(
    "ASDK-001",
    "The official `anthropic` SDK's `MessageStream` reads and accumulates the stream without raising (its report "
    "of an error event the scenario expects aside).",
    severity="client",
    stage="stream",
    profiles=ANTHROPIC,
)
def sdk_reads(ctx: Context) -> Iterator[Violation]:
    if ctx.sdk.error is not None:
        yield Violation(f"the anthropic SDK raised {ctx.sdk.error}", {"actual": ctx.sdk.error})


@rule(
    "ASDK-002",
    "The SDK's accumulated message holds the expected tool_use blocks (name and input, in order) and text.",
    severity="client",
    stage="stream",
    profiles=ANTHROPIC,
)
def sdk_message(ctx: Context) -> Iterator[Violation]:
    reading = ctx.sdk
    if reading.error is not None:
        return  # ASDK-001 reports it
    calls = [CallView.from_json_text(c.name, c.arguments) for c in reading.tool_calls if ctx.runs(c.arguments)]
    lines = diff_calls(ctx.expected_calls, calls)
    if lines:
        yield Violation("SDK message tool_use blocks: " + "; ".join(lines), {"diff": lines})
    expected = ctx.expected_content
    if expected is not None and not content_equal(expected, reading.content, exact=ctx.expect.content_exact):
        yield Violation(
            f"SDK message text {shorten(reading.content, 160)}, expected {shorten(expected, 160)}",
            {"expected": expected, "actual": reading.content},
        )
