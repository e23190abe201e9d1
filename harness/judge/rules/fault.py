"""Fault rules: upstream failures and misbehaving clients, in both dialects.

When the backend fails (an error status, a dropped connection, a stall, a stream
without its terminator) or the client sends something broken, a proxy must still
give the client an answer it can act on: an error in the client's own dialect, at
the place the scenario expects it, with every piece of text already received, and
it must go on serving afterwards. A call cut off by the fault must never reach the
client half-made: TOOL-006 (chat completions) and AEV-010 (Messages) judge that; the
time limit is HTTP-006's.
"""

from __future__ import annotations

import json

from collections.abc import Iterator, Sequence

from harness.judge.compare import fold_ws, matched_prefix, shorten
from harness.judge.rules import locate
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, OPENAI_PROFILES, RESPONSES, Violation, rule_group
from harness.judge.rules.schemas import error_body

rule = rule_group("faults", "FAULT", profiles=EVERY_PROFILE)



def _is_2xx(status: int) -> bool:
    return 200 <= status < 300


def _wanted(ctx: Context) -> str:
    """The expected error, in words."""
    want = ctx.expect.error
    assert want is not None
    statuses = f"status {' or '.join(map(str, want.status))}" if want.status else "an error status"
    if not ctx.exchange.stream or want.in_stream == "forbidden":
        return statuses
    if want.in_stream == "required":
        return "an error event inside the stream"
    return f"{statuses} or an error event inside the stream"


def _error_object(raw: bytes) -> bool:
    """Whether ``raw`` is a JSON object holding an ``error`` member."""
    try:
        body = json.loads(raw)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body


@rule("FAULT-001", stage="response")
def expected_error_arrives(ctx: Context) -> Iterator[Violation]:
    want = ctx.expect.error
    status = ctx.exchange.status
    if want is None or status is None:
        return
    excerpt = ctx.excerpt
    if not _is_2xx(status):
        if (want.status and status not in want.status and not _same_sdk_error(ctx, status, want.status)) or (
                not want.status and status < 400):
            yield Violation(
                f"status {status}, expected {_wanted(ctx)}: {excerpt!r}",
                {"expected": list(want.status), "actual": status, "excerpt": excerpt},
            )
        return
    if ctx.stream_errors:
        return  # FAULT-002 judges whether the stream was the place for it
    if want.optional:
        return  # a normal answer is the other acceptable outcome (the content rules judge it)
    what = "a stream that reports no error" if ctx.kind == "sse" else "a body that reports no error"
    if ctx.kind != "sse" and _error_object(ctx.exchange.raw):
        # The body does say "error", but under a 200 every SDK reads it as an answer, never raises it.
        what = "an `error` object in its body, which clients read as an answer (an error needs an error status)"
    yield Violation(
        f"no error reached the client: status {status} with {what}; expected {_wanted(ctx)}",
        {"expected": _wanted(ctx), "actual": status, "excerpt": shorten(ctx.answer.content, 200),
         **locate.finish(ctx)},
    )


@rule("FAULT-002", stage="response")
def error_placement(ctx: Context) -> Iterator[Violation]:
    policy = ctx.in_stream_policy
    if ctx.stream_errors and policy == "forbidden" and ctx.fault_case:
        event = ctx.stream_errors[0]
        instead = f"expects {_wanted(ctx)}" if ctx.expect.error is not None else "expects no error"
        yield Violation(
            f"event {event.index} reports an error inside the stream; the scenario {instead}",
            ctx.at_event(event),
        )


def _same_sdk_error(ctx: Context, status: int, wanted: Sequence[int]) -> bool:
    """Whether the client's official SDK raises the same error class for ``status`` as for one of the
    ``wanted`` ones (a 502 for a 500: openai-python raises InternalServerError for both, and retries both)."""
    raised = ctx.dialect.sdk_error(status)
    return raised is not None and any(ctx.dialect.sdk_error(w) == raised for w in wanted)


def _relayed_unchanged(ctx: Context, text: str) -> bool:
    """Whether the answer is the backend's own error body, passed on with the backend's status. Its line
    breaks and spacing aside: llm-toolcall-proxy relays each line of the page as an SSE line (a blank line
    after each), and openai-python raises the same error with the same page text either way."""
    fault = ctx.scenario.backend.fault
    if fault is None or fault.kind != "http_error" or fault.status != ctx.exchange.status:
        return False
    # Only a text body: a JSON one is read for its error message whoever wrote it.
    return isinstance(fault.body, str) and text.split() == fault.body.split()


