"""What the tag-shaped families read between their openers and closers: which tag comes
next (``Tags``) and a value written as bare text up to its closing tag (``TextValue``).

Qwen3-Coder, Seed-OSS, GLM, invoke XML (MiniMax M2, DSML), MiniMax M3, Kimi K3's XTML and
the DeepSeek and Kimi sections all write calls as tags around names and values; each family
keeps its own states, and asks these the same questions several times per call. Their
literals are compiled once per dialect, so a question about a tag that is all there is one
regular-expression match.
"""

from __future__ import annotations

import re
from typing import Final

from reference_proxy.rescue.family import MAX_GAP, NOT_YET, skip_ws, starts


def which(s: str, i: int, literals: tuple[str, ...]) -> int | None:
    """Which of ``literals`` does ``s[i:]`` start with: the first one's index; -1: none of
    them; None: cannot tell yet (``s`` ends first, and no literal before matched)."""
    undecided = False
    for k, literal in enumerate(literals):
        found = starts(s, i, literal)
        if found:
            return k
        undecided = undecided or found is None
    return None if undecided else -1


NO_TAG: Final = -2


class Tags:
    """The tags that may come next in a parser's state, after blanks, and the state each
    one leads to (by default its index). Most of the time the text holds the whole tag,
    and one regular-expression match tells which tag it is and where it ends; only text
    that ends before that can be told (or that holds none of them) is looked at the slow
    way, literal by literal, with the same answers. Every tag-shaped family asks these
    questions between its values, several times per call."""

    __slots__ = ("literals", "states", "_next", "_here", "_longest")

    def __init__(self, literals: tuple[str, ...], states: tuple[int, ...] = ()) -> None:
        self.literals = literals
        self.states = states or tuple(range(len(literals)))
        # Each literal its own group, in order: the first that matches wins, as in ``which``.
        choice = "|".join(f"({re.escape(literal)})" for literal in literals)
        self._next = re.compile(rf"[ \t\r\n]*+(?:{choice})").match
        self._here = re.compile(choice).match
        self._longest = max(len(literal) for literal in literals)

    def next(self, s: str, i: int) -> tuple[int, int]:
        """Which tag comes next in ``s`` after blanks from ``i``: the index after it and the
        state it leads to; else where the blanks end and ``NOT_YET`` (``s`` ends first) or
        ``NO_TAG`` (none of them)."""
        m = self._next(s, i)
        if m is not None:
            return m.end(), self.states[m.lastindex - 1]  # type: ignore[operator]
        i = skip_ws(s, i)
        if i >= len(s):
            return i, NOT_YET
        if len(s) - i >= self._longest:  # room for every tag: none of them is here
            return i, NO_TAG
        k = which(s, i, self.literals)
        if k is None:
            return i, NOT_YET
        if k < 0:
            return i, NO_TAG
        return i + len(self.literals[k]), self.states[k]

    def which(self, s: str, i: int) -> int | None:
        """``which`` of the literals (no blanks skipped): the first one's index that ``s[i:]``
        starts with; -1: none; None: cannot tell yet."""
        m = self._here(s, i)
        if m is not None:
            return m.lastindex - 1  # type: ignore[operator]
        if len(s) - i >= self._longest:  # room for every tag: none of them is here
            return -1
        return which(s, i, self.literals)

    def confirmed(self, s: str, i: int) -> bool | None:
        """Is a closing tag that ends at ``s[i]`` real? Only when, after at most ``MAX_GAP``
        blanks, one of the tags comes next (a value may itself hold the closing tag: file
        content that documents the format). None: cannot tell yet (``s`` ends first)."""
        m = self._next(s, i)
        if m is not None:
            return m.start(m.lastindex) - i <= MAX_GAP  # type: ignore[arg-type]
        j = skip_ws(s, i)
        if j - i > MAX_GAP:
            return False
        if j == len(s):
            return None
        if len(s) - j >= self._longest:  # room for every tag: none of them is here
            return False
        k = which(s, j, self.literals)
        return None if k is None else k >= 0


class TextValue:
    """A value written as bare text up to its closing tag, read piece by piece."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[str] = []

    def read(self, s: str, i: int, closer: str, follows: Tags | None = None) -> tuple[int, str | None]:
        """Reads ``s[i:]`` up to ``closer`` (the first one that ``follows`` confirms, if
        given): the index after the closer and the whole value; or, the closer not (surely)
        there yet, the index where the undecided text starts (to be carried) and None."""
        j = s.find(closer, i)
        real: bool | None = True
        if follows is not None:
            while j >= 0:  # a closing tag inside the value is followed by none of ``follows``
                real = follows.confirmed(s, j + len(closer))
                if real is not False:
                    break
                j = s.find(closer, j + 1)
        if j < 0:
            keep = max(i, len(s) - len(closer) + 1)  # the closer may be cut at the piece's end
            self.parts.append(s[i:keep])
            return keep, None
        self.parts.append(s[i:j])
        if real is None:
            return j, None
        value = "".join(self.parts)
        self.parts = []
        return j + len(closer), value
