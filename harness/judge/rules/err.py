"""Error rules: errors reach the client in the OpenAI shape."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.judge.rules.citations import AI_SDK_CHAT, OPENAI_SSE, SPEC_OPENAI_ERRORS, Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group
from harness.judge.rules.schemas import schema_errors, schema_violation

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
                  "message; a failure in any other shape looks like a truncated answer", (OPENAI_SSE, AI_SDK_CHAT)),
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
    status = ctx.exchange.status
    body, problem = ctx.body
    excerpt = ctx.exchange.raw[:200].decode("utf-8", "replace")
    if status is not None and 200 <= status < 300:
        if ctx.kind == "json" and isinstance(body, Mapping) and "error" in body:
            yield Violation(f"an error body comes with status {status}: {excerpt!r}",
                            {"actual": status, "json_path": "/error"})
        return
    if problem is not None:
        yield Violation(f"status {status} with a body that is not JSON: {excerpt!r}", {"excerpt": excerpt})
        return
    found = schema_violation(body, "openai_error", f"status {status} error body: ", excerpt=excerpt)
    if found is not None:
        yield found
