"""GLM-4.5/4.6: ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>``.

Same opener as Hermes and Qwen3-Coder; a declared tool's name right after it (not JSON,
not ``<function=``) makes the marker GLM's. Blanks between the tags are free (models
also write them on one line, ``<tool_call>ls <arg_key>dir</arg_key> <arg_value>x
</arg_value> </tool_call>``). Values are bare text typed by the tool's schema; an
``</arg_value>`` ends a value only when the next key or the closer follows it.
"""

from __future__ import annotations

import re
from typing import Any

from reference_proxy.rescue.coercion import typed_value
from reference_proxy.rescue.family import (
    Call,
    Carry,
    Context,
    Family,
    MarkerParser,
    Opener,
    Verdict,
    accept,
    confirmed,
    reject,
    skip_ws,
    starts,
)
from reference_proxy.rescue.toolbox import Toolbox

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
KEY, END_KEY = "<arg_key>", "</arg_key>"
VALUE, END_VALUE = "<arg_value>", "</arg_value>"
_AFTER_VALUE = (KEY, CLOSE)
_MAX_NAME = 256
_NAME_END = re.compile(r"[\n \t\r<]")
_NOT_A_NAME = frozenset("{[<\n \t\r")  # right after the opener: no name can start here

_NAME, _PAIRS, _KEY, _VALUE_OPEN, _VALUE = range(5)


class GlmParser(MarkerParser):
    def __init__(self, tools: Toolbox) -> None:
        self._tools = tools
        self._carry = Carry()
        self._skip = len(OPEN)
        self._state = _NAME
        self._name = ""
        self._key = ""
        self._params: dict[str, Any] = {}
        self._value: list[str] = []

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        s, i = carry.join(text, start)
        i += self._skip
        self._skip = 0
        n = len(s)
        while i < n:
            state = self._state
            if state == _NAME:
                if s[i] in "{[<":
                    return reject(carry.base + i)  # Hermes JSON or Qwen3-Coder's <function=
                m = _NAME_END.search(s, i, i + _MAX_NAME)
                j = m.start() if m is not None else -1
                if j < 0:
                    if n - i > _MAX_NAME:
                        return reject(carry.base + i)
                    break
                name = self._tools.resolve(s[i:j])
                if name is None:
                    return reject(carry.base + j)
                self._name, self._state, i = name, _PAIRS, j
                continue
            if state in (_KEY, _VALUE):
                end = END_KEY if state == _KEY else END_VALUE
                j = s.find(end, i)
                if state == _VALUE:  # a closing tag inside the value is followed by neither tag
                    while j >= 0 and confirmed(s, j + len(end), _AFTER_VALUE) is False:
                        j = s.find(end, j + 1)
                    if j >= 0 and confirmed(s, j + len(end), _AFTER_VALUE) is None:
                        self._value.append(s[i:j])
                        i = j
                        break
                if j < 0:
                    keep = max(i, n - len(end) + 1)
                    self._value.append(s[i:keep])
                    i = keep
                    break
                self._value.append(s[i:j])
                written, self._value = "".join(self._value), []
                if state == _KEY:
                    self._key, self._state = written.strip(), _VALUE_OPEN
                else:
                    schema = self._tools.property_schema(self._name, self._key)
                    self._params[self._key] = typed_value(written, schema)
                    self._state = _PAIRS
                i = j + len(end)
                continue
            i = skip_ws(s, i)
            if i >= n:
                break
            if state == _VALUE_OPEN:
                found = starts(s, i, VALUE)
                if found:
                    i += len(VALUE)
                    self._state = _VALUE
                    continue
            else:  # _PAIRS
                found = starts(s, i, KEY)
                if found:
                    i += len(KEY)
                    self._state = _KEY
                    continue
                if found is False:
                    found = starts(s, i, CLOSE)
                    if found:
                        return accept((Call(self._name, self._params),), carry.base + i + len(CLOSE))
            if found is None:
                break
            return reject(carry.base + i)
        carry.keep(s, min(i, n))
        return None

    def finish(self) -> Verdict:
        return reject(self._carry.end)


class Glm(Family):
    name = "glm"
    formats = ("glm",)
    openers = (Opener(OPEN),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return GlmParser(tools)

    def declines(self, opener: str, s: str, i: int) -> int | None:
        # A name must follow at once: JSON, a tag or a blank there is Hermes' or Qwen3-Coder's.
        return len(opener) if i < len(s) and s[i] in _NOT_A_NAME else None
