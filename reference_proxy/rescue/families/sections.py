"""Formats that write calls as special tokens around a name and a JSON object, inside a
section token pair: Kimi K2, DeepSeek V3.1 and DeepSeek V3.

    Kimi K2:  <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
              <|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>
    DeepSeek: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}
              <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>
    DeepSeek V3 (and R1): <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
              ```json\n{json}\n```<｜tool▁call▁end｜>\n...<｜tool▁calls▁end｜>

(vLLM's ``kimi_k2``, ``deepseek_v31`` and ``deepseekv3`` parsers.) Blanks between tokens
are free. The name part is read up to the separator token; Kimi's ``functions.`` prefix
and ``:N`` index are dropped. DeepSeek V3 writes the call's type there instead
(``function``), the name on the rest of the line and the arguments in a fence; R1's
distilled models misspell the section opener, in the ways llama.cpp's ``deepseek_r1``
parser lists. Every call must name a declared tool and carry a JSON object.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    Call,
    Carry,
    Context,
    Family,
    MarkerParser,
    Opener,
    Verdict,
    accept,
    reject,
    skip_ws,
    starts,
)
from reference_proxy.rescue.jsonscan import JsonScanner, Status
from reference_proxy.rescue.toolbox import Toolbox

_MAX_NAME = 256


@dataclass(frozen=True)
class Tokens:
    section_begin: str
    call_begin: str
    separator: str
    call_end: str
    section_end: str
    name_of: Callable[[str], str]
    fenced: bool = False
    """DeepSeek V3: ``function`` before the separator, the name and a ```` ```json ```` fence after."""


def _kimi_name(written: str) -> str:
    """``functions.read_file:0`` -> ``read_file``."""
    name = written.strip()
    if name.startswith("functions."):
        name = name[len("functions.") :]
    return re.sub(r":\d+\Z", "", name)


KIMI = Tokens("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
              "<|tool_call_end|>", "<|tool_calls_section_end|>", _kimi_name)
DEEPSEEK = Tokens("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
                  "<｜tool▁calls▁end｜>", str.strip)
DEEPSEEK_V3 = Tokens(DEEPSEEK.section_begin, DEEPSEEK.call_begin, DEEPSEEK.separator, DEEPSEEK.call_end,
                     DEEPSEEK.section_end, str.strip, fenced=True)
DEEPSEEK_V3_OPENERS = ("<｜tool▁calls▁begin｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>",
                       "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls｜>")
"""The section opener and the spellings R1's distilled models write instead (llama.cpp's
``deepseek_r1`` parser accepts these)."""
_TYPE = "function"
_FENCE = "```"
_FENCE_TAG = "json"

_CALLS, _NAME, _JSON, _END, _FNAME, _FENCE_OPEN, _FENCE_TAG_OR_JSON, _FENCE_CLOSE = range(8)


class SectionParser(MarkerParser):
    def __init__(self, tools: Toolbox, tokens: Tokens, opener: str = "") -> None:
        self._tools = tools
        self._t = tokens
        self._carry = Carry()
        self._skip = len(opener or tokens.section_begin)
        self._state = _CALLS
        self._name = ""
        self._json: JsonScanner | None = None
        self._calls: list[Call] = []

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry, t = self._carry, self._t
        s, i = carry.join(text, start)
        i += self._skip
        self._skip = 0
        n = len(s)
        while i < n:
            if self._state == _NAME:
                k = s.find(t.separator, i, i + _MAX_NAME + len(t.separator))
                if k < 0:
                    if n - i > _MAX_NAME + len(t.separator):
                        return reject(carry.base + i)
                    break
                if t.fenced:
                    if s[i:k].strip() != _TYPE:
                        return reject(carry.base + k)
                    i = k + len(t.separator)
                    self._state = _FNAME
                    continue
                name = self._tools.resolve(t.name_of(s[i:k]))
                if name is None:
                    return reject(carry.base + k)
                self._name = name
                i = skip_ws(s, k + len(t.separator))
                self._json = JsonScanner()
                self._state = _JSON
                continue
            if self._state == _FNAME:  # the name, up to the end of its line
                k = s.find("\n", i, i + _MAX_NAME + 1)
                if k < 0:
                    if n - i > _MAX_NAME:
                        return reject(carry.base + i)
                    break
                name = self._tools.resolve(s[i:k])
                if name is None:
                    return reject(carry.base + k)
                self._name = name
                i = k + 1
                self._state = _FENCE_OPEN
                continue
            if self._state == _FENCE_TAG_OR_JSON:  # after the opening fence: "json", then the object
                found = starts(s, i, _FENCE_TAG)
                if found is None:
                    break
                if found:
                    i += len(_FENCE_TAG)
                self._json = JsonScanner()
                self._state = _JSON
                continue
            if self._state == _JSON:
                scanner = self._json
                assert scanner is not None
                i = skip_ws(s, i) if not scanner.text() else i
                if i >= n:
                    break
                i = scanner.feed(s, i)
                if scanner.status is Status.MORE:
                    break
                if scanner.status is Status.ERROR:
                    return reject(carry.base + i)
                try:
                    value: Any = scanner.value()
                except ValueError:
                    return reject(carry.base + i)
                call = json_call(self._name, value) if isinstance(value, dict) else None
                if call is None:
                    return reject(carry.base + i)
                self._calls.append(call)
                self._state = _FENCE_CLOSE if t.fenced else _END
                continue
            i = skip_ws(s, i)
            if i >= n:
                break
            if self._state in (_FENCE_OPEN, _FENCE_CLOSE):
                found = starts(s, i, _FENCE)
                if found:
                    i += len(_FENCE)
                    self._state = _FENCE_TAG_OR_JSON if self._state == _FENCE_OPEN else _END
                    continue
            elif self._state == _END:
                found = starts(s, i, t.call_end)
                if found:
                    i += len(t.call_end)
                    self._state = _CALLS
                    continue
            else:  # _CALLS
                found = starts(s, i, t.call_begin)
                if found:
                    i += len(t.call_begin)
                    self._state = _NAME
                    continue
                if found is False and self._calls:
                    found = starts(s, i, t.section_end)
                    if found:
                        return accept(tuple(self._calls), carry.base + i + len(t.section_end))
            if found is None:
                break
            return reject(carry.base + i)
        carry.keep(s, min(i, n))
        return None

    def finish(self) -> Verdict:
        return reject(self._carry.end)


class KimiK2(Family):
    name = "kimi-k2"
    formats = ("kimi-k2",)
    openers = (Opener(KIMI.section_begin),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, KIMI)


class DeepSeek(Family):
    name = "deepseek"
    formats = ("deepseek-v31",)
    openers = (Opener(DEEPSEEK.section_begin),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, DEEPSEEK)


class DeepSeekV3(Family):
    name = "deepseek-v3"
    formats = ("deepseek-v3",)
    openers = tuple(Opener(literal) for literal in DEEPSEEK_V3_OPENERS)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, DEEPSEEK_V3, opener)
