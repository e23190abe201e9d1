"""Kimi K3's XTML tools channel (vLLM's ``kimi_k3`` parser,
https://github.com/vllm-project/vllm/blob/main/vllm/frontend/processing/tool_parsers/kimi_k3_tool_parser.py)::

    <|open|>tools<|sep|><|open|>call tool="NAME" index="1"<|sep|>
    <|open|>argument key="K" type="string"<|sep|>VALUE<|close|>argument<|sep|>…<|close|>call<|sep|>…
    <|close|>tools<|sep|>

A ``type="string"`` value is the raw text; any other type is JSON. Attribute values escape
``&`` and ``"``. Blanks between blocks are free. vLLM's parser ends a value at the first
``<|close|>argument<|sep|>``; here it ends only where the next argument or the call's end
follows it, so a value that quotes the markup (a document about the format) stays whole.
The plain reply sits in a ``response`` channel before the tools; its opening marker is
often part of the prompt, so the answer holds the reply and then ``<|close|>response<|sep|>``:
either marker is channel markup, never text for the user.
"""

from __future__ import annotations

import re
from typing import Any, Final

from reference_proxy.rescue.coercion import loads_json
from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.families.orphans import OrphanParser
from reference_proxy.rescue.family import (
    MAX_TAG, NOT_YET, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, reject,
)
from reference_proxy.rescue.tags import Tags, TextValue
from reference_proxy.rescue.toolbox import Toolbox

SEP: Final = "<|sep|>"
TOOLS: Final = "<|open|>tools<|sep|>"
END_TOOLS: Final = "<|close|>tools<|sep|>"
RESPONSE: Final = "<|open|>response<|sep|>"
END_RESPONSE: Final = "<|close|>response<|sep|>"
CALL: Final = "<|open|>call "
END_CALL: Final = "<|close|>call<|sep|>"
ARGUMENT: Final = "<|open|>argument "
END_ARGUMENT: Final = "<|close|>argument<|sep|>"
_AFTER_VALUE: Final = Tags((ARGUMENT, END_CALL))
_ATTRIBUTE: Final = re.compile(r'(\w+)="([^"]*)"')

_CALLS: Final = 0
_CALL_ATTRS: Final = 1
_ARGS: Final = 2
_ARG_ATTRS: Final = 3
_VALUE: Final = 4
_DONE: Final = -10
_TAGS: Final[dict[int, Tags]] = {
    _CALLS: Tags((CALL, END_TOOLS), (_CALL_ATTRS, _DONE)),
    _ARGS: Tags((ARGUMENT, END_CALL), (_ARG_ATTRS, _CALLS)),
}


def attributes(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).replace("&quot;", '"').replace("&amp;", "&") for m in _ATTRIBUTE.finditer(text)}


class XtmlParser(CarriedParser):
    def __init__(self, tools: Toolbox) -> None:
        super().__init__(len(TOOLS))
        self._tools = tools
        self._state = _CALLS
        self._calls: list[Call] = []
        self._name = ""
        self._key = ""
        self._type = "string"
        self._arguments: dict[str, Any] = {}
        self._text = TextValue()

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            if state in (_CALL_ATTRS, _ARG_ATTRS):
                k = s.find(SEP, i, i + MAX_TAG)
                if k < 0:
                    return reject(base + i) if n - i >= MAX_TAG else i
                found = attributes(s[i:k])
                i = k + len(SEP)
                if state == _CALL_ATTRS:
                    name = self._tools.resolve(found.get("tool", ""))
                    if name is None:
                        return reject(base + i)
                    self._name, self._arguments, self._state = name, {}, _ARGS
                else:
                    self._key, self._type = found.get("key", ""), found.get("type", "string")
                    if not self._key:
                        return reject(base + i)
                    self._state = _VALUE
                continue
            if state == _VALUE:
                i, written = self._text.read(s, i, END_ARGUMENT, _AFTER_VALUE)
                if written is None:
                    return i
                if self._type == "string":
                    self._arguments[self._key] = written
                else:
                    try:
                        self._arguments[self._key] = loads_json(written)
                    except ValueError:
                        return reject(base + i)
                self._state = _ARGS
                continue
            i, nxt = _TAGS[state].next(s, i)
            if nxt < 0 and nxt != _DONE:
                return i if nxt == NOT_YET else reject(base + i)
            if state == _ARGS and nxt == _CALLS:
                call = json_call(self._name, self._arguments)
                if call is None:
                    return reject(base + i)
                self._calls.append(call)
            if nxt == _DONE:
                return accept(tuple(self._calls), base + i)
            self._state = nxt
        return i


class KimiK3(Family):
    name = "kimi-k3"
    formats: tuple[str, ...] = ("kimi-k3",)
    openers: tuple[Opener, ...] = (Opener(TOOLS), Opener(RESPONSE), Opener(END_RESPONSE))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        if opener != TOOLS:
            return OrphanParser(opener, True)  # the response channel's markers: markup, always
        return XtmlParser(tools)
