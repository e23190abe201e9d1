"""SDK rules: the stream read by the official openai SDK's own machinery."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harness.core.dialects.clients import OPENAI_CLIENT
from harness.judge.compare import CallView, content_equal, diff_calls, shorten
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group

rule = rule_group("sdk", "SDK", stage="stream")


@rule("SDK-001")
def sdk_reads(ctx: Context) -> Iterator[Violation]:
    if ctx.sdk.error is not None:
        yield Violation(f"the openai SDK raised {ctx.sdk.error}", {"actual": ctx.sdk.error})


@rule("SDK-002", profiles=(OPENAI_CLIENT,))
def sdk_message(ctx: Context) -> Iterator[Violation]:
    yield from accumulated_differences(ctx, calls_named="calls", text_named="content", regex=True)


def accumulated_differences(ctx: Context, *, calls_named: str, text_named: str, regex: bool) -> Iterator[Violation]:
    """How the message the dialect's SDK accumulated differs from the expected answer: its
    calls (those a client runs), its text and, with ``regex``, the content pattern. One
    reading for every SDK rule, so the dialects' SDK checks cannot drift apart."""
    reading = ctx.sdk
    if reading.error is not None:
        return  # the SDK's own "reads without raising" rule reports it
    calls = [CallView.from_json_text(c.name, c.arguments) for c in reading.tool_calls if ctx.runs(c.arguments)]
    lines = diff_calls(ctx.expected_calls, calls)
    if lines:
        yield Violation(f"SDK message {calls_named}: " + "; ".join(lines), {"diff": lines})
    expected = ctx.expected_content
    if expected is not None and not content_equal(expected, reading.content, exact=ctx.expect.content_exact):
        yield Violation(
            f"SDK message {text_named} {shorten(reading.content, 160)}, expected {shorten(expected, 160)}",
            {"expected": expected, "actual": reading.content},
        )
    pattern = ctx.expected_regex
    if regex and pattern is not None and re.search(pattern, reading.content, re.DOTALL) is None:
        yield Violation(
            f"SDK message {text_named} {shorten(reading.content, 160)} does not match /{pattern}/",
            {"expected": pattern, "actual": reading.content},
        )
