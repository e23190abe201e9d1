"""Anthropic SDK rules: the stream read by the official anthropic SDK's own machinery."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.rules.citations import ANTHROPIC_ACCUMULATE, ANTHROPIC_SSE, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.sdk import accumulated_differences

rule = rule_group("anthropic_sdk", "ASDK", stage="stream", profiles=ANTHROPIC)


@rule(
    "ASDK-001",
    "The official `anthropic` SDK's `MessageStream` reads and accumulates the stream without raising (its report "
    "of an error event the scenario expects aside).",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "the stream is read by the SDK's own SSE decoder and `MessageStream` "
                  "accumulator: whatever they raise (`JSONDecodeError`, `IndexError`, `ValueError: Unable to parse "
                  "tool parameter JSON from model. …`) is what an application built on it sees",
                  (ANTHROPIC_SSE, ANTHROPIC_ACCUMULATE),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current)"),
)
def sdk_reads(ctx: Context) -> Iterator[Violation]:
    if ctx.sdk.error is not None:
        yield Violation(f"the anthropic SDK raised {ctx.sdk.error}", {"actual": ctx.sdk.error})


@rule(
    "ASDK-002",
    "The SDK's accumulated message holds the expected tool_use blocks (name and input, in order) and text.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "the accumulated message is what an application on the SDK acts on: "
                  "its tool_use blocks are the calls it runs, its text blocks the text it shows",
                  (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current)"),
)
def sdk_message(ctx: Context) -> Iterator[Violation]:
    yield from accumulated_differences(ctx, calls_named="tool_use blocks", text_named="text", regex=False)
