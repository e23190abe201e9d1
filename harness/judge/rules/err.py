"""Error rules: errors reach the client in the OpenAI shape."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group
from harness.judge.rules.schemas import error_body_violations, schema_errors

rule = rule_group("errors", "ERR")


@rule("ERR-001", stage="stream")
def stream_error_shape(ctx: Context) -> Iterator[Violation]:
    for p in ctx.payloads:
        if isinstance(p.value, Mapping) and "error" in p.value:
            errors = schema_errors(p.value, "client_error")
            if errors:
                yield Violation(f"event {p.event.index}: error event " + "; ".join(errors), ctx.at(p))


@rule("ERR-002", stage="response")
def error_body_shape(ctx: Context) -> Iterator[Violation]:
    yield from error_body_violations(ctx, "openai_error", typed=False)
