"""Anthropic tool_use rules that hold for a stream and a single answer alike, read
from the shared ``Answer``: ids, tool names, and the ``stop_reason``."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.compare import render
from harness.judge.rules import locate
from harness.judge.rules.calls import finish_differs
from harness.judge.rules.citations import SPEC_MESSAGES, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group

rule = rule_group("anthropic_calls", "ATOOL", profiles=ANTHROPIC)


def _ended_by_error(ctx: Context) -> bool:
    """A stream cut short by an error event has no stop_reason to judge."""
    return ctx.kind == "sse" and ctx.answer.error is not None


@rule(
    "ATOOL-001",
    "Every tool_use block has a non-empty `id`, distinct from the other blocks' ids.",
    severity="client",
    breaks=Breaks(("Claude Code",), "the client answers each tool_use with a `tool_result` naming its id and sends "
                  "the history back; the Messages API refuses a repeated id (`` `tool_use` ids must be unique ``) "
                  "and an empty one (an id matches `^[a-zA-Z0-9_-]+$`), so the next turn fails with a 400",
                  versions="Claude Code 2.1.332 (current): its bundle (@anthropic-ai/claude-code-linux-x64) read, it "
                  "reports the API's refusal as `API Error: 400 duplicate tool_use ID in conversation "
                  "history`"),
)
def tool_use_ids(ctx: Context) -> Iterator[Violation]:
    seen: dict[str, int] = {}
    for call in ctx.answer.tool_calls:
        where = locate.call(ctx, call.index)
        if not call.id:
            yield Violation(
                f"tool_use {call.index} ({call.name}) has id {render(call.id)}", {"expected": "a non-empty id", **where}
            )
        elif call.id in seen:
            yield Violation(
                f"tool_use {seen[call.id]} and {call.index} share the id {call.id!r}", {"actual": call.id, **where}
            )
        else:
            seen[call.id] = call.index


@rule(
    "ATOOL-002",
    "Every tool_use block names one of the tools the request declared.",
    severity="client",
    breaks=Breaks(("Claude Code", "OpenCode"), "a call to a tool the request did not declare cannot run: Claude "
                  "Code answers it with `<tool_use_error>Error: No such tool available: …</tool_use_error>`, "
                  "OpenCode (on the AI SDK) with `Model tried to call unavailable tool '…'`, instead of doing the "
                  "work",
                  versions="Claude Code 2.1.332 (current): its bundle (@anthropic-ai/claude-code-linux-x64) read; "
                  "OpenCode not re-checked (the AI SDK, ai 7.0.173 (current), carries `Model tried to call "
                  "unavailable tool`)"),
)
def declared_names(ctx: Context) -> Iterator[Violation]:
    declared = [n for n in ctx.scenario.client.tool_names if n]
    for call in ctx.answer.tool_calls:
        if call.name not in declared:
            yield Violation(
                f"tool_use {call.index} calls {call.name!r}, which the request did not declare "
                f"(declared: {', '.join(declared) or 'none'})",
                {"expected": declared, "actual": call.name, **locate.call(ctx, call.index)},
            )


@rule(
    "ATOOL-003",
    '`stop_reason` is `"tool_use"` when a tool_use block was sent (unless the scenario expects another reason, '
    "such as `max_tokens`).",
    severity="spec",  # the named clients run the tool_use blocks they receive whatever the stop reason
    source=SPEC_MESSAGES,
)
def stop_reason_tool_use(ctx: Context) -> Iterator[Violation]:
    answer = ctx.answer
    if _ended_by_error(ctx) or not answer.tool_calls or answer.finish_reason == "tool_use":
        return
    if ctx.expected_finish is not None and answer.finish_reason == ctx.expected_finish:
        return
    yield Violation(
        f"{len(answer.tool_calls)} tool_use block(s) sent but stop_reason is {render(answer.finish_reason)}",
        {"expected": "tool_use", "actual": answer.finish_reason, **locate.finish(ctx)},
    )


@rule(
    "ATOOL-004",
    "The answer's `stop_reason` is the one the scenario expects (`expect.finish_reason`).",
    severity="client",
    breaks=Breaks(("Claude Code",), "Claude Code acts on the stop reason: at `max_tokens` it reports \"Claude's "
                  "response exceeded the … output token maximum\" instead of taking the cut answer as complete, so "
                  "a wrong reason hides a cut answer or invents one",
                  versions="Claude Code 2.1.332 (current): its bundle (@anthropic-ai/claude-code-linux-x64) read"),
)
def expected_stop_reason(ctx: Context) -> Iterator[Violation]:
    if ctx.expected_finish is not None and not _ended_by_error(ctx):
        yield from finish_differs(ctx, ctx.expected_finish, named="stop_reason")
