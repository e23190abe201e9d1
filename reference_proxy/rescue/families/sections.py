"""Formats that write calls as special tokens around a name and a JSON object, inside a
section token pair: Kimi K2 and DeepSeek V3.1.

    Kimi K2:  <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
              <|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>
    DeepSeek: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}
              <｜tool▁call▁end｜>...<｜tool▁calls▁end｜>

(vLLM's ``kimi_k2`` and ``deepseek_v31`` parsers.) Blanks between tokens are free. The
name part is read up to the separator token; Kimi's ``functions.`` prefix and ``:N``
index are dropped. Every call must name a declared tool and carry a JSON object.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reference_proxy.rescue.families.json_calls import arguments_object
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

_CALLS, _NAME, _JSON, _END = range(4)


class SectionParser(MarkerParser):
    def __init__(self, tools: Toolbox, tokens: Tokens) -> None:
        self._tools = tools
        self._t = tokens
        self._carry = Carry()
        self._skip = len(tokens.section_begin)
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
                name = self._tools.resolve(t.name_of(s[i:k]))
                if name is None:
                    return reject(carry.base + k)
                self._name = name
                i = skip_ws(s, k + len(t.separator))
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
                arguments = arguments_object(value) if isinstance(value, dict) else None
                if arguments is None:
                    return reject(carry.base + i)
                self._calls.append(Call(self._name, arguments))
                self._state = _END
                continue
            i = skip_ws(s, i)
            if i >= n:
                break
            if self._state == _END:
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
    openers = (Opener(KIMI.section_begin),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, KIMI)


class DeepSeek(Family):
    name = "deepseek"
    openers = (Opener(DEEPSEEK.section_begin),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, DEEPSEEK)
