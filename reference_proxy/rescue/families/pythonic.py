"""Pythonic call lists (Llama 3.2 and Llama 4; vLLM's ``pythonic`` parser):
``[f(a=1, b="x"), g()]`` at the start of a line, arguments as Python literals.

The list shares its opener with bare JSON arrays; a name and ``(`` right after the
``[`` make it this family's. The text is scanned string-aware to the closing ``]``,
then read with ``ast``: only calls of declared tools with keyword arguments whose
values are literals count, and only blanks may follow on the line.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Final

from reference_proxy.rescue.coercion import compact_json
from reference_proxy.rescue.family import Call, Context, Family, MarkerParser, Opener, Verdict, accept, reject
from reference_proxy.rescue.toolbox import Toolbox

_HEAD: Final = re.compile(r"\[[ \t]*[A-Za-z_][A-Za-z0-9_.:-]*[ \t]*\(")
_HEAD_PREFIX: Final = re.compile(r"\[[ \t]*(?:[A-Za-z_][A-Za-z0-9_.:-]*[ \t]*)?\Z")
_MAX_HEAD: Final = 300
_OPEN: Final = "([{"
_CLOSE: Final = ")]}"

_START: Final = 0
_BODY: Final = 1
_AFTER: Final = 2


def _calls(text: str, tools: Toolbox) -> tuple[Call, ...] | None:
    try:
        tree = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError):
        return None
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    calls: list[Call] = []
    for node in tree.elts:
        if not isinstance(node, ast.Call) or node.args or not isinstance(node.func, ast.Name):
            return None
        name = tools.resolve(node.func.id)
        if name is None:
            return None
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                return None
            try:
                arguments[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                return None
        if compact_json(arguments) is None:
            return None
        calls.append(Call(name, arguments))
    return tuple(calls)


class PythonicParser(MarkerParser):
    def __init__(self, tools: Toolbox, prefix: str = "", closer: str = "") -> None:
        """``prefix``: a token before the list (the opener); ``closer``: the token that
        ends the list instead of the end of its line (blanks may come before it)."""
        self._tools = tools
        self._skip = len(prefix)
        self._opener_end = len(prefix)  # marker position of the list's '['
        self._opener = max(len(prefix), 1)  # where scanning resumes when this is no list
        self._closer = closer
        self._tail = ""  # the closer's characters seen so far
        self._head = ""  # the marker's first characters, until they show a call's start
        self._parts: list[str] = []  # the list's text, once it is known to be one
        self._size = 0  # characters fed so far
        self._state = _START
        self._depth = 0
        self._quote = ""  # the open string's quote character
        self._escape = False
        self._end = 0  # marker position after the closing ']'

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        if self._skip:  # the opener arrives whole in the first piece
            start += self._skip
            self._size += self._skip
            self._skip = 0
        base = self._size - start  # marker position of text[0]
        self._size += len(text) - start
        if self._state == _START:
            head = self._head + text[start : start + _MAX_HEAD]
            if not head:  # only the opener so far
                return None
            if _HEAD.match(head) is None:
                if len(head) >= _MAX_HEAD or _HEAD_PREFIX.match(head) is None:
                    return reject(self._opener)
                self._head = head
                return None
            held, self._head = self._head, ""
            self._state = _BODY
            if held:
                verdict = self._scan(held, 0, self._opener_end)
                if verdict is not None:
                    return verdict
        return self._scan(text, start, base)

    def _scan(self, text: str, i: int, base: int) -> Verdict | None:
        """Scan ``text[i:]`` (``base``: marker position of ``text[0]``)."""
        first, n = i, len(text)
        while i < n:
            c = text[i]
            if self._state == _AFTER and self._closer:
                if not self._tail and c in " \t\r\n":
                    i += 1
                    continue
                self._tail += c
                if self._tail == self._closer:
                    self._end = base + i + 1
                    return self._verdict()
                if not self._closer.startswith(self._tail):
                    return reject(self._end)
                i += 1
                continue
            if self._state == _AFTER:
                if c in " \t\r":
                    i += 1
                    continue
                return self._verdict() if c == "\n" else reject(self._end)
            if self._quote:
                if self._escape:
                    self._escape = False
                elif c == "\\":
                    self._escape = True
                elif c == self._quote:
                    self._quote = ""
            elif c in "\"'":
                self._quote = c
            elif c in _OPEN:
                self._depth += 1
            elif c in _CLOSE:
                self._depth -= 1
                if self._depth == 0:
                    if c != "]":
                        return reject(base + i + 1)
                    self._parts.append(text[first : i + 1])
                    self._end = base + i + 1
                    self._state = _AFTER
            i += 1
        if self._state == _BODY:
            self._parts.append(text[first:])
        return None

    def _verdict(self) -> Verdict:
        calls = _calls("".join(self._parts), self._tools)
        return accept(calls, self._end) if calls else reject(self._end)

    def finish(self) -> Verdict:
        if self._state == _AFTER:
            return self._verdict()
        return reject(max(self._size, 1))


class Pythonic(Family):
    name = "pythonic"
    formats: tuple[str, ...] = ("pythonic",)
    openers: tuple[Opener, ...] = (Opener("[", line_start=True),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return PythonicParser(tools)


PYTHON_START: Final = "<|python_start|>"
PYTHON_END: Final = "<|python_end|>"


class Llama4Pythonic(Family):
    """Llama 4: the pythonic list between ``<|python_start|>`` and ``<|python_end|>``
    (vLLM's ``llama4_pythonic`` parser, which also takes the list when the answer ends
    before the closing token)."""

    name = "llama4-pythonic"
    formats: tuple[str, ...] = ("llama4-pythonic",)
    openers: tuple[Opener, ...] = (Opener(PYTHON_START),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return PythonicParser(tools, PYTHON_START, PYTHON_END)
