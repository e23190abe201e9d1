"""Markers shaped ``OPENER ws JSON [ws JSON ...] ws CLOSER``.

Qwen's ``<tools>``, Hermes ``<tool_call>`` and Roo's ``tool_code`` fence differ only in
their tags, how many values they hold and what a value must look like; this parser
does the rest. The JSON is scanned string-aware, so the closer counts only after the
complete value: a string may contain the closing tag.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Final

from reference_proxy.rescue.families.json_calls import CallWatcher, calls_from_values
from reference_proxy.rescue.family import Call, CarriedParser, Verdict, accept, reject, skip_ws, starts
from reference_proxy.rescue.jsonscan import MORE, NOT_JSON, JsonScanner, Watcher
from reference_proxy.rescue.toolbox import Toolbox

_BODY: Final = 0
_JSON: Final = 1


class TaggedJsonParser(CarriedParser):
    """Subclasses set the closer and say what the values mean."""

    closer: str
    many = False
    """Several values may follow one another (one per line, say)."""
    empty_is_markup = True
    """An empty marker (opener, blanks, closer) is swallowed as markup of no call."""
    value_starts = "{["
    closer_optional_at_end = False
    """Complete values with no closer before the text ends are calls (the model stopped
    on its end-of-turn token instead of writing the closer)."""

    def __init__(self, opener: str, tools: Toolbox, *, origin: int = 0) -> None:
        """``origin``: the marker position of the first piece's ``start`` (its opener)."""
        super().__init__(len(opener), origin)
        self._tools = tools
        self._state = _BODY
        self._json: JsonScanner | None = None
        self._values: list[Any] = []

    @abstractmethod
    def watcher(self) -> Watcher:
        """Early veto while a value is scanned."""

    @abstractmethod
    def calls(self, values: list[Any]) -> tuple[Call, ...] | None:
        """The calls the complete values stand for, or None if they are not calls."""

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        scanner = self._json
        if scanner is None or carry.text:
            return super().feed(text, start)
        # Inside a value, nothing carried (the scanner keeps its own state): the piece goes
        # to the scanner first, and most pieces end inside the value.
        s, i = carry.join(text, start)
        i = scanner.feed(s, i)
        if scanner.status is MORE:
            carry.keep(s, i)
            return None
        if not self._value_over(scanner):
            return reject(carry.base + i)
        self._skip = i - start  # the value is read: the rest of the piece as any other
        return super().feed(text, start)

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            if self._state == _JSON:
                scanner = self._json
                assert scanner is not None
                i = scanner.feed(s, i)
                if scanner.status is MORE:
                    break
                if not self._value_over(scanner):
                    return reject(base + i)
                continue
            i = skip_ws(s, i)
            if i >= n:
                break
            if s[i] in self.value_starts and (self.many or not self._values):
                self._json = JsonScanner(self.watcher())
                self._state = _JSON
                continue
            closed = starts(s, i, self.closer)
            if closed is None:
                break
            if not closed:
                return reject(base + i)
            end = base + i + len(self.closer)
            if not self._values:
                return accept((), end) if self.empty_is_markup else reject(end)
            calls = self.calls(self._values)
            return accept(calls, end) if calls is not None else reject(end)
        return i

    def _value_over(self, scanner: JsonScanner) -> bool:
        """A value's scan stopped: keep the value and read on (True), or it is no JSON."""
        value = scanner.result()
        if value is NOT_JSON:
            return False
        self._values.append(value)
        self._json = None
        self._state = _BODY
        return True

    def finish(self) -> Verdict:
        if self.closer_optional_at_end and self._state == _BODY and self._values:
            calls = self.calls(self._values)
            if calls is not None:
                return accept(calls, self._carry.end)
        return reject(self._carry.end)


class CallObjectsParser(TaggedJsonParser):
    """Values that are call objects (``{"name", "arguments"}``, or a list of them), vetoed
    early by name: Hermes ``<tool_call>`` and Qwen's ``<tools>``."""

    def watcher(self) -> Watcher:
        return CallWatcher(self._tools)

    def calls(self, values: list[Any]) -> tuple[Call, ...] | None:
        return calls_from_values(values, self._tools)
