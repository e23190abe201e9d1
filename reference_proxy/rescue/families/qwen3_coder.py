"""Qwen3-Coder: ``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nVALUE\\n</parameter>\\n</function>\\n</tool_call>``.

Values are bare text, possibly many lines; exactly one newline after the parameter's
opening tag and one before its closing tag belong to the markup. A missing
``</parameter>`` is tolerated when the next parameter or ``</function>`` starts a line, as
the model sometimes forgets it; a ``</parameter>`` followed by neither is part of the
value (file content may quote the tag). Both closing tags may be missing at once, the
value running into the wrapper's ``</tool_call>`` on a line of its own (vllm#21571:
``<parameter=input_num>\n1024\n\n\n</tool_call>``): that ends the call when nothing but
blanks or the next ``<tool_call>`` follows it. The ``<tool_call>`` wrapper may be missing: a
bare ``<function=…>…</function>`` is a call too, as Qwen3-Coder models sometimes write
it. Values are typed by the tool's schema.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Final

from reference_proxy.rescue.coercion import typed_value
from reference_proxy.rescue.family import (
    MAX_GAP, NOT_YET, NO_NAME, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept,
    name_end, reject, skip_ws, starts,
)
from reference_proxy.rescue.tags import Tags
from reference_proxy.rescue.toolbox import Toolbox

FUNCTION: Final = "<function="
PARAMETER: Final = "<parameter="
END_PARAMETER: Final = "</parameter>"
END_FUNCTION: Final = "</function>"
END_CALL: Final = "</tool_call>"
# A value ends at its closing tag, or (the closing tag forgotten) where the next
# parameter or the function's end starts a line.
_VALUE_END: Final = re.compile(f"{re.escape(END_PARAMETER)}|\\n(?:{re.escape(PARAMETER)}|{re.escape(END_FUNCTION)})")
_AFTER_VALUE: Final = Tags((PARAMETER, END_FUNCTION))
_VALUE_END_KEEP: Final = max(len(END_PARAMETER), 1 + len(PARAMETER), 1 + len(END_FUNCTION)) - 1
_GAP: Final = re.compile(r"[ \t\r\n]*")

_HEAD: Final = 0
_NAME: Final = 1
_PARAMS: Final = 2
_PARAM_NAME: Final = 3
_VALUE_START: Final = 4
_VALUE: Final = 5
_TAIL: Final = 6
_CLOSED: Final = 7
# After blanks, the tags that may come next in a state and the states they lead to (in
# _TAIL, the wrapper's closing tag leads to _CLOSED).
_TAGS: Final[dict[int, Tags]] = {
    _HEAD: Tags((FUNCTION,), (_NAME,)),
    _PARAMS: Tags((PARAMETER, END_FUNCTION), (_PARAM_NAME, _TAIL)),
}


@cache
def _closing(end_call: str) -> tuple[Tags, re.Pattern[str]]:
    """For a wrapper's closing tag: the tail (that tag, after the function's end) and a
    value's end, or (both closing tags forgotten) the wrapper's end on its own line;
    compiled once per wrapper, not once per call."""
    value_end = re.compile(f"{_VALUE_END.pattern}|(?P<close>\\n[ \\t\\r\\n]*{re.escape(end_call)})")
    return Tags((end_call,), (_CLOSED,)), value_end


class Qwen3CoderParser(CarriedParser):
    def __init__(self, opener: str, tools: Toolbox, end_call: str = END_CALL, *, edge_newlines: bool = True) -> None:
        """``end_call``: the wrapper's closing tag (Seed-OSS wraps the same calls in
        ``<seed:tool_call>``); ``edge_newlines``: one newline after the opening and before
        the closing parameter tag belongs to the markup (Seed-OSS writes values inline)."""
        self._wrapped = opener == end_call.replace("/", "")
        super().__init__(len(opener) if self._wrapped else 0)  # unwrapped: parsed from <function= on
        self._edges = edge_newlines
        self._tools = tools
        self._tail, self._value_end = _closing(end_call)
        self._end_call = end_call
        self._open_call = end_call.replace("/", "")
        self._value_keep = max(_VALUE_END_KEEP, len(end_call))
        self._state = _HEAD
        self._name = ""
        self._param = ""
        self._params: dict[str, Any] = {}
        self._value: list[str] = []
        self._searched = 0  # how much of the carried text a name was already searched in

    def _end_value(self) -> None:
        value = "".join(self._value)
        if self._edges and value.endswith("\n"):
            value = value[:-1]
        self._params[self._param] = typed_value(value, self._tools.property_schema(self._name, self._param))
        self._value = []

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        self.waits_for = ""
        while i < n:
            state = self._state
            if state == _VALUE:
                m = self._value_end.search(s, i)
                if m is not None and m.group("close") is not None:
                    closed = self._closed_early(s, i, m)
                    if isinstance(closed, Verdict):
                        return closed
                    if closed < 0:  # cannot tell yet: hold the closer
                        self._value.append(s[i : m.start()])
                        i = m.start()
                        break
                    self._value.append(s[i:closed])  # the value quotes the wrapper's end
                    i = closed
                    continue
                if m is None:
                    keep = max(i, n - self._value_keep)
                    self._value.append(s[i:keep])
                    i = keep
                    # Every way a value ends holds a "<": none kept, none can end before one comes.
                    self.waits_for = "<" if s.find("<", i) < 0 else ""
                    break
                if m.group() == END_PARAMETER:
                    real = _AFTER_VALUE.confirmed(s, m.end())
                    if real is False:  # the value quotes the tag
                        self._value.append(s[i : m.end()])
                        i = m.end()
                        continue
                    if real is None:
                        self._value.append(s[i : m.start()])
                        i = m.start()
                        break
                self._value.append(s[i : m.start()])
                self._end_value()
                i = m.end() if m.group() == END_PARAMETER else m.start()
                self._state = _PARAMS
                continue
            if state == _VALUE_START:
                if s[i] == "\n" and self._edges:
                    i += 1
                self._state = _VALUE
                continue
            if state in (_NAME, _PARAM_NAME):
                # Bounded: a name that has not ended within MAX_NAME characters is none.
                j = name_end(s, i, ">", self._searched)
                if j < 0:
                    if j == NO_NAME:
                        return reject(base + i)
                    self._searched = n - i
                    break
                self._searched = 0
                written = s[i:j]
                i = j + 1
                if state == _NAME:
                    name = self._tools.resolve(written)
                    if name is None:
                        return reject(base + i)
                    self._name = name
                    self._state = _PARAMS
                else:
                    self._param = written.strip()
                    self._state = _VALUE_START
                continue
            i, state = (self._tail if state == _TAIL else _TAGS[state]).next(s, i)
            if state < 0:
                return i if state == NOT_YET else reject(base + i)
            self._state = state
            if state == _CLOSED or (state == _TAIL and not self._wrapped):
                return accept((Call(self._name, self._params),), base + i)
        return i


    def _closed_early(self, s: str, i: int, m: re.Match[str]) -> Verdict | int:
        """The wrapper's end ``m`` met inside a value: the call (it ends the call), -1 (cannot
        tell yet) or where the value goes on (it is part of the value)."""
        if not self._wrapped:
            return m.end()
        j = _GAP.match(s, m.end()).end()  # type: ignore[union-attr]
        if j - m.end() > MAX_GAP:
            return m.end()
        if j == len(s):
            return -1
        found = starts(s, j, self._open_call)
        if found is None:
            return -1
        if not found:
            return m.end()
        self._value.append(s[i : m.start()])
        return self._end_early(self._carry.base + m.end())

    def _end_early(self, end: int) -> Verdict:
        self._value = ["".join(self._value).rstrip("\r\n") + ("\n" if self._edges else "")]
        self._end_value()
        return accept((Call(self._name, self._params),), end)

    def finish(self) -> Verdict:
        carry = self._carry
        if self._state == _VALUE and self._wrapped and carry.text.startswith("\n"):
            k = carry.text.find(self._end_call)
            if k >= 0 and not carry.text[k + len(self._end_call) :].strip():
                return self._end_early(carry.pos + k + len(self._end_call))
        return reject(carry.end)


class Qwen3Coder(Family):
    name = "qwen3-coder"
    formats: tuple[str, ...] = ("qwen-coder",)
    openers: tuple[Opener, ...] = (Opener("<tool_call>"), Opener(FUNCTION))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return Qwen3CoderParser(opener, tools)

    def declines(self, opener: str, s: str, i: int) -> int | None:
        # Inside the wrapper, only <function= may come first (after blanks).
        if opener != FUNCTION:
            j = skip_ws(s, i)
            if j < len(s) and starts(s, j, FUNCTION) is False:
                return j - i + len(opener)
        return None


SEED_CALL: Final = "<seed:tool_call>"
SEED_END_CALL: Final = "</seed:tool_call>"


class SeedOss(Family):
    """ByteDance Seed-OSS: Qwen3-Coder's ``<function=…><parameter=…>`` calls inside
    ``<seed:tool_call>`` (vLLM's ``seed_oss`` parser)."""

    name = "seed-oss"
    formats: tuple[str, ...] = ("seed-oss",)
    openers: tuple[Opener, ...] = (Opener(SEED_CALL),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return Qwen3CoderParser(opener, tools, SEED_END_CALL, edge_newlines=False)
