"""Expected-answer rules: the calls and finish reason the scenario expects."""

from __future__ import annotations

from collections.abc import Iterator

from harness.core.dialects.clients import ANTHROPIC_CLIENT, OPENAI_CLIENT, RESPONSES_CLIENT
from harness.judge.compare import diff_calls, first_call_mismatch, render
from harness.judge.rules import locate
from harness.judge.rules.citations import CODEX_CHAT, COPILOT_SSE, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group

rule = rule_group("calls", "CALLS")


@rule(
    "CALLS-001",
    "The client receives exactly the expected tool calls, in order: same names, semantically equal "
    "arguments; none missing, extra or duplicated. A call the backend itself sent with arguments that are no "
    "JSON object, passed on exactly as sent, is no call a client can run and is not counted; any object made "
    "of them (`{}`, the keys that parse) is a call the model never made.",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "a client runs the calls it receives: a missing, extra, "
                  "duplicated or altered call is a tool run wrongly or not at all (openai-python's accumulated "
                  "`message.tool_calls`, read by SDK-002, holds the same list)",
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); AI SDK not re-checked"),
    stage="answer",
    profiles=(OPENAI_CLIENT, ANTHROPIC_CLIENT, RESPONSES_CLIENT),
)
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


@rule(
    "CALLS-002",
    "The answer's `finish_reason` is the one the scenario expects.",
    severity="client",
    breaks=Breaks(("Codex CLI", "VS Code Copilot"), "clients act on the finish reason: Codex CLI runs calls only "
                  "at `tool_calls` and ends the turn at `stop`; Copilot hands calls on only at `tool_calls` or "
                  "`stop`", (CODEX_CHAT, COPILOT_SSE),
                  versions="Codex CLI: codex-rs/core/src/chat_completions.rs at 0775d1b, read; VS Code Copilot: "
                  "src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
    stage="answer",
    profiles=(OPENAI_CLIENT, RESPONSES_CLIENT),
    ending=True,
)
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
