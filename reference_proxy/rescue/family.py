"""The interface every tool-call text format implements.

A family names the literal openers that start one of its markers; the scanner finds
them and then hands the text, piece by piece from the opener's first character on,
to a fresh parser of each family that claims that opener. The parser answers with a
``Verdict`` whenever it knows something: calls found (and how much of the text was
their markup), text it lets through as it is, or that the marker is over (and where
ordinary scanning resumes).

Positions in verdicts count characters from the opener's first character.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from reference_proxy.rescue.coercion import compact_json
from reference_proxy.rescue.toolbox import Toolbox


class Call:
    """One recognised call: the declared tool's name and its arguments. (A plain class
    with slots, made in C when compiled; see ``Verdict``. Equality, hash and ``repr`` are
    those of the frozen dataclass it was: ``text`` is left out of all three.)"""

    __slots__ = ("name", "arguments", "text")

    def __init__(self, name: str, arguments: Mapping[str, Any], text: str | None = None) -> None:
        self.name = name
        self.arguments = arguments
        self.text = text
        """The arguments' compact JSON, when the family already wrote it to check they have one."""

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Call)
        return self.name == other.name and self.arguments == other.arguments

    def __hash__(self) -> int:
        return hash((self.name, self.arguments))

    def __repr__(self) -> str:
        return f"Call(name={self.name!r}, arguments={self.arguments!r})"

    def arguments_json(self) -> str:
        """The arguments as compact JSON text. Families only build calls whose
        arguments have a JSON form, so failing here is a bug, not bad input."""
        if self.text is not None:
            return self.text
        text = compact_json(dict(self.arguments))
        if text is None:
            raise ValueError(f"arguments of {self.name!r} have no JSON form")
        return text


class Verdict:
    """What a parser learned from the text fed so far. (A plain class with slots: parsers
    make one for nearly every marker. It was a named tuple, which CPython makes faster
    than a frozen dataclass; compiled with mypyc, a named tuple is still made by a
    Python-level ``__new__``, while this class is made in C.)

    ``markup_end`` set: ``calls`` (possibly none, for an empty wrapper) are complete and
    the text before ``markup_end`` is their markup. ``done``: the marker is over; text
    between the last markup and ``resume`` is ordinary text, and scanning for openers
    resumes at ``resume``. Neither (``passing``): the text before ``resume`` is ordinary
    text that this parser keeps to itself (no opener in it counts), and the marker goes
    on; it is sent at once instead of being held until the marker ends.
    """

    __slots__ = ("calls", "markup_end", "done", "resume")

    def __init__(self, calls: tuple[Call, ...] = (), markup_end: int | None = None, done: bool = False,
                 resume: int = 0) -> None:
        self.calls = calls
        self.markup_end = markup_end
        self.done = done
        self.resume = resume

    def _fields(self) -> tuple[tuple[Call, ...], int | None, bool, int]:
        return self.calls, self.markup_end, self.done, self.resume

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Verdict) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Verdict({self.calls!r}, {self.markup_end!r}, {self.done!r}, {self.resume!r})"


def accept(calls: tuple[Call, ...], end: int) -> Verdict:
    """Calls found; the marker ends at ``end``."""
    return Verdict(calls, end, True, end)


def emit(calls: tuple[Call, ...], end: int) -> Verdict:
    """Calls found; the marker may continue after ``end``."""
    return Verdict(calls, end, False, end)


def reject(at: int) -> Verdict:
    """No call (more): the text before ``at`` is ordinary text; rescan from ``at``."""
    return Verdict((), None, True, max(at, 1))


def passing(end: int) -> Verdict:
    """The text before ``end`` is ordinary text, never scanned for openers; more follows."""
    return Verdict((), None, False, end)


class Context:
    """Where an opener was found, for the families whose rules depend on it (one is made
    for every marker: a plain class with slots, made in C when compiled; see ``Verdict``)."""

    __slots__ = ("line_start", "before", "after_call")

    def __init__(self, line_start: bool, before: str, after_call: bool = False) -> None:
        self.line_start = line_start
        """Only blanks precede the opener on its line."""
        self.before = before
        """The character right before the opener; '' at the start of the text or right after markup."""
        self.after_call = after_call
        """Only blanks separate the opener from the markup of a call just recognised."""

    @property
    def after_blank(self) -> bool:
        """The opener follows a blank in the middle of a line: prose, most likely."""
        return not self.line_start and self.before in (" ", "\t")

    def _fields(self) -> tuple[bool, str, bool]:
        return self.line_start, self.before, self.after_call

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Context) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Context({self.line_start!r}, {self.before!r}, {self.after_call!r})"


