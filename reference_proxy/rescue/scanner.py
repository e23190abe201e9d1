"""The rescuer: text in, text and tool-call events out, incrementally.

Two modes. Scanning text, it looks for the openers of all families; text that cannot
start a marker is released at once, and only a trailing piece that is a prefix of an
opener is held. At an opener it starts a parser of every family claiming it and
buffers the marker until a parser recognises calls or all of them give up; given-up
text is released and scanned again from where the parsers said. A lone parser that waits
for one character (``MarkerParser.waits_for``: inside a long value) is shown the pieces
without it only together with the piece that brings it.

Linear cost, whatever the size of the pieces: the common case (a piece holding no
character that could start an opener) is a few C-level string operations; otherwise
the text is searched group by group with literal-prefixed patterns, each resuming
where it stopped (``openers.Cursor``); only a bounded trailing piece is ever searched
again. Parsers keep their own state and look at new text only; markers are passed as
(text, offset), never sliced off a long text. The only text looked at twice is a
given-up marker's text after its resume point, which parsers keep short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Final

from reference_proxy.rescue.events import (
    ArgumentsDelta, Event, RescuedCall, ToolCallEnd, ToolCallStart, ToolSpec, collect,
)
from reference_proxy.rescue.families import FORMAT_IDS, families_for
from reference_proxy.rescue.family import Call, Context, Family, MarkerParser, Verdict
from reference_proxy.rescue.openers import WORD_CHARS as _WORD_CHARS
from reference_proxy.rescue.openers import Cursor, Openers
from reference_proxy.rescue.toolbox import Toolbox


def _nested(tools: Toolbox, openers: Openers) -> Rescuer:
    """A rescuer for a fenced block's content, without a cap of its own (the outer rescuer's holds)."""
    return Rescuer(tools, buffer_cap=1 << 62, openers=openers, keep_calls=True)


FAMILIES: Final[tuple[Family, ...]] = families_for(None, nest=_nested)
"""Every family, in priority order."""
_OPENERS: Final = Openers(FAMILIES)
_FIRST_LOOK: Final = 1024
"""How much of a longer piece a marker's parsers are shown at first (``_advance_in_steps``)."""
# ``Rescuer.feed`` and ``Rescuer._feed`` have shortcuts for plain text written for
# today's openers (a chain of ``in`` tests is several times cheaper than any general
# search on short pieces). If the families change so that they no longer fit, the
# shortcuts switch off and everything goes through the general scanner: still
# correct, only slower, until the shortcuts are extended.
SHORTCUTS = _OPENERS.signal_chars == "<[]`" and _OPENERS.words == ("count", "court")
_WORD_PREFIXES: Final = _OPENERS.word_prefixes
_WORD_PREFIX_ENDS: Final = "".join(sorted({prefix[-1] for prefix in _WORD_PREFIXES}))
_LINE_HERE_FIRSTS: Final = _OPENERS.line_here_firsts  # a ``_LINE_HERE`` match starts with one of these
_LINE_RISK: Final = _OPENERS.line_risk.search
_LINE_RISK_HINT: Final = _OPENERS.line_risk_hint.search  # matches wherever ``_LINE_RISK`` does, and costs less
_LINE_OPENER: Final = _OPENERS.line_after_newline.search
_LINE_HERE: Final = _OPENERS.line_here.match
_LINE_BEGUN: Final = _OPENERS.line_begun.fullmatch  # from the last line's start: ``Openers.last_line_begun``
_LINE_BEGUN_ENDS: Final = _OPENERS.line_begun_ends
_WORD_OPENER = _OPENERS.group_by_first["c"].search if SHORTCUTS else None


def _court_ends(text: str) -> bool:
    """Whether ``text`` ends in "court" (blanks after it allowed). "court" opens a marker
    only right before ``<invoke``, and a piece on the fast path holds no such ``<``, so
    only a "court" at its end can matter: no second search through every piece."""
    return text.rstrip(" \t\r\n").endswith("court")


def _merged(events: list[Event]) -> list[Event]:
    """Consecutive Text events joined into one."""
    if len(events) < 2:
        return events
    out: list[Event] = []
    texts: list[str] = []
    for event in events:
        if isinstance(event, str):
            if event:
                texts.append(event)
            continue
        if texts:
            out.append("".join(texts))
            texts = []
        out.append(event)
    if texts:
        out.append("".join(texts))
    return out


