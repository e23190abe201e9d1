"""Error rules of the Anthropic dialect: errors reach the client in the Messages API's shape."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.compare import render
from harness.judge.rules.citations import ANTHROPIC_SSE, ANTHROPIC_TS_SSE, SPEC_ANTHROPIC_ERRORS, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.schemas import error_body_violations, schema_errors

rule = rule_group("anthropic_errors", "AERR", profiles=ANTHROPIC)


@rule(
    "AERR-001",
    "An error inside a started Anthropic stream is `event: error` with data `{\"type\": \"error\", \"error\": "
    "{\"type\": …, \"message\": …}}`.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python", "anthropic-sdk-typescript"), "both SDKs raise on an event named `error` "
                  "only, with its data as the message (`APIStatusError: {'type': 'error', 'error': {…}}`); an "
                  "error sent under another name is skipped, and the answer looks complete",
                  (ANTHROPIC_SSE, ANTHROPIC_TS_SSE),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current), for an error under another name "
                  "(one named `error` in another shape still raises, its data as the message); "
                  "anthropic-sdk-typescript: @anthropic-ai/sdk 1.14.0 (current) ends such a stream with "
                  "`stream ended without producing a Message`, the error's message lost"),
    stage="stream",
)
def stream_error_shape(ctx: Context) -> Iterator[Violation]:
    for e in ctx.events:
        if not e.is_error:
            continue
        problems = [] if e.name == "error" else [f"the event is named {render(e.name)}, not 'error'"]
        if e.value is None:
            problems.append(f"data is not JSON ({e.json_error})")
        else:
            problems.extend(schema_errors(e.value, "anthropic_error"))
        if problems:
            yield Violation(f"event {e.event.index}: error event " + "; ".join(problems), ctx.at_event(e.event))


@rule(
    "AERR-002",
    'An error before an Anthropic stream is a non-2xx status with a `{"type": "error", "error": {"type": …, '
    '"message": …}}` JSON body.',
    severity="spec",
    source=SPEC_ANTHROPIC_ERRORS,
    stage="response",
)
def error_body_shape(ctx: Context) -> Iterator[Violation]:
    yield from error_body_violations(ctx, "anthropic_error", typed=True)