class MarkerParser(ABC):
    """Parses one marker, fed incrementally from its opener on."""

    waits_for = ""
    """A character the parser is waiting for, or '': while the pieces after the last one
    fed hold no such character, feeding them would return None, and feeding them joined
    later gives what feeding them one by one gives. The rescuer then keeps them aside and
    shows them with the piece that holds the character (a long value's frames cost one
    ``in`` test each). A parser sets it only where nothing but that character can move
    its verdict on, and after every piece it is shown."""

    @abstractmethod
    def feed(self, text: str, start: int = 0) -> Verdict | None:
        """Consume the next piece, ``text[start:]`` (the first piece starts with the
        opener); None while nothing new is known. Taking an offset instead of a slice
        keeps a long text holding many markers from being copied once per marker."""

    @abstractmethod
    def finish(self) -> Verdict:
        """The text ended: a verdict with ``done`` set; or, once, a passing verdict for the
        text before a closing markup, after which ``finish`` is asked again."""


@dataclass(frozen=True, slots=True)
class Opener:
    """A literal that starts a marker, and where it counts."""

    literal: str
    line_start: bool = False
    """Only at the start of a line (after blanks), or of the text."""
    word: bool = False
    """Only where a word may start: not right after an ASCII letter or digit."""
    then: str = ""
    """If set: the first non-blank character after the literal must be one of these."""
    plain: str = ""
    """If set: a regular expression for what may follow the literal to make text that the
    family knows holds no marker (an inline code span without a ``<``). Such text is sent
    at once, without a parser: common syntax costs no more than prose."""


class Family(ABC):
    """A tool-call text format: the openers it claims and a parser factory."""

    name: str
    openers: tuple[Opener, ...]
    formats: tuple[str, ...] = ()
    """The text formats (their ids, as ``docs/formats.md`` lists them) whose calls this
    family reads: selecting any of them enables it. Empty: the family reads no call
    (reasoning blocks, code, left-over closers) and is always on."""

    @abstractmethod
    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        """A parser for a marker starting with ``opener`` found at ``context``."""

    def declines(self, opener: str, s: str, i: int) -> int | None:
        """For an opener several families claim: if what has arrived right after it
        (``s[i:]``, the opener ending at ``i``) already rules this family out, the marker
        position where its parser, shown ``s`` from the opener on, would give up; the
        scanner then starts no parser for it. None: start one. It must answer exactly as
        the parser would (``tests/proxy/test_rescue_properties.py`` checks it does)."""
        return None


# --------------------------------------------------------------------------- helpers for parsers

WS: Final = re.compile(r"[ \t\r\n]*")
MAX_TAG: Final = 512
"""Longest opening tag (with its attributes) a parser waits for before giving up. Every
search a parser starts from a marker's beginning stops this far from it, so markers that
begin again and again in one piece cost a bounded amount each, never the whole piece."""


_WS_MATCH: Final = WS.match  # bound once: compiled, ``WS.match(...)`` looks the method up on every call
_BLANKS: Final = frozenset(" \t\r\n")


def skip_ws(s: str, i: int) -> int:
    """The index of the first non-blank at or after ``i`` (``len(s)`` if none). Most
    callers stand on a non-blank already: that costs no search and no match object."""
    if i < len(s) and s[i] not in _BLANKS:
        return i
    return _WS_MATCH(s, i).end()  # type: ignore[union-attr]


def starts(s: str, i: int, literal: str) -> bool | None:
    """Does ``s[i:]`` start with ``literal``? None: cannot tell yet (``s`` ends first)."""
    # (``s.startswith(literal, i)``, which compiled looks its method up on every call)
    if s.find(literal, i, i + len(literal)) == i:
        return True
    if len(s) - i < len(literal) and literal.startswith(s[i:]):  # slices only a short end
        return None
    return False


