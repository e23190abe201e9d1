"""Anthropic SDK rules: the stream read by the official anthropic SDK's own machinery."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.sdk import accumulated_differences

rule = rule_group("anthropic_sdk", "ASDK", stage="stream", profiles=ANTHROPIC)


@rule("ASDK-001")
def sdk_reads(ctx: Context) -> Iterator[Violation]:
    if ctx.sdk.error is not None:
        yield Violation(f"the anthropic SDK raised {ctx.sdk.error}", {"actual": ctx.sdk.error})


@rule("ASDK-002")
def sdk_message(ctx: Context) -> Iterator[Violation]:
    yield from accumulated_differences(ctx, calls_named="tool_use blocks", text_named="text", regex=False)
