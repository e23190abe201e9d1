"""Bare JSON calls: a line that is nothing but call objects (vllm-tool-proxy).

Qwen2.5 sometimes drops the ``<tools>`` tags: the whole answer, or one line of it, is
``{"name": ..., "arguments": {...}}`` (or an array of them, or several objects on one
line, or one object pretty-printed over many lines). Prose holds JSON too, so the bar
is high: the value must start a line, every object must be a call to a declared tool
with no other keys, and nothing but blanks may follow it on its last line. The marker
is given up the moment any of that fails. Llama 3.x writes ``{"name": ..., "parameters":
...}`` objects separated by ``; ``, which is read the same way. An answer that opens with
its calls may go on in prose on the same line (Llama 3.x: ``{"name": "searchTool", ...}
The arguments I passed were ...``, vLLM's ``llama3_json`` fixtures,
https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_llama3_json_tool_parser.py):
the calls are calls and the prose, a new sentence, stays text. Anywhere else, or when the
words after the value go on with it as a sentence's subject (``{...} is the call``), prose
after the value on its line makes it text: a sentence that shows a call is no call.
"""

from __future__ import annotations

import re
from typing import Any, Final

from reference_proxy.rescue.families.json_calls import CALL_KEYS, CallWatcher, calls_from_values
from reference_proxy.rescue.family import CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, reject
from reference_proxy.rescue.jsonscan import MORE, NOT_JSON, JsonScanner
from reference_proxy.rescue.toolbox import Toolbox

PYTHON_TAG: Final = "<|python_tag|>"
"""Llama 3.x's token before code for its built-in tools; models put it before JSON calls too."""
_BLANKS: Final = re.compile(r"[ \t\r]*")
_JSON: Final = 0
_AFTER: Final = 1  # a value is complete; only blanks, another value or the line end may follow


class BareJsonParser(CarriedParser):
    def __init__(self, tools: Toolbox, skip: int = 0, *, leading: bool = False) -> None:
        """``skip``: the length of a token before the JSON (``<|python_tag|>``); ``leading``:
        the value opens the answer, so prose may follow it on its line."""
        super().__init__(skip)
        self._leading = leading
        self._gap = False  # blanks were read after the last value
        self._tools = tools
        self._state = _AFTER if skip else _JSON
        self._json = JsonScanner(CallWatcher(tools, keys=CALL_KEYS))
        self._values: list[Any] = []
        self._separated = False  # a ';' was read after the last value

    def _verdict(self, end: int) -> Verdict:
        calls = calls_from_values(self._values, self._tools)
        return accept(calls, end) if calls else reject(end)

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            if self._state == _JSON:
                i = self._json.feed(s, i)
                if self._json.status is MORE:
                    break
                value = self._json.result()
                if value is NOT_JSON:
                    return reject(base + i)
                self._values.append(value)
                self._state = _AFTER
                continue
            k = _BLANKS.match(s, i).end()  # type: ignore[union-attr]
            self._gap = self._gap or k > i
            i = k
            if i >= n:
                break
            c = s[i]
            if c == "\n":
                calls = None if self._separated else calls_from_values(self._values, self._tools)
                return accept(calls, base + i + 1) if calls else reject(base + i)
            if c == ";" and not self._separated:  # Llama 3.x: "{...}; {...}"
                self._separated = True
                i += 1
                continue
            if c not in "{[":
                if self._leading and not self._separated and c.isupper() and self._gap:
                    return self._verdict(base + i)
                return reject(base + i)
            self._separated = self._gap = False
            self._json = JsonScanner(CallWatcher(self._tools, keys=CALL_KEYS))
            self._state = _JSON
        return i

    def finish(self) -> Verdict:
        end = self._carry.end
        if self._state == _AFTER and not self._separated and self._values:
            return self._verdict(end)
        return reject(end)


class BareJson(Family):
    name = "bare-json"
    formats: tuple[str, ...] = ("bare-json", "llama3-json")
    openers: tuple[Opener, ...] = (Opener("{", line_start=True), Opener("[", line_start=True), Opener(PYTHON_TAG))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        leading = context.line_start and context.before == ""
        return BareJsonParser(tools, len(opener) if opener == PYTHON_TAG else 0, leading=leading)