class Carry:
    """The unconsumed tail of a parser's input and where it sits in the marker.

    Parsers work on ``tail + new text`` and keep only what they could not decide yet
    (a partial tag), so no text is looked at more than a bounded number of times.
    """

    __slots__ = ("text", "pos", "base", "sent")

    def __init__(self, origin: int = 0) -> None:
        self.text = ""  # kept from earlier pieces
        self.pos = origin  # marker position of ``text[0]``; of the first piece fed, at first
        self.base = 0  # marker position of index 0 of the string ``join`` returned
        self.sent = 0  # marker position up to which ``pass_through`` let the text through

    def join(self, text: str, start: int) -> tuple[str, int]:
        """The string to work on and the index to start at."""
        if self.text:
            self.base = self.pos
            return self.text + text[start:], 0
        self.base = self.pos - start
        return text, start

    def keep(self, s: str, i: int) -> None:
        """Everything before ``s[i]`` (``s`` from ``join``) is consumed."""
        self.pos = self.base + i
        self.text = s[i:]

    @property
    def end(self) -> int:
        """Marker position just after everything fed so far."""
        return self.pos + len(self.text)

    def pass_through(self, s: str, i: int) -> Verdict | None:
        """Keep ``s`` from ``i`` on and let the text before it through as ordinary text (a
        reasoning block, a message to the user), each part once: None when nothing new passes."""
        self.keep(s, i)
        if self.pos <= self.sent:
            return None
        self.sent = self.pos
        return passing(self.pos)


MAX_NAME: Final = 256
"""Longest name (of a tool or a parameter) a parser waits for before giving up."""
NOT_YET, NO_NAME = -1, -2


def name_end(s: str, i: int, end: str, searched: int = 0) -> int:
    """Where ``end`` follows a name that starts at ``s[i]``, looked for from ``i + searched``
    (what was searched before) and only as far as a name of ``MAX_NAME`` characters: its
    index; ``NOT_YET``: not in ``s`` yet; ``NO_NAME``: not where it could be."""
    k = s.find(end, i + searched, i + MAX_NAME + len(end))
    if k < 0 and len(s) - i > MAX_NAME + len(end):
        return NO_NAME
    return k


MAX_GAP: Final = 64
"""Longest run of blanks between a closing tag and the tag that confirms it."""


class CarriedParser(MarkerParser):
    """The steps every parser over carried text shares (see ``Carry``): join the piece to
    what was kept, skip the opener on the first piece, let the family ``scan``, keep what
    it could not decide yet. A text that ends inside the marker is no call, unless the
    family says otherwise in its own ``finish``. A family that reports calls while its
    marker goes on (several calls in one wrapper) sets ``ready`` when it has some, and
    ``report`` answers for them once the piece is kept."""

    ready = False
    """Calls are complete and not yet reported (``report`` says them)."""

    def __init__(self, skip: int = 0, origin: int = 0) -> None:
        """``skip``: how much of the opener the family does not parse; ``origin``: the
        marker position of the first piece's ``start``."""
        self._carry = Carry(origin)
        self._skip = skip

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        # ``Carry.join`` and ``Carry.keep`` written out: every piece of every marker comes
        # through here, and two calls less per piece are a tenth of a short call's cost.
        carry = self._carry
        kept = carry.text
        if kept:
            carry.base = carry.pos
            s = kept + text[start:]
            i = self._skip
        else:
            carry.base = carry.pos - start
            s = text
            i = start + self._skip
        self._skip = 0
        step = self.scan(s, i)
        if isinstance(step, int):
            if step > len(s):
                step = len(s)
            carry.pos = carry.base + step
            carry.text = s[step:]
            return self.report() if self.ready else None
        return step

    def report(self) -> Verdict | None:
        """The calls ``ready`` says are complete, as a verdict (the marker goes on)."""
        return None

    @abstractmethod
    def scan(self, s: str, i: int) -> Verdict | int:
        """Parse ``s`` from ``i`` (``s`` from ``Carry.join``: the marker position of
        ``s[k]`` is ``self._carry.base + k``): a verdict, or the index of the first
        character not decided yet, which is kept for the next piece."""

    def finish(self) -> Verdict:
        return reject(self._carry.end)
