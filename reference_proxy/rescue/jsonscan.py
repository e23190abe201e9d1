"""An incremental, string-aware scanner for one JSON value.

JSON-bodied families must know where a value ends before its closing tag can be
trusted (a string may contain ``</tool_call>``), and must give up as soon as the text
cannot be JSON. The scanner keeps its state between pieces, so every character is
looked at once however the text is split; runs of string content, white space and
scalars are skipped with C-level regular expressions, and Python work is done per
token, not per character.
"""

from __future__ import annotations

import re
from enum import Enum
from typing import Final

from reference_proxy.rescue.coercion import loads_json

_WS: Final = re.compile(r"[ \t\r\n]*")
_STRING_BODY: Final = re.compile(r'[^"\\]*')
_WHOLE_STRING: Final = re.compile(r'"([^"\\]*)"')
_SCALAR_BODY: Final = re.compile(r"[-+.0-9A-Za-z]*")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
# The patterns' methods, bound once: a compiled module calls a bound method directly, where
# ``pattern.match(...)`` looks the method up by name on every call.
_WS_MATCH: Final = _WS.match
_STRING_BODY_MATCH: Final = _STRING_BODY.match
_WHOLE_STRING_MATCH: Final = _WHOLE_STRING.match
_SCALAR_BODY_MATCH: Final = _SCALAR_BODY.match
_NUMBER_FULLMATCH: Final = _NUMBER.fullmatch
_BLANKS: Final = frozenset(" \t\r\n")
_LITERALS: Final = frozenset(("true", "false", "null"))
_ESCAPABLE: Final = frozenset('"\\/bfnrtu')
_SCALAR_START: Final = frozenset("-0123456789tfn")

# What the grammar allows next.
_VALUE: Final = 0  # any value
_VALUE_OR_CLOSE: Final = 1  # after '['
_KEY_OR_CLOSE: Final = 2  # after '{'
_KEY: Final = 3  # after ',' in an object
_COLON: Final = 4
_COMMA_OR_CLOSE: Final = 5

# Only shallow strings are decoded for the watcher: that is where call names live.
WATCH_DEPTH: Final = 2


class Status(Enum):
    MORE = "more"
    DONE = "done"
    ERROR = "error"


# The members as module constants: ``Status.MORE`` is looked up through the enum's class on
# every use (about five times the cost of a global on CPython 3.11), and the scanner and
# the JSON-bodied parsers test the status once or more per piece. Either spelling works.
MORE: Final = Status.MORE
DONE: Final = Status.DONE
ERROR: Final = Status.ERROR


class Watcher:
    """Lets a family veto a value early (an undeclared tool name, a foreign key).

    ``depth`` counts enclosing containers: the keys of a root object are at depth 1.
    Return False to stop the scan as an error right after the token.
    """

    __slots__ = ()

    def key(self, depth: int, key: str) -> bool:
        return True

    def string_value(self, depth: int, key: str | None, value: str) -> bool:
        return True

    def item(self, depth: int, first_char: str) -> bool:
        """A value starts inside an array at ``depth``."""
        return True


_NO_WATCH: Final = Watcher()


NOT_JSON: Final = object()
"""``JsonScanner.result`` of a scan that found no value."""