class Rescuer:
    """Turns tool calls a backend wrote as text into tool-call events.

    Feed text as it arrives, in pieces of any size; call ``finish`` at the end of the
    stream. Only calls to tools in ``tools`` are extracted; with no tools everything is
    passed through untouched.

    A marker may hold at most ``buffer_cap`` characters: one that is not settled within
    ``buffer_cap`` characters of where it (or its last call) began is given up, its first
    ``buffer_cap`` characters are released as text, scanning goes on after them, and
    ``overflowed`` is set. The parsers are never shown text past that point, so the
    outcome depends on positions only: a marker is overflowed or not whatever the size
    of the pieces, streamed or whole.

    ``openers`` replaces the default families (the code family scans the inside of a
    fenced block with the others); the plain-text shortcuts are then off. With
    ``keep_calls``, the calls recognised are also kept as ``Call``s for ``take_calls``
    (the code family takes a fence's calls so, without reading their JSON back).
    """

    __slots__ = (
        "buffer_cap",
        "overflowed",
        "calls_emitted",
        "_tools",
        "_passthrough",
        "_openers",
        "_plain",
        "_pending",
        "_line_blank",
        "_last",
        "_parsers",
        "_held",
        "_held_start",
        "_fed",
        "_given",
        "_cut",
        "_resume",
        "_fast",
        "_kept",
        "_after_call",
        "_unshown",
    )

    def __init__(
        self,
        tools: Sequence[ToolSpec] | Toolbox,
        *,
        buffer_cap: int = 65536,
        openers: Openers | None = None,
        keep_calls: bool = False,
    ) -> None:
        self.buffer_cap = buffer_cap
        self.overflowed = False
        self.calls_emitted = 0
        self._tools = tools if isinstance(tools, Toolbox) else Toolbox(tools)
        self._passthrough = not self._tools
        self._openers = _OPENERS if openers is None else openers
        self._fast = SHORTCUTS and openers is None and not self._passthrough
        self._kept: list[Call] | None = [] if keep_calls else None
        # Text mode: a held trailing piece that may start an opener, and whether the
        # current line holds only blanks so far (a line opener may come next).
        self._pending = ""
        self._line_blank = True
        self._last = ""  # the last text released ('' at the start and after markup)
        self._after_call = False  # a call's markup, then only blanks, was the last thing out
        # Marker mode: the live parsers and the marker's text from ``_held_start`` on.
        # Positions count from the marker's first character.
        self._parsers: list[MarkerParser] = []
        self._held: list[str] = []
        self._held_start = 0
        self._fed = 0
        self._given = 0  # the parsers have seen the marker's text before this
        self._cut = 0  # text before this is released or consumed as markup
        self._resume = 0  # furthest resume point of parsers that gave up
        self._unshown: list[str] = []  # held pieces the one parser waits past (``waits_for``)
        # Fast path allowed: shortcuts on, tools declared, nothing held, not at a line start,
        # not right after a call (so the fast path never has to clear ``_after_call``).
        self._plain = False

    # ------------------------------------------------------------------ public

    @property
    def in_marker(self) -> bool:
        """Whether a marker is open (text fed since its opener is held, undecided)."""
        return bool(self._parsers)

    def take_calls(self) -> tuple[Call, ...]:
        """The calls recognised since the last take (``keep_calls`` only)."""
        kept = self._kept
        if kept is None:
            raise ValueError("take_calls needs a Rescuer made with keep_calls=True")
        calls = tuple(kept)
        kept.clear()
        return calls

    def feed(self, text: str) -> list[Event]:
        """Events for the next piece of text (any split of the stream gives the same result)."""
        # Fast path: while nothing is held and no line has just begun, a piece with no
        # opener character, no line opener after a newline and no "count" or "court" goes
        # straight out; if it ends in "c".."coun" or "cour" at a word start, that piece is held.
        risk: re.Match[str] | None = None
        if self._plain and text and (
            "\n" not in text or _LINE_RISK_HINT(text) is None or (risk := _LINE_RISK(text)) is None
        ):
            if not (
                ("<" not in text or _OPENERS.harmless(text, "<"))
                and "`" not in text
                and ("[" not in text or _OPENERS.harmless(text, "["))
                and ("]" not in text or _OPENERS.harmless(text, "]"))  # MiniMax M3's namespace token
            ):
                # An opener character that may count: ``_text`` would find the same and
                # search at once, so the search starts here (nothing is held).
                out: list[Event] = []
                self._scan(text, out)
                self._plain = self._fast and not (self._parsers or self._pending or self._line_blank or self._after_call)
                return _merged(out)
            # ("cou" stands for both words, and a last character no word prefix ends in
            # answers the ending without a call; "court" is looked for before ``_court_ends``)
            if "c" not in text or (
                ("cou" not in text or ("count" not in text and ("court" not in text or not _court_ends(text))))
                and (text[-1] not in _WORD_PREFIX_ENDS or not text.endswith(_WORD_PREFIXES))
            ):
                self._last = text
                return [text]
            if "count" not in text and ("court" not in text or not _court_ends(text)):
                start = text.rfind("c")  # where the "c".."coun" ending starts
                if start > 0:
                    if text[start - 1] not in _WORD_CHARS:
                        # A word start: hold the ending. The word's context is the line
                        # state after the text released before it.
                        self._pending = text[start:]
                        self._plain = False
                        text = text[:start]
                        if "\n" in text:
                            self._line_blank = not text[text.rfind("\n") + 1 :].strip(" \t")
                    self._last = text
                    return [text]
        elif (
            risk is not None
            and risk.end() == len(text)
            and not risk.group().strip(" \t\n")
            and ("<" not in text or _OPENERS.harmless(text, "<"))
            and "`" not in text
            and ("[" not in text or _OPENERS.harmless(text, "["))
            and ("]" not in text or _OPENERS.harmless(text, "]"))
            and "cou" not in text
        ):
            # The first line opener the search found is only the piece's end at a line start
            # (``risk`` is the leftmost, so no line opener comes after an earlier newline) and
            # no word opener can be in it: the piece goes out whole, as ``_text`` would let it,
            # and the next line starts blank.
            self._last = text
            self._line_blank = True
            self._plain = False
            return [text]
        parsers = self._parsers
        pending = self._pending
        if not parsers and text and self._fast and (pending or self._line_blank):
            # A held piece ("c", "cou" …) and the next one, or the first piece of a line:
            # most often prose. The checks of ``_text``, in the order of the fast path (a
            # line opener after a newline looked for as the fast path does, more widely);
            # any failing, ``_text`` decides as before.
            s = pending + text if pending else text
            if (
                "count" not in s
                and "court" not in s
                and ("<" not in s or _OPENERS.harmless(s, "<"))
                and "`" not in s
                and ("[" not in s or _OPENERS.harmless(s, "["))
                and ("]" not in s or _OPENERS.harmless(s, "]"))  # MiniMax M3's namespace token
                and ("\n" not in s or _LINE_RISK_HINT(s) is None or _LINE_RISK(s) is None)
                and (s[-1] not in _WORD_PREFIX_ENDS or not s.endswith(_WORD_PREFIXES))
                and (s[-1] not in _LINE_BEGUN_ENDS or _LINE_BEGUN(s, s.rfind("\n") + 1) is None)
                and not (self._line_blank and s[0] in _LINE_HERE_FIRSTS and _LINE_HERE(s))
            ):
                self._pending = ""
                out = []
                self._release(s, out)
                self._plain = not (self._line_blank or self._after_call)
                return out
        # Inside a marker that one parser owns, a piece within the buffer cap goes to it
        # directly; nothing comes out until it has a verdict. A piece without the
        # character the parser waits for is only kept, and shown with the next one.
        if len(parsers) == 1 and text and len(text) <= self._cut + self.buffer_cap - self._given:
            size = len(text)
            self._held.append(text)
            self._fed += size
            self._given += size
            parser = parsers[0]
            unshown = self._unshown
            if parser.waits_for:
                if parser.waits_for not in text:
                    unshown.append(text)
                    return []
                if unshown:
                    unshown.append(text)
                    text = "".join(unshown)
                    unshown.clear()
            verdict = parser.feed(text, 0)
            if verdict is None:
                return []
            out = []
            resume = self._settle(parsers[0], verdict, out)
            if resume is not None:
                self._text(self._rest(resume), out)
            self._plain = self._fast and not (self._parsers or self._pending or self._line_blank or self._after_call)
            return _merged(out)
        return self._feed(text)

    def finish(self) -> list[Event]:
        """End of stream: settle open markers and release everything still held."""
        if self._passthrough:
            return []
        out: list[Event] = []
        if self._unshown:
            resume = self._show(out)
            if resume is not None:
                self._text(self._rest(resume), out)
        asked = 0
        while self._parsers:
            resume = self._advance(None, 0, out)
            if resume is None:  # it let text through before the markup that ends it: ask again
                asked += 1
                assert asked < 3, "a parser's finish must settle the marker"
                continue
            asked = 0
            self._text(self._rest(resume), out)
        if self._pending:
            self._release(self._pending, out)
            self._pending = ""
        self._line_blank = True
        self._last = ""
        self._plain = False
        return _merged(out)

    # ------------------------------------------------------------------ text mode

    def _feed(self, text: str) -> list[Event]:
        if not text:
            return []
        if self._passthrough:
            return [text]
        out: list[Event] = []
        if self._parsers:
            self._held.append(text)
            self._fed += len(text)
            # (Pieces kept aside settle nothing, but should they, ``text`` is in the rest.)
            resume = self._show(out) if self._unshown else None
            if resume is None:
                resume = self._advance(text, 0, out)
            if resume is not None:
                self._text(self._rest(resume), out)
        else:
            self._text(self._pending + text if self._pending else text, out)
        self._plain = self._fast and not (self._parsers or self._pending or self._line_blank or self._after_call)
        return _merged(out)

    def _text(self, s: str, out: list[Event]) -> None:
        """Text mode over ``s`` (what follows everything released or held so far): the
        plain-text check first, the opener search only when it fails."""
        if not s:
            self._pending = ""
            return
        if (
            _WORD_OPENER is not None
            and self._fast
            and ("<" not in s or _OPENERS.harmless(s, "<"))
            and "`" not in s
            and ("[" not in s or _OPENERS.harmless(s, "["))
            and ("]" not in s or _OPENERS.harmless(s, "]"))  # MiniMax M3's namespace token
            and (("count" not in s and not _court_ends(s)) or _WORD_OPENER(s) is None)
            and ("\n" not in s or _LINE_OPENER(s) is None)
            and not (self._line_blank and s[0] in _LINE_HERE_FIRSTS and _LINE_HERE(s))
            # the first letters of a line opener ("\nfunc"), looked for when the last one may be,
            # and only on a line that began at a line start (in ``s``, or blank before it)
            and (s[-1] not in _LINE_BEGUN_ENDS or ("\n" not in s and not self._line_blank)
                 or _LINE_BEGUN(s, s.rfind("\n") + 1) is None)
        ):
            # No opener starts in ``s`` (a frequent case: a held "c" turned out to be
            # prose); with no "<" or "`" in it, only a word opener can begin at its end.
            n = len(s)
            tail = s.endswith(_WORD_PREFIXES) or (
                ("count" in s or "court" in s) and s.rstrip(" \t\r\n").endswith(("count", "court"))
            )
            hold = self._openers.word_hold(s, self._last[-1:]) if tail else n
            if hold == n:
                self._pending = ""
                self._release(s, out)
            else:
                self._pending = s[hold:]
                self._release(s[:hold], out)
        else:
            self._pending = ""
            self._scan(s, out)

    def _release(self, text: str, out: list[Event]) -> None:
        if not text:
            return
        out.append(text)
        self._last = text
        if self._after_call and text.strip(" \t\r\n"):
            self._after_call = False
        newline = text.rfind("\n")
        if newline >= 0:
            self._line_blank = not text[newline + 1 :].strip(" \t")
        elif self._line_blank:
            self._line_blank = not text.strip(" \t")

    def _scan(self, s: str, out: list[Event]) -> None:
        """Text mode over ``s``, which starts right after everything released so far."""
        openers = self._openers
        cursor = Cursor(openers, s)
        i = 0
        while True:
            hit = cursor.find(i, self._line_blank, self._last[-1:])
            if hit is None:
                hold = openers.hold(s, i, self._last[-1:])
                self._release(s[i:hold], out)
                self._pending = s[hold:]
                return
            start, opener, plain_end = hit
            if plain_end:
                self._release(s[i:plain_end], out)
                i = plain_end
                continue
            self._release(s[i:start], out)
            # The marker is ``s[start:]``; positions in it count from ``start``.
            context = Context(self._line_blank, self._last[-1:], self._after_call)
            families = openers.families[opener]
            self._resume = 0
            if len(families) > 1 and len(s) - start <= self.buffer_cap:
                # A shared opener: no parser for a family the next characters rule out.
                # (Its parser would give up on this very piece, which it would be shown
                # whole: the cap is not reached.)
                parsers: list[MarkerParser] = []
                after = start + len(opener)
                for family in families:
                    declined = family.declines(opener, s, after)
                    if declined is None:
                        parsers.append(family.parser(opener, self._tools, context))
                    else:
                        self._resume = max(self._resume, declined)
                self._parsers = parsers
            else:
                self._parsers = [family.parser(opener, self._tools, context) for family in families]
            self._held = [s]
            self._held_start = -start
            self._fed = size = len(s) - start
            self._cut = 0
            parsers = self._parsers
            if len(parsers) == 1 and size <= self.buffer_cap:  # most markers: one parser, shown all
                self._given = size
                verdict = parsers[0].feed(s, start)
                if verdict is None:
                    return
                resume = self._settle(parsers[0], verdict, out)
            else:
                self._given = 0
                resume = self._advance(s, start, out)
            if resume is None:
                return
            self._held = []
            i = start + resume  # keep searching the same string after the marker

    # ------------------------------------------------------------------ marker mode

    def _held_text(self, a: int, b: int) -> str:
        """The held text between marker positions ``a`` and ``b`` (only the pieces that
        overlap it are sliced, so a long first piece is not copied again and again)."""
        held = self._held
        start = self._held_start
        if len(held) == 1:
            return held[0][a - start : b - start]
        parts: list[str] = []
        for piece in held:
            end = start + len(piece)
            if end > a:
                parts.append(piece[max(a - start, 0) : b - start])
            start = end
            if start >= b:
                break
        return "".join(parts)

    def _rest(self, resume: int) -> str:
        """The held text from ``resume`` on, to scan again; the marker's buffer is dropped."""
        rest = self._held_text(resume, self._fed)
        self._held = []
        return rest

    def _drop_held_before(self, pos: int) -> None:
        """Forget held pieces that end before marker position ``pos`` (nothing is copied)."""
        held = self._held
        start = self._held_start
        last = len(held) - 1
        k = 0
        while k < last:
            end = start + len(held[k])
            if end > pos:
                break
            start = end
            k += 1
        if k:
            del held[:k]
            self._held_start = start

    def _emit(self, verdict: Verdict, out: list[Event]) -> None:
        if self._kept is not None:
            self._kept += verdict.calls
        for call in verdict.calls:
            index = self.calls_emitted
            self.calls_emitted += 1
            out.append(ToolCallStart(index, call.name))
            out.append(ArgumentsDelta(index, call.arguments_json()))
            out.append(ToolCallEnd(index))
        assert verdict.markup_end is not None
        self._resume = 0
        end = min(verdict.markup_end, self._fed)
        if end > self._cut:
            self._drop_held_before(end - 1)
            self._line_blank = self._held[0][end - 1 - self._held_start] == "\n"
            self._last = ""
            self._cut = end
            self._after_call = self._after_call or bool(verdict.calls)

    def _show(self, out: list[Event]) -> int | None:
        """Show the parser the pieces kept aside while it waited (``MarkerParser.waits_for``);
        see ``_advance``."""
        kept = "".join(self._unshown)
        self._unshown.clear()
        self._given -= len(kept)
        return self._verdicts(kept, 0, out)

    def _advance(self, text: str | None, start: int, out: list[Event]) -> int | None:
        """Feed the live parsers ``text[start:]`` (``None``: the stream ended) and act on
        their verdicts. Once the marker is over, returns where scanning resumes."""
        if text is not None:
            size = len(text) - start
            if size > self._cut + self.buffer_cap - self._given:
                return self._advance_in_steps(text, start, out)
        return self._verdicts(text, start, out)

    def _advance_in_steps(self, text: str, start: int, out: list[Event]) -> int | None:
        """``_advance`` for a piece reaching more than ``buffer_cap`` characters past the
        cut: the parsers are never shown more than that. If that much settles nothing,
        the marker is overflowed; if it moves the cut (a call, text let through), the
        rest follows the same way. They are shown it in growing steps, as most markers
        are settled in the first: parsers give the same verdicts however their text is
        split, so the steps change nothing but the cost, and the slices copy at most
        twice what the parsers needed to see."""
        step = _FIRST_LOOK
        while True:
            room = self._cut + self.buffer_cap - self._given
            if room <= 0:
                return self._overflow(out)
            end = start + min(step, room)
            if end >= len(text):
                return self._verdicts(text, start, out)
            resume = self._verdicts(text[start:end], 0, out)
            if resume is not None:
                return resume
            start = end
            step *= 2

    def _verdicts(self, text: str | None, start: int, out: list[Event]) -> int | None:
        """The live parsers' verdicts on one piece (``None``: the end); see ``_advance``."""
        if text is not None:
            self._given += len(text) - start
        survivors: list[MarkerParser] = []
        for parser in self._parsers:
            verdict = parser.feed(text, start) if text is not None else parser.finish()
            if verdict is None:
                survivors.append(parser)
            elif verdict.markup_end is not None or not verdict.done:
                return self._settle(parser, verdict, out)
            else:  # given up
                self._resume = max(self._resume, verdict.resume)
        self._parsers = survivors
        if survivors:
            return None
        return self._close(self._resume, out)

    def _settle(self, parser: MarkerParser, verdict: Verdict, out: list[Event]) -> int | None:
        """Act on one parser's verdict, as the last live parser or the one that owns the
        marker from now on; see ``_advance``."""
        if verdict.markup_end is not None:  # recognised: this parser owns the marker
            self._parsers = [parser]
            self._emit(verdict, out)
            if not verdict.done:
                return None
            return self._close(verdict.resume, out)
        if not verdict.done:  # passing: this parser owns the marker and lets text through
            self._parsers = [parser]
            self._pass(verdict.resume, out)
            return None
        self._resume = max(self._resume, verdict.resume)  # given up
        return self._close(self._resume, out)

    def _close(self, resume: int, out: list[Event]) -> int:
        """The marker is over: release its unconsumed text before ``resume``, return
        ``resume`` (clamped so that scanning always moves on)."""
        resume = min(max(resume, self._cut, 1), self._fed)
        self._release(self._held_text(self._cut, resume), out)
        self._cut = resume
        self._parsers = []
        return resume

    def _pass(self, end: int, out: list[Event]) -> None:
        """Release the marker's text before ``end`` as ordinary text; the marker goes on."""
        self._resume = 0
        end = min(end, self._fed)
        if end > self._cut:
            self._release(self._held_text(self._cut, end), out)
            self._drop_held_before(end)
            self._cut = end

    def _overflow(self, out: list[Event]) -> int:
        """The marker needs more than ``buffer_cap`` characters past the cut: the text up
        to the cap is released, and scanning resumes there."""
        self.overflowed = True
        return self._close(self._given, out)


@cache
def openers_for(formats: frozenset[str] | None) -> Openers | None:
    """The openers of the families that read ``formats`` (format ids), for ``Rescuer``'s
    ``openers``; None (the default families) for None or every format. Compiled once per
    selection."""
    if formats is None or formats >= frozenset(FORMAT_IDS):
        return None
    unknown = sorted(formats - frozenset(FORMAT_IDS))
    if unknown:
        raise ValueError(f"unknown text format(s) {', '.join(unknown)}; known: {', '.join(FORMAT_IDS)}")
    return Openers(families_for(formats, nest=_nested))


def rescue_text(text: str, tools: Sequence[ToolSpec]) -> tuple[str, list[RescuedCall]]:
    """Whole-text convenience: the visible text and the calls rescued from ``text``."""
    rescuer = Rescuer(tools)
    events = rescuer.feed(text)
    events += rescuer.finish()
    return collect(events)
