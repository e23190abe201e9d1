"""Anthropic SDK rules: the stream read by the official anthropic SDK's own machinery."""

from __future__ import annotations

from collections.abc import Iterator

from harness.rules.context import Context
from harness.rules.registry import ANTHROPIC, Violation, rule_group
from harness.rules.sdk import accumulated_differences

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
    yield from accumulated_differences(ctx, calls_named="tool_use blocks", text_named="text", regex=False)
