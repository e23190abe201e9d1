"""Error rules of the Anthropic dialect: errors reach the client in the Messages API's shape."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.compare import render
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.schemas import error_body_violations, schema_errors

rule = rule_group("anthropic_errors", "AERR", profiles=ANTHROPIC)


@rule("AERR-001", stage="stream")
def stream_error_named(ctx: Context) -> Iterator[Violation]:
    for e in ctx.events:
        if e.is_error and e.name != "error":
            yield Violation(f"event {e.event.index}: an error, but the event is named {render(e.name)}, not 'error' "
                            "(the SDKs skip an error under another name)", ctx.at_event(e.event))


@rule("AERR-003", stage="stream")
def stream_error_shape(ctx: Context) -> Iterator[Violation]:
    for e in ctx.events:
        if not e.is_error:
            continue
        problems = [f"data is not JSON ({e.json_error})"] if e.value is None else schema_errors(e.value, "anthropic_error")
        if problems:
            yield Violation(f"event {e.event.index}: error event " + "; ".join(problems), ctx.at_event(e.event))


@rule("AERR-002", stage="response")
def error_body_shape(ctx: Context) -> Iterator[Violation]:
    yield from error_body_violations(ctx, "anthropic_error", typed=True)
