"""MiniMax M3's namespaced XML (its chat template,
https://huggingface.co/MiniMaxAI/MiniMax-M3/blob/main/chat_template.jinja, and vLLM's
``minimax_m3`` parser, https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_minimax_m3_tool_parser.py)::

    NS<tool_call>
    NS<invoke name="NAME">NS<path>src/a.py NS</path>NS<tags>NS<item>x NS</item>NS</tags>NS</invoke>
    NS</tool_call>

``NS`` is the namespace token ``]<]minimax[>[``, written before every tag. An argument is an
element named after the parameter; its content is either text (typed by the schema) or
elements: a list's members are ``item`` elements, an object's are named after its keys (a
key written twice is a list, as vLLM reads it). A null is never written (the template leaves
it out). Blanks between tags are free (models put each tag on a line of its own). A text
value ends at its element's closing tag only where the next tag follows it, so a value that
quotes the markup stays whole.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from reference_proxy.rescue.coercion import schema_types, typed_value, untyped_value
from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    MAX_NAME, NOT_YET, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, reject, skip_ws,
    starts,
)
from reference_proxy.rescue.tags import Tags, TextValue
from reference_proxy.rescue.toolbox import Toolbox

NS: Final = "]<]minimax[>["
OPEN: Final = NS + "<tool_call>"
INVOKE: Final = NS + '<invoke name="'
END_INVOKE: Final = NS + "</invoke>"
END: Final = NS + "</tool_call>"
_DIGITS: Final = re.compile(r"[+-]?[0-9]+")
_MAX_DEPTH: Final = 32
"""Deepest nesting of elements read; deeper is no call (no real argument nests so)."""

_INVOKES: Final = 0
_NAME: Final = 1
_CONTENT: Final = 2
_ELEMENTS: Final = 3
_TEXT: Final = 4
_DONE: Final = -10
_NEXT: Final = Tags((INVOKE, END), (_NAME, _DONE))
_AFTER_TEXT: Final = Tags((NS,))

Raw = str | list[tuple[str, Any]]
"""An element's content as read: its text, or its child elements in order."""


class _Element:
    __slots__ = ("key", "children")

    def __init__(self, key: str) -> None:
        self.key = key
        self.children: list[tuple[str, Raw]] = []


def shaped(raw: Raw, schema: Mapping[str, Any] | None, depth: int = 0) -> Any:
    """A value as read, as the JSON value its schema asks for (lists from ``item``
    elements, objects from named ones, text typed; an empty element is the schema's empty
    value)."""
    types = schema_types(schema)
    if isinstance(raw, str):
        if raw == "":
            for wanted in types:
                if wanted in ("string", "array", "object"):
                    return {"string": "", "array": [], "object": {}}[wanted]
        value = typed_value(raw, schema) if types else untyped_value(raw)
        if value is raw and "integer" in types and "string" not in types and _DIGITS.fullmatch(raw.strip()):
            return int(raw)  # the template writes a number as text: '018956' is 18956 (vLLM reads it so)
        return value
    inner = schema if schema is not None else {}
    listed = ("array" in types and "object" not in types) if types else all(k == "item" for k, _ in raw)
    if listed:
        items = inner.get("items")
        return [shaped(v, items if isinstance(items, Mapping) else None, depth + 1) for _, v in raw]
    properties = inner.get("properties")
    out: dict[str, Any] = {}
    repeated: set[str] = set()
    for key, v in raw:
        sub = properties.get(key) if isinstance(properties, Mapping) else None
        value = shaped(v, sub if isinstance(sub, Mapping) else None, depth + 1)
        if key not in out:
            out[key] = value
        elif key in repeated:
            out[key].append(value)
        else:
            out[key] = [out[key], value]
            repeated.add(key)
    return out


