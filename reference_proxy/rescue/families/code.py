"""Markdown code: inline code spans and fenced blocks, Roo's ``tool_code`` blocks among them.

A model explaining how a call is written must not set it off, yet some models do wrap
their real calls in a fence. The rules:

- An inline code span (a run of backticks, closed by a run of the same length on the
  same line) is text, and nothing in it starts a marker. A run with no closing run on
  its line, or none within ``MAX_SPAN`` characters, is a backtick like any other.
- A fenced block (three or more backticks at the start of a line, an info string, and
  a closing run at least as long on a line of its own) holds calls only when it holds
  nothing else: its content is blanks and complete markers of the other families, at
  least one a call. Then the whole block, fences included, is the markup of those calls.
  Anything else (one line of code, a comment, a marker that turns out to be no call)
  makes the whole block text, calls and all; its text is let through as it arrives, and
  no opener inside it counts. The block ends at its first closing line, as Markdown
  shows it, even inside a call (a call holding a fence line needs a longer outer
  fence); one that is never closed is code to the end. A closing line is short: its
  blanks and backticks are at most ``MAX_FENCE_LINE`` characters, newline excluded, so
  it is recognised without holding a long line (and a fence opened by a longer run
  never closes).
- A ``tool_code`` block (the Roo-Cline transformer spec) holds one JSON object, ``{"tool": NAME, ...}``: the
  call. It opens at a line start or anywhere else (```` ```tool_code ```` names itself);
  a block that is not a valid call is text as a whole.

The content of a fence is scanned by a nested rescuer with the other families, which
keeps this module to the fences themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final, Protocol

from reference_proxy.rescue.events import Event, collect
from reference_proxy.rescue.families.tool_code import LANGUAGE, ToolCodeParser
from reference_proxy.rescue.family import (
    Call, Carry, Context, Family, MarkerParser, Opener, Verdict, accept, passing, reject, starts,
)
from reference_proxy.rescue.openers import Openers
from reference_proxy.rescue.toolbox import Toolbox


class Nested(Protocol):
    """A rescuer for a fence's content: the scanner's own, handed in (``Nest``) so that this
    family needs nothing of the scanner that runs it."""

    @property
    def in_marker(self) -> bool: ...

    def feed(self, text: str) -> list[Event]: ...

    def finish(self) -> list[Event]: ...

    def take_calls(self) -> tuple[Call, ...]: ...


Nest = Callable[[Toolbox, Openers], Nested]
"""Makes the rescuer of a fence's content, without a cap of its own (the outer rescuer's holds)."""

BACKTICK: Final = "`"
TOOL_CODE_FORMAT: Final = "tool-code"
FENCE_RUN: Final = 3
MAX_SPAN: Final = 250
"""Longest inline code span, in characters from its opening run: below the smallest
buffer cap, so a stray backtick never holds text long enough to overflow."""
MAX_INFO: Final = 128
"""Longest info string of a fence (``python``, ``tool_code``) waited for."""
MAX_FENCE_LINE: Final = 64
"""Longest closing fence line (blanks and backticks, without its newline). A longer line
never closes a fence, whether or not its end has arrived: held no further than this, a
line start gets the same answer in any split."""

_RUN: Final = re.compile(r"`*")
_SPAN_STOP: Final = re.compile(r"`+|\n")
_FENCE_LINE: Final = re.compile(r"([ \t\r]*)(`*)[ \t\r]*")
# A line worth a look (it may close the fence): its first non-blank is a backtick, or
# the piece ends before showing it.
_CANDIDATE: Final = re.compile(r"\n(?=[ \t\r]*(?:`|\Z))")
# Their methods, bound once (compiled, ``pattern.search(...)`` looks the method up by name
# on every call; a fence's every line comes through here).
_RUN_MATCH: Final = _RUN.match
_SPAN_STOP_SEARCH: Final = _SPAN_STOP.search
_FENCE_LINE_MATCH: Final = _FENCE_LINE.match
_CANDIDATE_SEARCH: Final = _CANDIDATE.search

# States. _OPEN: reading the opening run; _SPAN: an inline span; _INFO: a fence's first
# line; _PROBE: the content so far is blanks and calls; _TOOL_CODE: a tool_code block
# whose parser has not decided; _CODE: the block is text up to its closing fence.
_OPEN: Final = 0
_SPAN: Final = 1
_INFO: Final = 2
_PROBE: Final = 3
_TOOL_CODE: Final = 4
_CODE: Final = 5


class CodeParser(MarkerParser):
    # A fence's content state: class defaults, set when a fence opens, so that the many
    # inline spans cost no more than they need.
    _at_line = True  # the next character of the content starts a line
    _calls: tuple[Call, ...] = ()
    _tool_code: ToolCodeParser | None = None

    def __init__(self, family: Code, tools: Toolbox, context: Context) -> None:
        self._family = family
        self._tools = tools
        self._line_start = context.line_start
        self._carry = Carry()
        self._state = _OPEN
        self._run = 0  # backticks in the opening run
        # Scans the content, from its first non-blank character. Set here, not as a class
        # default: mypyc leaves a class default of a Protocol-typed attribute unset.
        self._inner: Nested | None = None

    # ------------------------------------------------------------------ feeding

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        if self._tool_code is not None:
            verdict = self._tool_code_verdict(self._tool_code.feed(text, start))
            if verdict is not None:
                return verdict
        s, i = carry.join(text, start)
        # Index of the opener in ``s``: negative once consumed. The opening run is counted,
        # never kept, so a long run costs each piece only its new backticks.
        opener = -carry.base
        state = self._state
        if state == _OPEN:
            i = self._open(s, i, opener)
            state = self._state
            if state == _OPEN:
                carry.keep(s, i)
                return None
        if state == _INFO:
            after_run = opener + self._run
            i = self._info(s, i, after_run)
            if i < 0:  # the info string is too long: no fence
                return reject(self._run)
            state = self._state
            if state == _INFO:  # waiting for the end of the info line
                carry.keep(s, after_run)
                return None
            if state == _TOOL_CODE:
                assert self._tool_code is not None
                verdict = self._tool_code_verdict(self._tool_code.feed(s, after_run))
                if verdict is not None:
                    return verdict
        if state == _SPAN:
            return self._span(s, i, opener)
        verdict = self._content(s, i)
        if verdict is not None:
            return verdict
        return passing(carry.pos) if self._state == _CODE else None

    def finish(self) -> Verdict:
        carry = self._carry
        end = carry.end
        if self._state == _SPAN:
            return reject(self._run)
        if self._state in (_PROBE, _TOOL_CODE, _CODE) and carry.text:
            # The last line may be the closing fence, with no newline after it.
            m = _FENCE_LINE.fullmatch(carry.text)
            if m is not None and self._closes(m):
                return self._closing(carry.text, end)
        return reject(end)  # never closed: code to the end

    # ------------------------------------------------------------------ the opening

    def _open(self, s: str, i: int, opener: int) -> int:
        """The opening run: sets the next state (stays _OPEN to wait); the index after
        the run (or after as much of it as has arrived)."""
        j = _RUN_MATCH(s, i).end()  # type: ignore[union-attr]
        if j == len(s):
            return j
        run = j - opener
        if run >= FENCE_RUN and not self._line_start:  # mid-line, only tool_code opens a block
            named = starts(s, j, LANGUAGE) if self._family.tool_code else False
            if named is None:
                return j
        else:
            named = run >= FENCE_RUN
        self._run = run
        self._state = _INFO if named else _SPAN
        return j

    def _span(self, s: str, i: int, opener: int) -> Verdict | None:
        """Inline code: look for the closing run on the same line."""
        carry = self._carry
        n = len(s)
        limit = opener + MAX_SPAN
        while True:
            stop = min(n, limit)
            m = _SPAN_STOP_SEARCH(s, i, stop)
            if m is None:
                if stop == limit:
                    return reject(self._run)  # too long for a span: a plain backtick
                carry.keep(s, n)
                return None
            if m.group() == "\n":
                return reject(self._run)
            if m.end() == stop:  # the run may go on
                if stop == limit:
                    return reject(self._run)
                carry.keep(s, m.start())
                return None
            if m.end() - m.start() == self._run:
                return reject(carry.base + m.end())  # the whole span is text
            i = m.end()

    def _info(self, s: str, i: int, after_run: int) -> int:
        """The fence's info string, from ``s[after_run]``: sets the next state (stays
        _INFO to wait); the index after its line, or -1 when it is too long to be one."""
        k = s.find("\n", i, after_run + MAX_INFO + 1)
        if k < 0:
            return -1 if len(s) - after_run > MAX_INFO else i
        info = s[after_run:k]
        if self._line_start and BACKTICK in info:
            self._state = _SPAN  # a backtick in the info string: an inline span (CommonMark)
            return after_run
        if info.startswith(LANGUAGE) and self._family.tool_code:
            self._tool_code = ToolCodeParser(LANGUAGE, self._tools, origin=self._run)
            self._state = _TOOL_CODE
        else:
            self._state = _PROBE
        return k + 1

    def _tool_code_verdict(self, verdict: Verdict | None) -> Verdict | None:
        """The call, or None (the block is code once the parser gave up). The parser
        decides by the closing fence at the latest: a JSON string holds no line break,
        and a backtick anywhere else in the object is an error."""
        if verdict is None:
            return None
        if verdict.markup_end is not None:
            return verdict
        self._tool_code = None
        self._state = _CODE
        return None

    # ------------------------------------------------------------------ the content

    def _content(self, s: str, i: int) -> Verdict | None:
        """Fence content from ``s[i]``, line by line where a line may close the fence."""
        carry = self._carry
        n = len(s)
        while i < n:
            if self._at_line:
                m = _FENCE_LINE_MATCH(s, i)
                assert m is not None
                j = m.end()
                if j - i <= MAX_FENCE_LINE:
                    if j == n:
                        break  # may still be the closing fence
                    if s[j] == "\n" and self._closes(m):
                        return self._closing(s[i:j], carry.base + j)
                self._at_line = False
            m = _CANDIDATE_SEARCH(s, i)
            j = m.end() if m is not None else n
            if self._state == _PROBE:
                self._probe(s[i:j])
            i = j
            self._at_line = m is not None
        carry.keep(s, i)
        return None

    def _closes(self, line: re.Match[str]) -> bool:
        """Whether a whole line matched by ``_FENCE_LINE`` is a closing fence."""
        return line.end() - line.start() <= MAX_FENCE_LINE and len(line.group(2)) >= self._run

    def _closing(self, line: str, end: int) -> Verdict:
        """The closing fence ``line``, ending at ``end``, ends the block, as Markdown
        renders it: a call still open across it makes the block code."""
        inner = self._inner
        if inner is not None and self._state == _PROBE:
            if inner.in_marker:
                # The open marker may end at the fence (an invoke waiting for a next one):
                # if all it leaves is blanks and the fence line, its calls stand.
                events = inner.feed(line)
                text, _ = collect(events)
                if inner.in_marker or not text.endswith(line) or text[: -len(line)].strip(" \t\r\n"):
                    self._to_code()
                else:
                    self._take(())
            if self._state == _PROBE:
                self._take(inner.finish())
        if self._state == _PROBE and self._calls:
            return accept(self._calls, end)
        return reject(end)

    def _probe(self, text: str) -> None:
        """More content while it may hold only calls."""
        inner = self._inner
        if inner is None:
            text = text.lstrip(" \t\r\n")
            if not text:
                return
            if text[0] not in self._family.call_starts:  # cannot begin a call: code
                self._to_code()
                return
            inner = self._inner = self._family.nest(self._tools, self._family.call_openers)
        self._take(inner.feed(text))

    def _take(self, events: Sequence[Event]) -> None:
        """What the nested rescuer said: its calls are kept; any text but blanks makes the block code."""
        if any(isinstance(e, str) and e.strip(" \t\r\n") for e in events):
            self._to_code()
            return
        assert self._inner is not None
        self._calls += self._inner.take_calls()

    def _to_code(self) -> None:
        self._state = _CODE
        self._inner = None
        self._calls = ()


class Code(Family):
    """Backtick runs; ``calls`` are the families whose calls a fence may hold."""

    name = "code"
    # A one-backtick span on one line with no "<" in it can hold no marker of any family
    # (each needs a "<", or a line start): it is plain text, found without a parser. The
    # character after it must be there and not a backtick, or the run might go on; and
    # the span is one the parser would take too (its end and that character within
    # MAX_SPAN), so a cut anywhere changes nothing.
    openers: tuple[Opener, ...] = (Opener(BACKTICK, plain=f"(?!`)[^`\\n<]{{0,{MAX_SPAN - 3}}}`(?=[^`])"),)

    def __init__(self, calls: Sequence[Family], *, nest: Nest, tool_code: bool = True) -> None:
        self.call_openers = Openers(calls)
        self.nest = nest
        self.tool_code = tool_code
        """Whether a ``tool_code`` block is a call (else it is a fence like any other)."""
        self.call_starts = frozenset(literal[0] for literal in self.call_openers.specs)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return CodeParser(self, tools, context)
