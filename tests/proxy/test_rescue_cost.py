"""The rescue parser's work grows with the text, never with its square.

Work is counted, not timed: characters looked at, measured by meters wrapped around the
places where text can be looked at again. Text that twice as long must cost at most
about twice the work; each meter is first shown to catch a parser built to read its
text again, so a check that passes is one that could have failed.

- Streamed one character at a time (``streamed_work``): the characters a parser takes
  up again from earlier pieces (``Carry.join``), the text the scanner held back and
  takes up again (``Rescuer._feed``), and the strings it searches for openers
  (``Rescuer._scan``, nested rescuers of fences included). A parser that keeps a
  growing part of its marker shows up here.
- Fed whole (``whole_work``): the characters ``str.find`` looks at in the piece. A
  search from each marker's start to the end of the piece shows up here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from reference_proxy.rescue import COMPILED, Rescuer, scanner
from reference_proxy.rescue.families.code import MAX_FENCE_LINE, MAX_INFO, MAX_SPAN
from reference_proxy.rescue.family import Carry, Context, Family, MarkerParser, Opener, Verdict, reject
from reference_proxy.rescue.openers import Openers
from reference_proxy.rescue.toolbox import Toolbox
from support.rescue import ALL

pytestmark = pytest.mark.skipif(
    COMPILED, reason="the meters patch the parser's methods and subclass its classes, which mypyc-compiled "
    "classes refuse; the work they count is the source's, the same in either build, counted on the pure one")

Make = Callable[[int], str]


def linear(small: int, large: int) -> bool:
    """Twice the text, at most about twice the work (four times would be quadratic)."""
    return large <= 2.2 * small + 100


def streamed_work(text: str, openers: Openers | None = None) -> int:
    """Characters looked at again while ``text`` is fed one character at a time."""
    work = 0
    join, feed, scan = Carry.join, Rescuer._feed, Rescuer._scan

    def counted_join(carry: Carry, piece: str, start: int) -> tuple[str, int]:
        nonlocal work
        work += len(carry.text)
        return join(carry, piece, start)

    def counted_feed(rescuer: Rescuer, piece: str) -> Any:
        nonlocal work
        work += len(rescuer._pending)
        return feed(rescuer, piece)

    def counted_scan(rescuer: Rescuer, s: str, out: Any) -> None:
        nonlocal work
        work += len(s)
        scan(rescuer, s, out)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Carry, "join", counted_join)
        patch.setattr(Rescuer, "_feed", counted_feed)
        patch.setattr(Rescuer, "_scan", counted_scan)
        rescuer = Rescuer(ALL, openers=openers)
        for ch in text:
            rescuer.feed(ch)
        rescuer.finish()
    return work


class CountedText(str):
    """A piece that counts the characters ``find`` looks at in it."""

    examined = 0

    def find(self, sub: str, start: Any = None, end: Any = None, /) -> int:  # type: ignore[override]
        lo = 0 if start is None else start
        hi = len(self) if end is None else min(end, len(self))
        found = str.find(self, sub, lo, hi)
        CountedText.examined += max((found + len(sub) if found >= 0 else hi) - lo, 0)
        return found


def whole_work(text: str, openers: Openers | None = None) -> int:
    """Characters ``str.find`` looks at while ``text`` is fed in one piece."""
    CountedText.examined = 0
    rescuer = Rescuer(ALL, openers=openers)
    rescuer.feed(CountedText(text))
    rescuer.finish()
    return CountedText.examined


# --------------------------------------------------------------------------- the meters can fail


class Rereading(Family):
    """Markers opened by "~" whose parser reads all of its marker again on every piece,
    as a parser keeping a growing part of it would: the work the meters must catch."""

    name = "rereading"
    openers = (Opener("~"),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return RereadingParser()


class RereadingParser(MarkerParser):
    def __init__(self) -> None:
        self._carry = Carry()

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        s, i = carry.join(text, start)
        opener = max(-carry.base, 0)
        s.find("\0", opener)  # a search from the marker's start to the end of the piece
        end = s.find("\n", i)
        if end >= 0:
            return reject(carry.base + end + 1)
        carry.keep(s, opener)  # everything from the opener kept for the next piece
        return None

    def finish(self) -> Verdict:
        return reject(self._carry.end)


@pytest.mark.parametrize("meter", [streamed_work, whole_work], ids=["streamed", "whole"])
def test_the_meters_catch_text_read_again(meter: Callable[[str, Openers | None], int]) -> None:
    """A parser that reads its marker again on every piece, or searches from every
    marker to the end of the piece, fails the check the parser is held to below."""
    openers = Openers([Rereading()])
    text: Make = (lambda k: "~" + "x" * 4 * k) if meter is streamed_work else (lambda k: "~x\n" * 2 * k)
    small, large = meter(text(500), openers), meter(text(1000), openers)
    assert small > 0 and not linear(small, large), (small, large)


# --------------------------------------------------------------------------- the parser

# Every opener, in the contexts where it counts, repeated: markers that begin again and
# again, each given up or settled.
_OPENER_UNITS = sorted(
    {unit for literal in scanner._OPENERS.specs for unit in (literal, literal + " ", "\n" + literal, literal + "\n")}
)
# More of each family: a marker that gets further before it fails.
_MARKER_UNITS = [
    '<invoke name="', "<tool_call>\n<function=", "<tool_call><function=x", "<parameter ", "<tools>[{",
    "count\n<invoke ", "```tool_code", "```tool_code\n{", "```\n", "```\n<invoke ", "``` ", "`x", "\n{\"name\": ",
]
STREAMED: list[tuple[str, Make]] = [
    *((f"repeated {unit!r}", (lambda u: lambda k: u * k)(unit)) for unit in _OPENER_UNITS + _MARKER_UNITS),
    # One long backtick run, wherever it starts, and one on a fence's line.
    ("backtick run", lambda k: "`" * 8 * k),
    ("backtick run after a line", lambda k: "x\n" + "`" * 8 * k),
    ("backtick run mid-line", lambda k: "x " + "`" * 8 * k),
    ("fence of a long run", lambda k: "`" * 8 * k + "\nx\n"),
    ("long backtick line in a fence", lambda k: "```\n" + "`" * 8 * k + "\n"),
    ("long indentation in a fence", lambda k: "```\n" + " " * 8 * k + "```\n"),
    ("fence line starts at the limit", lambda k: "```\nx\n" + ("`" * (MAX_FENCE_LINE + 1) + "\n") * k),
    ("info strings at the limit", lambda k: ("```" + "i" * MAX_INFO + "\n") * k),
    ("spans at the limit", lambda k: ("`" + "x" * (MAX_SPAN - 2) + "``") * k),
]


@pytest.mark.parametrize(("name", "text"), STREAMED, ids=[name for name, _ in STREAMED])
def test_streamed_text_costs_in_proportion_to_its_length(name: str, text: Make) -> None:
    """One character at a time, twice the text is at most about twice the work."""
    small, large = streamed_work(text(500)), streamed_work(text(1000))
    assert small > 0 and linear(small, large), (small, large)


WHOLE: Sequence[str] = ["<invoke ", '<invoke name="', "<tool_call>\n<function=", "<tool_call><function=x", "```tool_code"]


@pytest.mark.parametrize("unit", WHOLE)
def test_markers_cost_the_same_wherever_they_start(unit: str) -> None:
    """Markers that begin again and again in one piece: twice the text, twice the work
    (a search from each start to the end of the piece would make it four times)."""
    small, large = whole_work(unit * 1000), whole_work(unit * 2000)
    assert small > 0 and linear(small, large), (small, large)
