"""Expected-answer rules: the calls and finish reason the scenario expects."""

from __future__ import annotations

from collections.abc import Iterator

from harness.core.dialects.clients import ANTHROPIC_CLIENT, OPENAI_CLIENT, RESPONSES_CLIENT
from harness.judge.compare import diff_calls, first_call_mismatch, render
from harness.judge.rules import locate
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group

rule = rule_group("calls", "CALLS")


@rule("CALLS-001", stage="answer", profiles=(OPENAI_CLIENT, ANTHROPIC_CLIENT, RESPONSES_CLIENT))
def expected_calls(ctx: Context) -> Iterator[Violation]:
    lines = diff_calls(ctx.expected_calls, ctx.received_calls)
    if lines:
        yield Violation(
            "; ".join(lines),
            {
                "expected": [{"name": n, "arguments": dict(a)} for n, a in ctx.expected_calls],
                "actual": [{"name": c.name, "arguments": c.raw} for c in ctx.received_calls],
                "diff": lines,
                **locate.received_call(ctx, first_call_mismatch(ctx.expected_calls, ctx.received_calls)),
            },
        )


@rule("CALLS-002", stage="answer", profiles=(OPENAI_CLIENT, RESPONSES_CLIENT), ending=True)
def expected_finish(ctx: Context) -> Iterator[Violation]:
    if ctx.expected_finish is not None:
        yield from finish_differs(ctx, ctx.expected_finish)


def finish_differs(ctx: Context, wanted: str | None, *, named: str = "finish_reason") -> Iterator[Violation]:
    """The answer's finish reason against the one a rule wants: every rule that expects a
    reason (CALLS-002, VTC-004, ATOOL-004) words and locates a wrong one alike."""
    actual = ctx.answer.finish_reason
    if actual != wanted:
        yield Violation(
            f"{named} is {render(actual)}, expected {render(wanted)}",
            {"expected": wanted, "actual": actual, **locate.finish(ctx)},
        )
