"""GLM-4.5/4.6: ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>``;
GLM-4.7 writes the same tags with nothing between them (vLLM's ``glm47`` parser).

Same opener as Hermes and Qwen3-Coder; a declared tool's name right after it (not JSON,
not ``<function=``) makes the marker GLM's. Blanks between the tags are free (models
also write them on one line, ``<tool_call>ls <arg_key>dir</arg_key> <arg_value>x
</arg_value> </tool_call>``). Values are bare text typed by the tool's schema; an
``</arg_value>`` ends a value only when the next key or the closer follows it.
"""

from __future__ import annotations

import re
from typing import Any, Final

from reference_proxy.rescue.coercion import typed_value
from reference_proxy.rescue.family import (
    NOT_YET, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, reject,
)
from reference_proxy.rescue.tags import Tags, TextValue
from reference_proxy.rescue.toolbox import Toolbox

OPEN: Final = "<tool_call>"
CLOSE: Final = "</tool_call>"
KEY, END_KEY = "<arg_key>", "</arg_key>"
VALUE, END_VALUE = "<arg_value>", "</arg_value>"
_AFTER_VALUE: Final = Tags((KEY, CLOSE))
_MAX_NAME: Final = 256
_NAME_END: Final = re.compile(r"[\n \t\r<]")
_NOT_A_NAME: Final = frozenset("{[<\n \t\r")  # right after the opener: no name can start here

_NAME: Final = 0
_PAIRS: Final = 1
_KEY: Final = 2
_VALUE_OPEN: Final = 3
_VALUE: Final = 4
_CLOSED: Final = 5
# After blanks, the tags that may come next in a state and the states they lead to.
_TAGS: Final[dict[int, Tags]] = {
    _PAIRS: Tags((KEY, CLOSE), (_KEY, _CLOSED)),
    _VALUE_OPEN: Tags((VALUE,), (_VALUE,)),
}


class GlmParser(CarriedParser):
    def __init__(self, tools: Toolbox) -> None:
        super().__init__(len(OPEN))
        self._tools = tools
        self._state = _NAME
        self._name = ""
        self._key = ""
        self._params: dict[str, Any] = {}
        self._text = TextValue()

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            if state == _NAME:
                if s[i] in "{[<":
                    return reject(base + i)  # Hermes JSON or Qwen3-Coder's <function=
                m = _NAME_END.search(s, i, i + _MAX_NAME)
                j = m.start() if m is not None else -1
                if j < 0:
                    return reject(base + i) if n - i > _MAX_NAME else i
                name = self._tools.resolve(s[i:j])
                if name is None:
                    return reject(base + j)
                self._name, self._state, i = name, _PAIRS, j
                continue
            if state == _KEY:
                i, written = self._text.read(s, i, END_KEY)
                if written is None:
                    return i
                self._key, self._state = written.strip(), _VALUE_OPEN
                continue
            if state == _VALUE:
                i, written = self._text.read(s, i, END_VALUE, _AFTER_VALUE)
                if written is None:
                    return i
                self._params[self._key] = typed_value(written, self._tools.property_schema(self._name, self._key))
                self._state = _PAIRS
                continue
            i, state = _TAGS[state].next(s, i)
            if state < 0:
                return i if state == NOT_YET else reject(base + i)
            self._state = state
            if state == _CLOSED:
                return accept((Call(self._name, self._params),), base + i)
        return i


class Glm(Family):
    name = "glm"
    formats: tuple[str, ...] = ("glm", "glm47")
    openers: tuple[Opener, ...] = (Opener(OPEN),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return GlmParser(tools)

    def declines(self, opener: str, s: str, i: int) -> int | None:
        # A name must follow at once: JSON, a tag or a blank there is Hermes' or Qwen3-Coder's.
        return len(opener) if i < len(s) and s[i] in _NOT_A_NAME else None
