"""HTTP-level rules: the proxy answered, in time, with the right status and type."""

from __future__ import annotations

from collections.abc import Iterator

from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group

rule = rule_group("transport", "HTTP", profiles=EVERY_PROFILE)


@rule("HTTP-001", stage="always")
def answered(ctx: Context) -> Iterator[Violation]:
    ex = ctx.exchange
    if ex.timed_out or ctx.cut_where_failure_expected:
        return  # HTTP-002, or FAULT-008, says what happened
    if ex.transport_error is not None:
        yield Violation(f"no answer from the proxy: {ex.transport_error}", {"actual": ex.transport_error})
    elif ex.status is None:
        yield Violation("no HTTP response arrived", {})


@rule("HTTP-002", stage="always")
def within_timeout(ctx: Context) -> Iterator[Violation]:
    ex = ctx.exchange
    if ex.timed_out:
        got = f"{len(ex.raw)} body byte(s)" if ex.status is not None else "no response"
        # Whether the proxy got as far as the backend tells a proxy stuck on this
        # exchange from one that is stuck as a whole (busy with an earlier one).
        calls = len(ex.upstream)
        reached = (f"{calls} request(s) for it had reached the mock backend" if calls
                   else "no request for it had reached the mock backend")
        backend = f", which spent {ex.backend_seconds:.1f} s answering" if ex.backend_seconds >= 0.05 else ""
        yield Violation(
            f"the run gave up after {ex.elapsed:.1f} s with {got}; {reached}{backend}",
            {"elapsed": ex.elapsed, "status": ex.status, "bytes": len(ex.raw), "upstream_requests": calls,
             "backend_seconds": ex.backend_seconds},
        )


@rule("HTTP-003", stage="response")
def status_ok(ctx: Context) -> Iterator[Violation]:
    if ctx.expect.error is not None:
        return  # not a normal scenario: FAULT-001 judges the status
    status = ctx.exchange.status
    if status != 200:
        body = ctx.exchange.raw[:300].decode("utf-8", "replace")
        yield Violation(f"status {status}, body: {body!r}", {"expected": 200, "actual": status, "excerpt": body})


@rule("HTTP-004", stage="answer")
def content_type(ctx: Context) -> Iterator[Violation]:
    if ctx.kind == "empty":
        return
    wanted = "text/event-stream" if ctx.kind == "sse" else "application/json"
    actual = ctx.exchange.response_headers.get("content-type")
    if actual is None or actual.split(";")[0].strip().lower() != wanted:
        yield Violation(f"Content-Type is {actual!r}, expected {wanted!r}", {"expected": wanted, "actual": actual})


@rule("HTTP-005", stage="answer")
def body_kind(ctx: Context) -> Iterator[Violation]:
    wanted = "sse" if ctx.exchange.stream else "json"
    if ctx.kind == "empty":
        yield Violation("the body is empty", {"expected": wanted, "actual": "empty"})
    elif ctx.kind != wanted:
        names = {"sse": "an SSE stream", "json": "one JSON body"}
        yield Violation(
            f"the client asked for {names[wanted]} but got {names[ctx.kind]}",
            {"expected": wanted, "actual": ctx.kind},
        )


@rule("HTTP-006", stage="response", features=("fails-fast",))
def within_expected_time(ctx: Context) -> Iterator[Violation]:
    limit = ctx.expect.within_seconds
    ex = ctx.exchange
    own = ex.elapsed - ex.backend_seconds
    if limit is not None and own > limit:
        took = f"the answer took {ex.elapsed:.2f} s"
        if ex.backend_seconds:
            took += f", {own:.2f} s of it the proxy's own (the mock backend spent {ex.backend_seconds:.2f} s answering)"
        yield Violation(
            f"{took}, the scenario allows {limit} s",
            {"expected": limit, "actual": own, "elapsed": ex.elapsed, "backend_seconds": ex.backend_seconds},
        )
