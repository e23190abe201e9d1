"""The text around the calls: what the client must see exactly as written (white
space folded), however the proxy rescues the calls beside it.

Prose mixes ASCII, CJK, emoji (four-byte UTF-8, ZWJ sequences), literal escapes,
whole code fences and inline code, and markup look-alikes that start like an opener
and are not one. It never holds what any format could read as a call: no JSON object
with a ``name`` key, no opener outside an inline code span, no unclosed fence or span.
A mention of a format's own delimiters (in an inline code span) is drawn separately
and only placed after the last call, where no correct parser can mistake it for the
start of a later call.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from hypothesis import strategies as st

WORDS: tuple[str, ...] = (
    "the", "result", "is", "ready", "Let", "me", "check", "that", "first", "then", "I'll", "look", "at", "file",
    "weather", "tests", "pass", "done.", "OK,", "now", "run", "it", "again", "—", "see", "below:", "e.g.",
)
UNICODE: tuple[str, ...] = (
    "天気を確認します", "我先看看", "한국어", "café", "naïve", "Straße", "😀", "🚀", "👍🏽", "👨‍👩‍👧", "🇫🇷",
    "∑x²", "→", "…", "é", "\u00a0", "\u200b",
)
ESCAPES: tuple[str, ...] = ("\\n", "\\t", "\\u00e9", '\\"quoted\\"', "C:\\temp\\new", "\\\\", "%s", "{0}", "$HOME")
LOOKALIKES: tuple[str, ...] = (
    "<b>bold</b>", "a < b", "x > y", "<div class=\"note\">", "</p>", "<br/>", "List<String>", "<3",
    "<!-- note -->", "<toolbox>", "<tool>", "<functions>", "<invoker>", "<param>", "< tool_call >", "[1, 2]",
    '{"a": 1}', "`code`", "**bold**", "# heading", "| a | b |", "->", "=>", "<=",
)
FENCES: tuple[str, ...] = (
    "```python\nprint('hi')\n```", "```bash\nls -la\n```", "```json\n{\"ok\": true}\n```", "```\nplain block\n```",
)


@cache
def tokens(wide: bool = False) -> st.SearchStrategy[str]:
    """Words, Unicode, escapes and look-alikes; ``wide``: mostly multi-byte characters."""
    if wide:
        return st.one_of(st.sampled_from(UNICODE), st.sampled_from(UNICODE), st.sampled_from(WORDS))
    return st.one_of(
        st.sampled_from(WORDS), st.sampled_from(UNICODE), st.sampled_from(ESCAPES), st.sampled_from(LOOKALIKES),
    )


@cache
def _token_lists(wide: bool, max_tokens: int) -> st.SearchStrategy[list[str]]:
    return st.lists(tokens(wide), max_size=max_tokens)


@cache
def _separators(count: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from([" ", " ", " ", "\n", "\n\n", ""]), min_size=count, max_size=count)


_NOW_AND_THEN = st.integers(0, 5)
_FENCE = st.sampled_from(FENCES)


@st.composite
def segments(draw: st.DrawFn, max_tokens: int = 12, wide: bool = False) -> str:
    """One stretch of prose between calls (may be empty). Its strategies are built once
    (``_token_lists``, ``_separators``): one built per draw is validated on each draw."""
    parts = draw(_token_lists(wide, max_tokens))
    seps = draw(_separators(len(parts)))
    text = "".join(p + s for p, s in zip(parts, seps))
    if draw(_NOW_AND_THEN) == 5:  # now and then; the highest value, so shrinking drops it
        text += "\n" + draw(_FENCE) + "\n"
    return text


@cache
def mentions(delimiters: tuple[str, ...]) -> st.SearchStrategy[str]:
    """A sentence naming one of a format's delimiters in an inline code span."""
    usable = [d.strip() for d in delimiters if d.strip() and "`" not in d]
    if not usable:
        return st.just("")
    return st.sampled_from(usable).map(lambda d: f"The format starts calls with `{d}`, as above.")
