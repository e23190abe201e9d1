"""Anthropic tool_use rules that hold for a stream and a single answer alike, read
from the shared ``Answer``: ids, tool names, and the ``stop_reason``."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.compare import render
from harness.judge.rules import locate
from harness.judge.rules.calls import finish_differs
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group

rule = rule_group("anthropic_calls", "ATOOL", profiles=ANTHROPIC)


def _ended_by_error(ctx: Context) -> bool:
    """A stream cut short by an error event has no stop_reason to judge."""
    return ctx.kind == "sse" and ctx.answer.error is not None


@rule("ATOOL-001")
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


@rule("ATOOL-002")
def declared_names(ctx: Context) -> Iterator[Violation]:
    declared = [n for n in ctx.scenario.client.tool_names if n]
    for call in ctx.answer.tool_calls:
        if call.name not in declared:
            yield Violation(
                f"tool_use {call.index} calls {call.name!r}, which the request did not declare "
                f"(declared: {', '.join(declared) or 'none'})",
                {"expected": declared, "actual": call.name, **locate.call(ctx, call.index)},
            )


@rule("ATOOL-003")
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


@rule("ATOOL-004")
def expected_stop_reason(ctx: Context) -> Iterator[Violation]:
    if ctx.expected_finish is not None and not _ended_by_error(ctx):
        yield from finish_differs(ctx, ctx.expected_finish, named="stop_reason")
