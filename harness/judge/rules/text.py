"""Content rules: the visible text the user reads."""

from __future__ import annotations

import re
from collections.abc import Iterator

from harness.judge.compare import content_equal, first_difference, fold_ws, shorten
from harness.judge.rules import locate
from harness.judge.markup import DEFAULT_MARKERS, find_leaks
from harness.judge.rules.citations import Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group

rule = rule_group("content", "TEXT", profiles=EVERY_PROFILE)


@rule(
    "TEXT-001",
    "The visible text (for xml-client: the text outside the XML calls, where a line break and a space are alike, as "
    "the proxy lays its calls out on lines of their own) equals `expect.content` (`expect.error.content` "
    "when an in-stream error the scenario accepts ended the answer), compared with the ends "
    "trimmed, CRLF read as LF and each inner run of white space folded to one newline when it holds a line break, "
    "else to one space (byte for byte with `content_exact`).",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "a client shows, and sends back in its history, exactly "
                  "the text it receives: lost, doubled or altered text is what the user reads and the model is "
                  "sent next (openai-python's accumulated `message.content`, read by SDK-002, holds the same text)",
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); VS Code Copilot not re-checked"),
)
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


@rule(
    "TEXT-002",
    "The content matches `expect.content_regex` (unless an in-stream error the scenario accepts, with its "
    "`expect.error.content`, ended the answer: TEXT-001 then judges that text).",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "a client shows, and sends back in its history, exactly "
                  "the text it receives (openai-python's accumulated `message.content`, read by SDK-002)",
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); VS Code Copilot not re-checked"),
)
def content_regex(ctx: Context) -> Iterator[Violation]:
    pattern = ctx.expected_regex
    if pattern is not None and re.search(pattern, ctx.answer.content, re.DOTALL) is None:
        yield Violation(
            f"content {shorten(ctx.answer.content, 160)} does not match /{pattern}/",
            {"expected": pattern, "actual": ctx.answer.content},
        )


@rule(
    "TEXT-003",
    "No tool-call markup (`<tools>`, `<tool_call>`, `<function_calls>`, `<invoke`, `<parameter`, `<function=`, "
    "```` ```tool_code ````, the scenario's markers) reaches the visible text beyond what the expected "
    "content itself holds.",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "the markup stays in the content: openai-python's "
                  "`message.content` holds it for the application to show, and every client, Copilot included, "
                  "sends it back to the model in the history next to the structured call it was turned into",
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current) keeps the markup in `message.content`, "
                  "beside the call it became; VS Code Copilot not re-checked"),
)
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


@rule(
    "TEXT-004",
    "A native call of the backend whose arguments are no JSON object is not lost: it reaches the client as a call "
    "with those arguments exactly, or its arguments as text, or the answer ends with an error.",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "the model's call vanishes without a word: the client "
                  "shows an answer with neither the call nor its text, and sends the model a history in which it "
                  "never made the call",
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); VS Code Copilot not re-checked"),
)
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
