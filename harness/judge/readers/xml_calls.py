"""Reading XML tool calls out of content the way XML-mode agent clients do.

Cline, Roo and Kilo in XML mode find ``<tool_name>`` and ``<param>`` tags whose
names they know; every parameter ends at its first closing tag except
``write_to_file``'s ``content``, which ends at the *last* ``</content>`` of the call.
The ``<invoke name="f"><parameter name="p">`` style (optionally wrapped in
``<function_calls>``) is read too. Values are raw text: a proxy that entity-escapes
them hands the client ``&lt;`` instead of ``<``.
"""

from __future__ import annotations

import bisect
import html
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from harness.judge.compare import json_equal

# Tools whose ``content`` parameter may itself contain ``</content>``.
LAST_CLOSE_CONTENT_TOOLS = frozenset({"write_to_file", "new_rule"})

_INVOKE_OPEN = r"<invoke\s+name\s*=\s*(?:\"([^\"]*)\"|'([^']*)')\s*>"
_INVOKE_BODY = re.compile(r"</invoke>|<parameter\s+name\s*=\s*(?:\"([^\"]*)\"|'([^']*)')\s*>")
_WRAPPER = re.compile(r"</?function_calls>")
_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);")


@dataclass(frozen=True, slots=True)
class XmlCall:
    name: str
    params: Mapping[str, str]  # values as the client reads them (one edge newline removed)
    style: Literal["cline", "invoke"]
    start: int
    end: int
    complete: bool  # False when the text ends before the call's closing tag


@dataclass(frozen=True, slots=True)
class XmlParse:
    calls: tuple[XmlCall, ...]
    outside: str  # the text around the calls, <function_calls> wrappers removed
    runs: tuple[tuple[int, int], ...]  # each unbroken piece of ``outside``: (its start there, its start in the text)

    def text_offset(self, outside_offset: int) -> int:
        """Where character ``outside_offset`` of ``outside`` sits in the parsed text."""
        at = bisect.bisect_right(self.runs, outside_offset, key=lambda run: run[0]) - 1
        if at < 0:
            return 0
        start, origin = self.runs[at]
        return origin + outside_offset - start


