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
from typing import Any

from reference_proxy.rescue.coercion import loads_json
from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.families.orphans import OrphanParser
from reference_proxy.rescue.family import (
    MAX_TAG, NOT_YET, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, reject,
)
from reference_proxy.rescue.tags import Tags, TextValue
from reference_proxy.rescue.toolbox import Toolbox

SEP = "<|sep|>"
TOOLS = "<|open|>tools<|sep|>"
END_TOOLS = "<|close|>tools<|sep|>"
RESPONSE = "<|open|>response<|sep|>"
END_RESPONSE = "<|close|>response<|sep|>"
CALL = "<|open|>call "
END_CALL = "<|close|>call<|sep|>"
ARGUMENT = "<|open|>argument "
END_ARGUMENT = "<|close|>argument<|sep|>"
_AFTER_VALUE = Tags((ARGUMENT, END_CALL))
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')

_CALLS, _CALL_ATTRS, _ARGS, _ARG_ATTRS, _VALUE = range(5)
_DONE = -10
_TAGS: dict[int, Tags] = {
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
