"""Error rules: errors reach the client in the OpenAI shape."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.judge.rules.citations import AI_SDK_CHAT, OPENAI_SSE, SPEC_OPENAI_ERRORS, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group
from harness.judge.rules.schemas import error_body_violations, schema_errors

rule = rule_group("errors", "ERR")


@rule(
    "ERR-001",
    "An error inside a started stream is sent as `data: {\"error\": {\"message\": …}}` with a string message; "
    "`type`, `param`, `code` may be null.",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python raises `APIError` with the message whenever a "
                  "payload has an `error` object, and only `An error occurred during streaming` without a string "
                  "message; the AI SDK's error schema needs `error.message` as a string (and allows `type`, "
                  "`param`, `code` to be null): anything else is a validation error instead of the upstream's "
                  "message; a failure in any other shape looks like a truncated answer", (OPENAI_SSE, AI_SDK_CHAT),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); AI SDK: ai 7.0.173 with "
                  "@ai-sdk/openai-compatible 3.0.92 (current), run on the rule's cases (`AI_TypeValidationError`)"),
    stage="stream",
)
def stream_error_shape(ctx: Context) -> Iterator[Violation]:
    for p in ctx.payloads:
        if isinstance(p.value, Mapping) and "error" in p.value:
            errors = schema_errors(p.value, "client_error")
            if errors:
                yield Violation(f"event {p.event.index}: error event " + "; ".join(errors), ctx.at(p))


@rule(
    "ERR-002",
    'An error before the stream is a non-2xx status with an `{"error": {"message": …, "type": …}}` JSON body.',
    severity="spec",
    source=SPEC_OPENAI_ERRORS,
    stage="response",
)
def error_body_shape(ctx: Context) -> Iterator[Violation]:
    yield from error_body_violations(ctx, "openai_error", typed=False)
