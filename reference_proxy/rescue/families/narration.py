"""Calls a model narrates in its text, in a shape its client's history taught it.

- ``[Called NAME with args: {json}]`` (imhuimie/kiro2api ``prompt.md``: Claude served
  through Kiro writes ``[Called TodoWrite with args: {…}] [Called Bash with args: {…}]`` once
  a proxy has flattened its earlier calls into that text). One call per bracket; the JSON
  must be an object and the bracket must close right after it (the capture's second call,
  ``{…}}]``, has one brace too many, and stays text).
- ``[TOOL_CALL]\\n{tool => "NAME", args => {\\n  --key VALUE\\n}}\\n[/TOOL_CALL]``, the arrow
  form MiniMax models write under Roo Code (RooCodeInc/Roo-Code#10547): each value is JSON,
  read string-aware, so the closer inside a string does not end the call.
"""

from __future__ import annotations

import re
from typing import Any, Final

from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.families.orphans import OrphanParser
from reference_proxy.rescue.family import (
    MAX_NAME,
    NO_NAME,
    CarriedParser,
    Context,
    Family,
    MarkerParser,
    Opener,
    Verdict,
    accept,
    name_end,
    reject,
    skip_ws,
    starts,
)
from reference_proxy.rescue.jsonscan import NOT_JSON, JsonScanner, Status
from reference_proxy.rescue.toolbox import Toolbox

CALLED: Final = "[Called "
WITH_ARGS: Final = " with args:"

_NAME: Final = 0
_BRACE: Final = 1
_JSON: Final = 2
_CLOSE: Final = 3


class NarrationParser(CarriedParser):
    def __init__(self, tools: Toolbox) -> None:
        super().__init__(len(CALLED))
        self._tools = tools
        self._state = _NAME
        self._searched = 0
        self._name = ""
        self._json = JsonScanner()
        self._arguments: Any = None

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            if state == _NAME:
                k = name_end(s, i, WITH_ARGS, self._searched)
                if k < 0:
                    if k == NO_NAME:
                        return reject(base + i)
                    self._searched = max(0, n - i - len(WITH_ARGS) + 1)
                    return i
                name = self._tools.resolve(s[i:k])
                if name is None:
                    return reject(base + k)
                self._name, self._state, i = name, _BRACE, k + len(WITH_ARGS)
                continue
            if state == _JSON:
                i = self._json.feed(s, i)
                if self._json.status is Status.MORE:
                    return i
                value = self._json.result()
                if value is NOT_JSON:
                    return reject(base + i)
                self._arguments, self._state = value, _CLOSE
                continue
            i = skip_ws(s, i)
            if i >= n:
                return i
            if state == _BRACE:
                if s[i] != "{":
                    return reject(base + i)
                self._state = _JSON
                continue
            # _CLOSE: the bracket closes right after the arguments
            if s[i] != "]":
                return reject(base + i)
            call = json_call(self._name, self._arguments)
            return accept((call,), base + i + 1) if call is not None else reject(base + i + 1)
        return i


class Narration(Family):
    name = "narration"
    formats: tuple[str, ...] = ("narration",)
    openers: tuple[Opener, ...] = (Opener(CALLED),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return NarrationParser(tools)


TOOL_CALL: Final = "[TOOL_CALL]"
END_TOOL_CALL: Final = "[/TOOL_CALL]"
_FLAG: Final = re.compile(r"--([A-Za-z_][\w-]*)[ \t]+")

# States: the literal each expects after blanks, and the state it leads to.
_OPEN: Final = 0
_TOOL: Final = 1
_TOOL_ARROW: Final = 2
_TOOL_NAME: Final = 3
_COMMA: Final = 4
_ARGS: Final = 5
_ARGS_ARROW: Final = 6
_ARGS_OPEN: Final = 7
_ITEM: Final = 8
_VALUE: Final = 9
_OUTER: Final = 10
_END: Final = 11
_LITERALS: Final[dict[int, str]] = {_OPEN: "{", _TOOL: "tool", _TOOL_ARROW: "=>", _COMMA: ",", _ARGS: "args",
                             _ARGS_ARROW: "=>", _ARGS_OPEN: "{", _OUTER: "}", _END: END_TOOL_CALL}


class ArrowParser(CarriedParser):
    def __init__(self, tools: Toolbox) -> None:
        super().__init__(len(TOOL_CALL))
        self._tools = tools
        self._state = _OPEN
        self._json: JsonScanner | None = None
        self._name = ""
        self._key = ""
        self._arguments: dict[str, Any] = {}

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            scanner = self._json
            if scanner is not None:
                i = scanner.feed(s, i)
                if scanner.status is Status.MORE:
                    return i
                value = scanner.result()
                self._json = None
                if state == _TOOL_NAME:
                    name = self._tools.resolve(value) if isinstance(value, str) else None
                    if name is None:
                        return reject(base + i)
                    self._name, self._state = name, _COMMA
                else:
                    if value is NOT_JSON:
                        return reject(base + i)
                    self._arguments[self._key] = value
                    self._state = _ITEM
                continue
            i = skip_ws(s, i)
            if i >= n:
                return i
            if state in (_TOOL_NAME, _VALUE):
                self._json = JsonScanner()
                continue
            if state == _ITEM:
                if s[i] == "}":
                    self._state, i = _OUTER, i + 1
                    continue
                m = _FLAG.match(s, i, min(n, i + MAX_NAME))
                if m is None:
                    if n - i < MAX_NAME and "\n" not in s[i:] and s.startswith("--"[: n - i], i):
                        return i  # the flag may still be arriving
                    return reject(base + i)
                self._key, self._state, i = m.group(1), _VALUE, m.end()
                if i >= n:
                    return i
                continue
            literal = _LITERALS[state]
            found = starts(s, i, literal)
            if found is None:
                return i
            if not found:
                return reject(base + i)
            i += len(literal)
            if state == _END:
                call = json_call(self._name, self._arguments)
                return accept((call,), base + i) if call is not None else reject(base + i)
            self._state = state + 1 if state != _OUTER else _END
        return i


class ArrowCalls(Family):
    """The closer left over after a call (``[/TOOL_CALL]`` written twice) is this family's
    own opener, not the orphan family's: that one counts at a line start, where ``[``
    already opens a pythonic list, and a split ``[/TOOL`` would be given to that first."""

    name = "roo-tool-call"
    formats: tuple[str, ...] = ("roo-tool-call",)
    openers: tuple[Opener, ...] = (Opener(TOOL_CALL), Opener(END_TOOL_CALL))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        if opener == END_TOOL_CALL:
            return OrphanParser(opener, context.after_call)
        return ArrowParser(tools)