class MiniMaxM3Parser(CarriedParser):
    def __init__(self, tools: Toolbox) -> None:
        super().__init__(len(OPEN))
        self._tools = tools
        self._state = _INVOKES
        self._calls: list[Call] = []
        self._name = ""
        self._stack: list[_Element] = []
        self._text = TextValue()

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            state = self._state
            if state == _INVOKES:
                i, nxt = _NEXT.next(s, i)
                if nxt == NOT_YET:
                    return i
                if nxt == _DONE:
                    return accept(tuple(self._calls), base + i) if self._calls else reject(base + i)
                if nxt < 0:
                    return reject(base + i)
                self._state = _NAME
            elif state == _NAME:
                k = s.find('">', i, i + MAX_NAME + 2)
                if k < 0:
                    return reject(base + i) if n - i > MAX_NAME + 2 else i
                name = self._tools.resolve(s[i:k])
                if name is None:
                    return reject(base + i)
                self._name, self._stack = name, [_Element("")]
                i, self._state = k + 2, _ELEMENTS
            elif state == _CONTENT:  # an element just opened: text, or elements
                j = skip_ws(s, i)
                if j == n:
                    return i
                found = starts(s, j, NS)
                if found is None:
                    return i
                if found:
                    i, self._state = j, _ELEMENTS
                else:
                    self._state = _TEXT
            elif state == _TEXT:
                top = self._stack[-1]
                i, written = self._text.read(s, i, f"{NS}</{top.key}>", _AFTER_TEXT)
                if written is None:
                    return i
                self._stack.pop()
                self._stack[-1].children.append((top.key, written))
                self._state = _ELEMENTS
            else:
                step = self._element(s, i)
                if isinstance(step, Verdict):
                    return step
                if step < 0:
                    return i
                i = step
        return i

    def _element(self, s: str, i: int) -> Verdict | int:
        """In the elements of an invoke or of an element: the next tag, opening or closing
        one. The index after it; -1: not all here yet; or a verdict."""
        base = self._carry.base
        j = skip_ws(s, i)
        found = starts(s, j, NS + "<") if j < len(s) else None
        if found is None:
            return -1
        if not found:
            return reject(base + j)
        j += len(NS) + 1
        k = s.find(">", j, j + MAX_NAME + 2)
        if k < 0:
            return reject(base + j) if len(s) - j > MAX_NAME + 2 else -1
        tag = s[j:k]
        stack = self._stack
        if tag.startswith("/"):
            top = stack[-1]
            if len(stack) == 1:  # the invoke's end
                if tag != "/invoke":
                    return reject(base + j)
                arguments = {key: shaped(raw, self._tools.property_schema(self._name, key))
                             for key, raw in _merged(top.children)}
                call = json_call(self._name, arguments)
                if call is None:
                    return reject(base + k + 1)
                self._calls.append(call)
                self._state = _INVOKES
                return k + 1
            if tag[1:] != top.key:
                return reject(base + j)
            stack.pop()
            stack[-1].children.append((top.key, top.children or ""))
            return k + 1
        if not tag or any(c in tag for c in ' \t\n<"/') or len(stack) > _MAX_DEPTH:
            return reject(base + j)
        stack.append(_Element(tag))
        self._state = _CONTENT
        return k + 1


def _merged(children: list[tuple[str, Raw]]) -> list[tuple[str, Raw]]:
    """An invoke's arguments: a parameter written twice is one list (its values as items)."""
    counts: dict[str, int] = {}
    for key, _ in children:
        counts[key] = counts.get(key, 0) + 1
    out: list[tuple[str, Raw]] = []
    gathered: dict[str, list[tuple[str, Any]]] = {}
    for key, raw in children:
        if counts[key] == 1:
            out.append((key, raw))
        elif key not in gathered:
            gathered[key] = [("item", raw)]
            out.append((key, gathered[key]))
        else:
            gathered[key].append(("item", raw))
    return out


class MiniMaxM3(Family):
    name = "minimax-m3"
    formats: tuple[str, ...] = ("minimax-m3",)
    openers: tuple[Opener, ...] = (Opener(OPEN),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return MiniMaxM3Parser(tools)