@rule("FAULT-003", stage="response", profiles=OPENAI_PROFILES | RESPONSES)  # openai-python reads them; see the catalogue
def error_body_dialect(ctx: Context) -> Iterator[Violation]:
    status = ctx.exchange.status
    if not ctx.fault_case or status is None or _is_2xx(status):
        return
    raw = ctx.exchange.raw
    text = raw.decode("utf-8", "replace")
    if _relayed_unchanged(ctx, text):
        return
    excerpt = text[:200]
    content_type = ctx.exchange.response_headers.get("content-type", "")
    if "html" in content_type.lower() or text.lstrip()[:15].lower().startswith(("<!doctype html", "<html")):
        yield Violation(f"status {status} with an HTML page ({content_type!r}): {excerpt!r}", {"excerpt": excerpt})
        return
    # What the SDKs read; the dialect's full shape (a Messages error's `"type": "error"`) is ERR-002/AERR-002's.
    yield from error_body(ctx, status, f"status {status}: the body holds no error message: ", "client_error")


@rule("FAULT-004", stage="stream", profiles=OPENAI_PROFILES)
def done_after_error(ctx: Context) -> Iterator[Violation]:
    errors = ctx.stream_errors
    if not errors:
        return
    done = ctx.stream.done_event
    if done is None or done.index < errors[0].index:
        yield Violation(
            f"the error chunk of event {errors[0].index} is not followed by 'data: [DONE]'", ctx.at_event(errors[0])
        )


@rule("FAULT-005", stage="response")
def retry_after(ctx: Context) -> Iterator[Violation]:
    fault = ctx.scenario.backend.fault
    status = ctx.exchange.status
    if fault is None or fault.kind != "http_error" or fault.status != 429 or status is None or _is_2xx(status):
        return
    sent = next((v for k, v in fault.headers.items() if k.lower() == "retry-after"), None)
    if sent is None:
        return
    got = ctx.exchange.response_headers.get("retry-after")
    if got is None:
        yield Violation(
            f"the backend's 429 carried Retry-After: {sent}; the client's {status} has none",
            {"expected": sent, "actual": None},
        )
    elif got.strip() != sent.strip():
        yield Violation(
            f"Retry-After is {got!r}, the backend sent {sent!r}", {"expected": sent, "actual": got}
        )


@rule("FAULT-006", stage="answer")
def text_flushed(ctx: Context) -> Iterator[Violation]:
    expected = ctx.expected_content
    if ctx.scenario.backend.fault is None or expected is None:
        return
    exact = ctx.expect.content_exact
    want, got = (expected, ctx.visible_text) if exact else (fold_ws(expected), fold_ws(ctx.visible_text))
    if len(got) >= len(want):
        return  # a different text of full length is TEXT-001's finding
    same = matched_prefix(expected, ctx.visible_text, exact=exact)[0]
    yield Violation(
        f"the client got {len(got)} of the {len(want)} characters sent before the fault; missing from "
        f"character {same}: {shorten(expected[same:], 160)}",
        {
            "expected": expected,
            "actual": ctx.visible_text,
            "missing": expected[same:],
            **locate.visible(ctx, len(ctx.visible_text)),
        },
    )


@rule("FAULT-007", stage="always")
def proxy_survives(ctx: Context) -> Iterator[Violation]:
    if not ctx.expect.proxy_survives:
        return
    ex = ctx.exchange
    if ex.survived is None:
        yield Violation("the survival probe was not made, so the proxy's survival is unknown", {"expected": True})
    elif not ex.survived:
        detail = f": {ex.survival_detail}" if ex.survival_detail else ""
        yield Violation(
            f"the proxy no longer answers a plain request after this exchange{detail}",
            {"expected": True, "actual": False, "detail": ex.survival_detail},
        )


@rule("FAULT-008", stage="always")
def failure_reported_not_cut(ctx: Context) -> Iterator[Violation]:
    if ctx.cut_where_failure_expected:
        error = ctx.exchange.transport_error
        yield Violation(f"the proxy answered 200, then cut the connection: {error}",
                        {"actual": error, **locate.end_of_stream(ctx)})