def tool_vocabulary(request: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """Declared tool names and each tool's parameter names (its schema's properties)."""
    vocab: dict[str, frozenset[str]] = {}
    for tool in request.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
            continue
        params = fn.get("parameters")
        props = params.get("properties") if isinstance(params, Mapping) else None
        names = props if isinstance(props, Mapping) else {}
        vocab[fn["name"]] = frozenset(p for p in names if isinstance(p, str))
    return vocab


def client_value(raw: str) -> str:
    """A parameter value as the client keeps it: one newline after the opening tag and
    one before the closing tag belong to the markup."""
    if raw.startswith("\r\n"):
        raw = raw[2:]
    elif raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\r\n"):
        raw = raw[:-2]
    elif raw.endswith("\n"):
        raw = raw[:-1]
    return raw


def rendered(value: Any) -> str:
    """An expected argument as an XML client would read it: strings raw, everything
    else as JSON text."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def value_matches(expected: Any, received: Any) -> bool:
    """Whether a received XML value means the expected argument. Clients trim the
    value (Cline applies ``trim()``), so white space at its ends never counts;
    non-string arguments compare as JSON when the value parses."""
    if not isinstance(received, str):
        return json_equal(expected, received)
    if isinstance(expected, str):
        return received.strip() == expected.strip()
    try:
        parsed = json.loads(received)
    except ValueError:
        return received.strip() == rendered(expected).strip()
    return json_equal(expected, parsed)


def escaped_entities(value: str) -> list[str]:
    """Entity references in ``value`` that decode to something else."""
    found = _ENTITY.findall(value)
    return found if found and html.unescape(value) != value else []


def _names(names: tuple[str, ...]) -> str:
    """A group matching ``<name>`` for any of ``names`` (a group that never matches if none)."""
    return "<(" + "|".join(re.escape(n) for n in names) + ")>" if names else "((?!))"


@lru_cache(maxsize=256)
def _opener(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(_INVOKE_OPEN + "|" + _names(names))


@lru_cache(maxsize=256)
def _body(tool: str, params: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(re.escape(f"</{tool}>") + "|" + _names(params))


def _cline_call(text: str, name: str, params: Collection[str], start: int, body_start: int) -> XmlCall:
    pattern = _body(name, tuple(sorted(params, key=len, reverse=True)))
    values: dict[str, str] = {}
    cur = body_start
    close_tool = f"</{name}>"
    while True:
        m = pattern.search(text, cur)
        if m is None:
            return XmlCall(name, values, "cline", start, len(text), False)
        param = m.group(1)
        if param is None:
            return XmlCall(name, values, "cline", start, m.end(), True)
        value_start = m.end()
        close = f"</{param}>"
        first = text.find(close, value_start)
        if first < 0:
            values[param] = client_value(text[value_start:])
            return XmlCall(name, values, "cline", start, len(text), False)
        if name in LAST_CLOSE_CONTENT_TOOLS and param == "content":
            tool_end = text.find(close_tool, first)
            region_end = tool_end if tool_end >= 0 else len(text)
            last = text.rfind(close, value_start, region_end)
            values[param] = client_value(text[value_start:last])
            cur = last + len(close)
        else:
            values[param] = client_value(text[value_start:first])
            cur = first + len(close)


def _invoke_call(text: str, name: str, start: int, body_start: int) -> XmlCall:
    values: dict[str, str] = {}
    cur = body_start
    while True:
        m = _INVOKE_BODY.search(text, cur)
        if m is None:
            return XmlCall(name, values, "invoke", start, len(text), False)
        if m.group(0) == "</invoke>":
            return XmlCall(name, values, "invoke", start, m.end(), True)
        param = m.group(1) if m.group(1) is not None else m.group(2)
        close = text.find("</parameter>", m.end())
        if close < 0:
            values[param] = client_value(text[m.end() :])
            return XmlCall(name, values, "invoke", start, len(text), False)
        values[param] = client_value(text[m.end() : close])
        cur = close + len("</parameter>")


def parse_xml_calls(text: str, tools: Mapping[str, Collection[str]]) -> XmlParse:
    """Every XML tool call in ``text`` in order, and the text outside them.

    Cline-style tags are recognised only for declared tools and their declared
    parameters (as the clients match fixed lists); ``<invoke>`` calls whatever
    their name."""
    opener = _opener(tuple(sorted(tools, key=len, reverse=True)))
    calls: list[XmlCall] = []
    segments: list[str] = []
    spans: list[tuple[int, int]] = []  # [start, end) in ``text`` of each segment
    pos = 0
    while pos <= len(text):
        m = opener.search(text, pos)
        if m is None:
            break
        segments.append(text[pos : m.start()])
        spans.append((pos, m.start()))
        if m.group(3) is not None:
            call = _cline_call(text, m.group(3), tools.get(m.group(3), ()), m.start(), m.end())
        else:
            invoked = m.group(1) if m.group(1) is not None else m.group(2)
            call = _invoke_call(text, invoked, m.start(), m.end())
        calls.append(call)
        pos = call.end
    segments.append(text[pos:])
    spans.append((pos, len(text)))
    outside = "".join(segments)
    wrappers = [m.span() for m in _WRAPPER.finditer(outside)] if any(c.style == "invoke" for c in calls) else []
    if wrappers:
        outside = _WRAPPER.sub("", outside)
    return XmlParse(tuple(calls), outside, _runs(spans, wrappers))


def _runs(spans: list[tuple[int, int]], removed: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The unbroken pieces of the joined ``spans`` once the ``removed`` ranges (offsets
    into the joined text) are cut out: (start in the result, start in the parsed text)."""
    joined: list[tuple[int, int, int]] = []  # (start in the joined text, start in the parsed text, length)
    at = 0
    for start, end in spans:
        if end > start:
            joined.append((at, start, end - start))
            at += end - start
    bounds = [0, *(edge for span in removed for edge in span), at]
    kept = list(zip(bounds[::2], bounds[1::2]))  # the ranges between the removed ones
    out: list[tuple[int, int]] = []
    size = 0
    for lo, hi in kept:
        for start, origin, length in joined:
            a, b = max(lo, start), min(hi, start + length)
            if a < b:
                out.append((size, origin + a - start))
                size += b - a
    return tuple(out)
