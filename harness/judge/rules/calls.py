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


# Where an answer's calls come with a finish reason of their own (Chat Completions): there TOOL-009 and CALLS-002
# judge the finish reason of an answer with calls, and CALLS-003 does not.
CALLS_FINISH = frozenset({OPENAI_CLIENT})
# The finish reasons VS Code Copilot's stream reader hands accumulated calls on at (COPILOT_SSE).
COPILOT_HANDS_ON = frozenset({"tool_calls", "stop"})


def calls_lost(ctx: Context) -> bool:
    """Whether VS Code Copilot drops the answer's calls: streamed, and finished (or ended) other than at a
    reason it hands calls on at."""
    answer = ctx.answer
    return bool(answer.tool_calls) and ctx.kind == "sse" and answer.finish_reason not in COPILOT_HANDS_ON


def calls_finish_wrong(ctx: Context) -> bool:
    """Whether an answer with calls finishes other than at ``tool_calls`` where its API says it must."""
    answer = ctx.answer
    return (ctx.options.profile.judged_as in CALLS_FINISH and bool(answer.tool_calls)
            and answer.finish_reason != "tool_calls")


@rule("CALLS-002", stage="answer", profiles=CALLS_FINISH, ending=True)
def calls_handed_on(ctx: Context) -> Iterator[Violation]:
    answer = ctx.answer
    if calls_lost(ctx):
        yield Violation(
            f"{len(answer.tool_calls)} call(s) streamed but finish_reason is {render(answer.finish_reason)}: "
            "VS Code Copilot hands calls on only at \"tool_calls\" or \"stop\"",
            {"expected": "tool_calls", "actual": answer.finish_reason, **locate.finish(ctx)},
        )


@rule("CALLS-003", stage="answer", profiles=(OPENAI_CLIENT, RESPONSES_CLIENT), ending=True)
def expected_finish(ctx: Context) -> Iterator[Violation]:
    if ctx.expected_finish is not None and not calls_finish_wrong(ctx):
        yield from finish_differs(ctx, ctx.expected_finish)


def finish_differs(ctx: Context, wanted: str | None, *, named: str = "finish_reason") -> Iterator[Violation]:
    """The answer's finish reason against the one a rule wants: every rule that expects a
    reason (CALLS-003, VTC-004, ATOOL-004) words and locates a wrong one alike."""
    actual = ctx.answer.finish_reason
    if actual != wanted:
        yield Violation(
            f"{named} is {render(actual)}, expected {render(wanted)}",
            {"expected": wanted, "actual": actual, **locate.finish(ctx)},
        )
