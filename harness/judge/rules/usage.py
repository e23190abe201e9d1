"""Usage rules: the usage chunk of a stream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.judge.rules.context import Context
from harness.judge.rules.locate import end_of_stream
from harness.judge.rules.registry import Violation, rule_group

rule = rule_group("usage", "USAGE", stage="stream")


def _requested(ctx: Context) -> bool:
    options = ctx.exchange.request_body.get("stream_options")
    return isinstance(options, Mapping) and options.get("include_usage") is True


def _usage_chunks(ctx: Context) -> list[int]:
    """Positions (in ``ctx.chunks``) of usage chunks: no choices, a usage object."""
    return [
        i
        for i, (_, chunk) in enumerate(ctx.chunks)
        if chunk.get("choices") == [] and isinstance(chunk.get("usage"), Mapping)
    ]


@rule("USAGE-001", ending=True)
def usage_when_requested(ctx: Context) -> Iterator[Violation]:
    if not _requested(ctx):
        return
    found = _usage_chunks(ctx)
    if not found:
        done = ctx.stream.done_event
        where = ctx.at_event(done) if done is not None else end_of_stream(ctx)
        yield Violation("include_usage was requested but no usage chunk was sent", {"expected": "a usage chunk", **where})
    elif found[-1] != len(ctx.chunks) - 1:
        p = ctx.chunks[found[-1]][0]
        yield Violation(f"the usage chunk (event {p.event.index}) is not the last chunk", ctx.at(p))


@rule("USAGE-002")
def no_usage_unasked(ctx: Context) -> Iterator[Violation]:
    if _requested(ctx):
        return
    for i in _usage_chunks(ctx):
        p = ctx.chunks[i][0]
        yield Violation(f"event {p.event.index} is a usage chunk the client did not ask for", ctx.at(p))
