"""Gemma 4: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:42}<tool_call|>`` (vLLM's ``gemma4``
parser, https://github.com/vllm-project/vllm/blob/main/vllm/tool_parsers/gemma4_tool_parser.py).

Keys are bare; a string sits between two ``<|"|>`` tokens, raw; other values are bare
literals, objects in braces and arrays in brackets of the same syntax. The calls of an
answer follow one another with nothing between them. Served with its special tokens
stripped, the model's call reads ``call:NAME{key:text}`` (the tokens around it and the
string delimiters gone: NousResearch/hermes-agent#7449 and #38376); that bare form counts
at the start of a line (mid-line, ``call:`` is prose), and its bare values are typed by the
tool's schema. The body is
read once, keeping only the braces' depth and whether a string is open.
"""

from __future__ import annotations

import re
from typing import Any, Final

from reference_proxy.rescue.coercion import typed_value, untyped_value
from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    CarriedParser,
    Context,
    Family,
    MarkerParser,
    Opener,
    Verdict,
    accept,
    reject,
    starts,
)
from reference_proxy.rescue.toolbox import Toolbox

OPEN: Final = "<|tool_call>"
CLOSE: Final = "<tool_call|>"
CALL: Final = "call:"
QUOTE: Final = '<|"|>'
_NAME: Final = re.compile(r"[\w.-]{1,256}")
_STRUCTURE: Final = re.compile(r'[{}\[\]]|<\|"\|>')
_NAME_LIMIT: Final = 257

_CALL: Final = 0
_NAME_STATE: Final = 1
_BODY: Final = 2
_CLOSE: Final = 3


class _Syntax(ValueError):
    pass


def parse_body(body: str, tools: Toolbox, name: str) -> dict[str, Any] | None:
    """The arguments a complete ``{…}`` body writes, or None if it is not that syntax."""
    try:
        value, end = _object(body, 0, tools, name)
    except _Syntax:
        return None
    return value if end == len(body) else None


def _skip(s: str, i: int, chars: str = " \t\r\n") -> int:
    while i < len(s) and s[i] in chars:
        i += 1
    return i


def _object(s: str, i: int, tools: Toolbox | None, name: str) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    i += 1  # '{'
    while True:
        i = _skip(s, i, " \t\r\n,")
        if i >= len(s):
            raise _Syntax
        if s[i] == "}":
            return out, i + 1
        colon = s.find(":", i)
        if colon < 0:
            raise _Syntax
        key = s[i:colon].strip()
        if key.startswith(QUOTE) and key.endswith(QUOTE) and len(key) >= 2 * len(QUOTE):
            key = key[len(QUOTE):-len(QUOTE)]
        if not key or any(c in key for c in "{}[],"):
            raise _Syntax
        schema = tools.property_schema(name, key) if tools is not None else None
        out[key], i = _value(s, _skip(s, colon + 1), "}", schema, tools is not None)

def _array(s: str, i: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    i += 1  # '['
    while True:
        i = _skip(s, i, " \t\r\n,")
        if i >= len(s):
            raise _Syntax
        if s[i] == "]":
            return out, i + 1
        value, i = _value(s, i, "]", None, False)
        out.append(value)


def _value(s: str, i: int, closer: str, schema: Any, top: bool) -> tuple[Any, int]:
    if s.startswith(QUOTE, i):
        end = s.find(QUOTE, i + len(QUOTE))
        if end < 0:
            raise _Syntax
        return s[i + len(QUOTE):end], end + len(QUOTE)
    if i < len(s) and s[i] == "{":
        return _object(s, i, None, "")
    if i < len(s) and s[i] == "[":
        return _array(s, i)
    j = i
    while j < len(s) and s[j] not in ",}]":
        j += 1
    if j >= len(s):
        raise _Syntax
    raw = s[i:j].strip()
    if not raw and not top:
        raise _Syntax
    return (typed_value(raw, schema) if top else untyped_value(raw)), j


class GemmaParser(CarriedParser):
    def __init__(self, opener: str, tools: Toolbox) -> None:
        wrapped = opener == OPEN
        super().__init__(len(opener))
        self._tools = tools
        self._wrapped = wrapped
        self._state = _CALL if wrapped else _NAME_STATE
        self._name = ""
        self._parts: list[str] = []
        self._depth = 0
        self._in_string = False
        self._arguments: dict[str, Any] = {}

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            if state == _CALL:
                found = starts(s, i, CALL)
                if found is None:
                    return i
                if not found:
                    return reject(base + i)
                self._state, i = _NAME_STATE, i + len(CALL)
                continue
            if state == _NAME_STATE:
                brace = s.find("{", i, i + _NAME_LIMIT)
                if brace < 0:
                    if n - i >= _NAME_LIMIT or not _NAME.fullmatch(s[i:n]):
                        return reject(base + i)
                    return i
                name = self._tools.resolve(s[i:brace]) if _NAME.fullmatch(s[i:brace]) else None
                if name is None:
                    return reject(base + brace)
                self._name, self._state, i = name, _BODY, brace
                continue
            if state == _BODY:
                i = self._body(s, i)
                if self._state == _BODY:
                    return i
                arguments = parse_body("".join(self._parts), self._tools, self._name)
                self._parts = []
                if arguments is None:
                    return reject(base + i)
                if not self._wrapped:
                    return self._accept(arguments, base + i)
                self._arguments = arguments
                continue
            found = starts(s, i, CLOSE)  # _CLOSE
            if found is None:
                return i
            if not found:
                return reject(base + i)
            return self._accept(self._arguments, base + i + len(CLOSE))
        return i

    def _accept(self, arguments: dict[str, Any], end: int) -> Verdict:
        call = json_call(self._name, arguments)
        return accept((call,), end) if call is not None else reject(end)

    def _body(self, s: str, i: int) -> int:
        """Reads the body from ``s[i]``: where it stopped (the body's end once the state has
        moved on; else where undecided text starts, carried to the next piece)."""
        parts = self._parts
        n = len(s)
        while i < n:
            if self._in_string:
                end = s.find(QUOTE, i)
                if end < 0:
                    keep = max(i, n - len(QUOTE) + 1)
                    parts.append(s[i:keep])
                    return keep
                parts.append(s[i:end + len(QUOTE)])
                self._in_string, i = False, end + len(QUOTE)
                continue
            m = _STRUCTURE.search(s, i)
            if m is None:
                tail = s.rfind("<", max(i, n - len(QUOTE) + 1))
                keep = tail if tail >= 0 and QUOTE.startswith(s[tail:]) else n
                parts.append(s[i:keep])
                return keep
            j = m.end()
            parts.append(s[i:j])
            token = m.group()
            if token == QUOTE:
                self._in_string = True
            elif token in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._state = _CLOSE
                    return j
            i = j
        return i


class Gemma(Family):
    name = "gemma"
    formats: tuple[str, ...] = ("gemma4",)
    openers: tuple[Opener, ...] = (Opener(OPEN), Opener(CALL, line_start=True))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return GemmaParser(opener, tools)
