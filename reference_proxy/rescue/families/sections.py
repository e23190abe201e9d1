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
from typing import Final

from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    NOT_YET, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, accept, name_end, reject, skip_ws,
    starts,
)
from reference_proxy.rescue.tags import Tags
from reference_proxy.rescue.jsonscan import MORE, JsonScanner
from reference_proxy.rescue.toolbox import Toolbox

_TYPE: Final = "function"
_FENCE: Final = "```"
_FENCE_TAG: Final = "json"

# _CALLS: before the first call; _MORE_CALLS: after one, where the section may end.
_CALLS: Final = 0
_MORE_CALLS: Final = 1
_NAME: Final = 2
_JSON: Final = 3
_END: Final = 4
_FNAME: Final = 5
_FENCE_OPEN: Final = 6
_FENCE_TAG_OR_JSON: Final = 7
_FENCE_CLOSE: Final = 8
_CLOSED: Final = 9


class Tokens:
    """One format's tokens, with the tags the parser asks for built once here. (Not a
    ``cached_property``: compiled with mypyc, that becomes a plain property, and every
    parser rebuilt the five ``Tags``.)"""

    def __init__(self, section_begin: str, call_begin: str, separator: str, call_end: str, section_end: str,
                 name_of: Callable[[str], str], fenced: bool = False) -> None:
        self.section_begin = section_begin
        self.call_begin = call_begin
        self.separator = separator
        self.call_end = call_end
        self.section_end = section_end
        self.name_of = name_of
        self.fenced = fenced
        """DeepSeek V3: ``function`` before the separator, the name and a ```` ```json ```` fence after."""
        self.tags: dict[int, Tags] = {
            _CALLS: Tags((call_begin,), (_NAME,)),
            _MORE_CALLS: Tags((call_begin, section_end), (_NAME, _CLOSED)),
            _END: Tags((call_end,), (_MORE_CALLS,)),
            _FENCE_OPEN: Tags((_FENCE,), (_FENCE_TAG_OR_JSON,)),
            _FENCE_CLOSE: Tags((_FENCE,), (_END,)),
        }
        """After blanks, the tokens that may come next in a state and the states they lead to."""


def _kimi_name(written: str) -> str:
    """``functions.read_file:0`` -> ``read_file``."""
    name = written.strip()
    if name.startswith("functions."):
        name = name[len("functions.") :]
    return re.sub(r":\d+\Z", "", name)


KIMI: Final = Tokens("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>",
              "<|tool_call_end|>", "<|tool_calls_section_end|>", _kimi_name)
DEEPSEEK: Final = Tokens("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
                  "<｜tool▁calls▁end｜>", str.strip)
DEEPSEEK_V3: Final = Tokens(DEEPSEEK.section_begin, DEEPSEEK.call_begin, DEEPSEEK.separator, DEEPSEEK.call_end,
                     DEEPSEEK.section_end, str.strip, fenced=True)
DEEPSEEK_V3_OPENERS: Final = ("<｜tool▁calls▁begin｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>",
                       "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls｜>")
"""The section opener and the spellings R1's distilled models write instead (llama.cpp's
``deepseek_r1`` parser accepts these)."""


class SectionParser(CarriedParser):
    def __init__(self, tools: Toolbox, tokens: Tokens, opener: str = "") -> None:
        super().__init__(len(opener or tokens.section_begin))
        self._tools = tools
        self._t = tokens
        self._tags = tokens.tags
        self._state = _CALLS
        self._name = ""
        self._json: JsonScanner | None = None
        self._calls: list[Call] = []

    def scan(self, s: str, i: int) -> Verdict | int:
        base, t = self._carry.base, self._t
        n = len(s)
        while i < n:
            if self._state == _NAME:
                k = name_end(s, i, t.separator)
                if k < 0:
                    return i if k == NOT_YET else reject(base + i)
                if t.fenced:
                    if s[i:k].strip() != _TYPE:
                        return reject(base + k)
                    i = k + len(t.separator)
                    self._state = _FNAME
                    continue
                name = self._tools.resolve(t.name_of(s[i:k]))
                if name is None:
                    return reject(base + k)
                self._name = name
                i = skip_ws(s, k + len(t.separator))
                self._json = JsonScanner()
                self._state = _JSON
                continue
            if self._state == _FNAME:  # the name, up to the end of its line
                k = name_end(s, i, "\n")
                if k < 0:
                    return i if k == NOT_YET else reject(base + i)
                name = self._tools.resolve(s[i:k])
                if name is None:
                    return reject(base + k)
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
                if scanner.status is MORE:
                    break
                value = scanner.result()
                call = json_call(self._name, value) if isinstance(value, dict) else None
                if call is None:
                    return reject(base + i)
                self._calls.append(call)
                self._state = _FENCE_CLOSE if t.fenced else _END
                continue
            i, state = self._tags[self._state].next(s, i)
            if state < 0:
                return i if state == NOT_YET else reject(base + i)
            self._state = state
            if state == _CLOSED:
                return accept(tuple(self._calls), base + i)
        return i


class Sections(Family):
    """One format of calls inside a section; its tokens say all there is to it."""

    def __init__(self, name: str, formats: tuple[str, ...], tokens: Tokens, openers: tuple[str, ...] = ()) -> None:
        self.name, self.formats, self.tokens = name, formats, tokens
        self.openers = tuple(Opener(literal) for literal in openers or (tokens.section_begin,))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return SectionParser(tools, self.tokens, opener)


KIMI_K2_CALLS: Final = Sections("kimi-k2", ("kimi-k2",), KIMI)
DEEPSEEK_V31_CALLS: Final = Sections("deepseek", ("deepseek-v31",), DEEPSEEK)
DEEPSEEK_V3_CALLS: Final = Sections("deepseek-v3", ("deepseek-v3",), DEEPSEEK_V3, DEEPSEEK_V3_OPENERS)
