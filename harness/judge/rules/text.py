"""Content rules: the visible text the user reads."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harness.judge.compare import content_equal, first_difference, fold_ws, shorten
from harness.judge.rules import locate
from harness.judge.markup import DEFAULT_MARKERS, find_leaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group

rule = rule_group("content", "TEXT", profiles=EVERY_PROFILE)


@rule("TEXT-001")
def expected_content(ctx: Context) -> Iterator[Violation]:
    expected = ctx.expected_content
    if expected is None:
        return
    actual = ctx.visible_text
    exact = ctx.expect.content_exact
    differs = first_difference(expected, actual, exact=exact)
    if differs is not None and not content_equal(expected, actual, exact=exact, lines_are_layout=ctx.reads_xml):
        shown_e, shown_a = (expected, actual) if exact else (fold_ws(expected), fold_ws(actual))
        yield Violation(
            f"content {shorten(shown_a, 160)}, expected {shorten(shown_e, 160)} (they part at character {differs})",
            {"expected": expected, "actual": actual, "exact": exact, **locate.visible(ctx, differs)},
        )


@rule("TEXT-002")
def content_regex(ctx: Context) -> Iterator[Violation]:
    pattern = ctx.expected_regex
    text = ctx.visible_text  # for xml-client, the calls it reads out of the content are not text
    if pattern is not None and re.search(pattern, text, re.DOTALL) is None:
        yield Violation(
            f"content {shorten(text, 160)} does not match /{pattern}/",
            {"expected": pattern, "actual": text},
        )


@rule("TEXT-003")
def no_markup_leak(ctx: Context) -> Iterator[Violation]:
    text = ctx.visible_text
    for leak in find_leaks(text, (*DEFAULT_MARKERS, *ctx.expect.markers), ctx.allowed_markup):
        around = text[max(0, leak.offset - 30) : leak.offset + 50]
        allowed = f", {leak.allowed} expected" if leak.allowed else ""
        yield Violation(
            f"{leak.marker!r} appears {leak.found} time(s) in the text{allowed}: …{shorten(around, 100)}…",
            {"marker": leak.marker, "found": leak.found, "allowed": leak.allowed, "excerpt": around,
             **locate.visible(ctx, leak.offset)},
        )


@rule("TEXT-004")
def broken_call_kept(ctx: Context) -> Iterator[Violation]:
    if ctx.exchange.status != 200 or ctx.error_accepted or ctx.answer.error is not None:
        return
    delivered = {call.arguments for call in ctx.answer.tool_calls}
    text = fold_ws(ctx.visible_text)
    for arguments in sorted(ctx.broken_backend_arguments):
        if arguments not in delivered and fold_ws(arguments) not in text:
            count = len(ctx.answer.tool_calls)
            calls = ("no call arrived" if not count
                     else f"none of the {count} call(s) that arrived carries them exactly")
            yield Violation(
                f"the backend's call with arguments {shorten(arguments, 100)} is lost: {calls}, the text does not "
                "hold them, and the answer did not end with an error",
                {"arguments": arguments, **locate.visible(ctx, len(ctx.visible_text))},
            )