class JsonScanner:
    """Feed pieces of one JSON value; learn where it ends or where it broke."""

    __slots__ = (
        "status",
        "_watch",
        "_parts",
        "_stack",
        "_keys",
        "_expect",
        "_in_string",
        "_string_is_key",
        "_escape",
        "_capture",
        "_in_scalar",
        "_token",
    )

    def __init__(self, watch: Watcher | None = None) -> None:
        self.status = MORE
        self._watch = watch or _NO_WATCH
        self._parts: list[str] = []
        self._stack: list[str] = []
        self._keys: list[str | None] = []
        self._expect = _VALUE
        self._in_string = False
        self._string_is_key = False
        self._escape = False
        self._capture = False
        self._in_scalar = False
        self._token: list[str] = []

    def text(self) -> str:
        """The JSON text consumed so far (the whole value once DONE)."""
        return "".join(self._parts)

    def value(self) -> object:
        """The decoded value; only meaningful once DONE. Raises ValueError if undecodable."""
        return loads_json(self.text())

    def result(self) -> object:
        """Once the scan stopped (its status not MORE): the value, or ``NOT_JSON`` when there
        is none (a syntax error, a watcher's veto, text that does not decode)."""
        if self.status is ERROR:
            return NOT_JSON
        try:
            return self.value()
        except ValueError:
            return NOT_JSON

    def feed(self, s: str, i: int = 0) -> int:
        """Consume ``s`` from ``i``; return the index after what was consumed.

        Stops right after the value when it completes (DONE), at the offending character
        on a syntax error or a watcher veto (ERROR), or at the end of ``s`` (MORE).
        """
        if self.status is not MORE:
            return i
        start = i
        i = self._run(s, i)
        if i > start:
            self._parts.append(s[start:i])
        return i

    # ------------------------------------------------------------------ internals

    def _fail(self, i: int) -> int:
        self.status = ERROR
        return i

    def _run(self, s: str, i: int) -> int:
        n = len(s)
        stack = self._stack
        watch = self._watch
        watched = watch is not _NO_WATCH
        while i < n:
            if self._in_string or self._in_scalar:  # a token cut by the end of the last piece
                i = self._rest_of_token(s, i)
                if self.status is not MORE or i >= n:
                    return i
            c = s[i]
            if c in _BLANKS:  # (most tokens follow the last one at once: no search, no match object)
                i = _WS_MATCH(s, i).end()  # type: ignore[union-attr]
                if i >= n:
                    return n
                c = s[i]
            expect = self._expect
            if expect == _COMMA_OR_CLOSE:
                top = stack[-1]
                if c == ",":
                    self._expect = _KEY if top == "{" else _VALUE
                    i += 1
                    continue
                if (c == "}" and top == "{") or (c == "]" and top == "["):
                    i += 1
                    if self._closed():
                        return i
                    continue
                return self._fail(i)
            if expect == _COLON:
                if c != ":":
                    return self._fail(i)
                self._expect = _VALUE
                i += 1
                continue
            # A key (or the object's end), or a value (or the array's end).
            if stack and stack[-1] == "[":  # (keys are in objects only)
                if c == "]" and expect == _VALUE_OR_CLOSE:
                    i += 1
                    if self._closed():
                        return i
                    continue
                if watched and not watch.item(len(stack), c):
                    return self._fail(i)
            is_key = expect >= _KEY_OR_CLOSE
            if c == '"':
                m = _WHOLE_STRING_MATCH(s, i)
                if m is None:  # cut by the piece's end, or escaped: token by token
                    self._open_string(is_key=is_key)
                    i += 1
                    continue
                i = m.end()
                depth = len(stack)
                if is_key:
                    self._expect = _COLON
                    if depth <= WATCH_DEPTH:
                        key = m.group(1)
                        self._keys[-1] = key
                        if watched and not watch.key(depth, key):
                            return self._fail(i)
                    continue
                if (
                    watched
                    and depth <= WATCH_DEPTH
                    and not watch.string_value(depth, self._keys[-1] if stack and stack[-1] == "{" else None, m.group(1))
                ):
                    return self._fail(i)
            elif is_key:
                if c == "}" and expect == _KEY_OR_CLOSE:
                    i += 1
                    if self._closed():
                        return i
                    continue
                return self._fail(i)
            elif c == "{" or c == "[":
                stack.append(c)
                self._keys.append(None)
                self._expect = _KEY_OR_CLOSE if c == "{" else _VALUE_OR_CLOSE
                i += 1
                continue
            elif c in _SCALAR_START:
                j = _SCALAR_BODY_MATCH(s, i).end()  # type: ignore[union-attr]
                if j >= n:  # the scalar may go on in the next piece
                    self._in_scalar = True
                    self._token = [s[i:j]]
                    return n
                token = s[i:j]
                i = j
                if token not in _LITERALS and not _NUMBER_FULLMATCH(token):
                    return self._fail(i)
            else:
                return self._fail(i)
            if not stack:  # a scalar or string at the root
                self.status = DONE
                return i
            self._expect = _COMMA_OR_CLOSE
        return i

    def _rest_of_token(self, s: str, i: int) -> int:
        """Go on with a string or scalar begun in an earlier piece (or with an escape):
        the index after it, ``len(s)`` if it goes on still, or where it broke."""
        n = len(s)
        while i < n:
            if self._in_string:
                if self._escape:
                    if s[i] not in _ESCAPABLE:
                        return self._fail(i)
                    if self._capture:
                        self._token.append(s[i])
                    self._escape = False
                    i += 1
                    continue
                j = _STRING_BODY_MATCH(s, i).end()  # type: ignore[union-attr]
                if self._capture and j > i:
                    self._token.append(s[i:j])
                if j >= n:
                    return n
                if s[j] == "\\":
                    if self._capture:
                        self._token.append("\\")
                    self._escape = True
                    i = j + 1
                    continue
                i = j + 1
                self._in_string = False
                if not self._string_done():
                    return self._fail(i)
                return i
            j = _SCALAR_BODY_MATCH(s, i).end()  # type: ignore[union-attr]
            if j > i:
                self._token.append(s[i:j])
            if j >= n:
                return n
            i = j
            self._in_scalar = False
            token = "".join(self._token)
            if token not in _LITERALS and not _NUMBER_FULLMATCH(token):
                return self._fail(i)
            self._value_done()
            return i
        return i

    def _open_string(self, *, is_key: bool) -> None:
        self._in_string = True
        self._string_is_key = is_key
        self._capture = len(self._stack) <= WATCH_DEPTH
        self._token = []

    def _string_done(self) -> bool:
        """A string closed: hand it to the watcher; False means stop."""
        depth = len(self._stack)
        if self._capture:
            raw = "".join(self._token)
            if "\\" in raw:
                try:
                    decoded = loads_json('"' + raw + '"')
                except ValueError:
                    return False
                if not isinstance(decoded, str):  # pragma: no cover - a JSON string always decodes to str
                    return False
            else:  # no escape: the string is its own text (raw control characters are tolerated)
                decoded = raw
            if self._string_is_key:
                self._keys[-1] = decoded
                self._expect = _COLON
                return self._watch.key(depth, decoded)
            key = self._keys[-1] if self._stack and self._stack[-1] == "{" else None
            if not self._watch.string_value(depth, key, decoded):
                return False
        elif self._string_is_key:
            self._expect = _COLON
            return True
        self._value_done()
        return True

    def _closed(self) -> bool:
        """The innermost container closed; True when it was the root (the value is complete)."""
        self._stack.pop()
        self._keys.pop()
        if self._stack:
            self._expect = _COMMA_OR_CLOSE
            return False
        self.status = DONE
        return True

    def _value_done(self) -> None:
        if self._stack:
            self._expect = _COMMA_OR_CLOSE
        else:
            self.status = DONE
