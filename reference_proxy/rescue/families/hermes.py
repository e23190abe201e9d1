"""Hermes ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``.

Used by the Hermes, Qwen2.5 and Qwen3 chat templates. ``arguments`` may be an object or
the JSON text of one; Llama-style models write ``parameters``. Qwen3-Coder shares the
opener; the text after it decides which family the marker belongs to. A call whose
closing tag is missing at the very end of the answer is still a call (Qwen and Hermes
models often stop right after the JSON; vLLM's ``Hermes2ProToolParser`` reads it so too).
"""

from __future__ import annotations

from typing import Final

from reference_proxy.rescue.families.tagged_json import CallObjectsParser
from reference_proxy.rescue.family import Context, Family, MarkerParser, Opener, skip_ws, starts
from reference_proxy.rescue.toolbox import Toolbox


CLOSER: Final = "</tool_call>"
VALUE_STARTS: Final = "{["
"""What may start a call's JSON (module constants: a compiled class's attributes are read
through its instances only)."""


class HermesParser(CallObjectsParser):
    closer = CLOSER
    value_starts = VALUE_STARTS
    closer_optional_at_end = True


class Hermes(Family):
    name = "hermes"
    formats: tuple[str, ...] = ("hermes", "granite")  # Granite 3.1 spells its token out: <tool_call>[...]
    openers: tuple[Opener, ...] = (Opener("<tool_call>"),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return HermesParser(opener, tools)

    def declines(self, opener: str, s: str, i: int) -> int | None:
        # Neither JSON nor the closer after blanks (Qwen3-Coder's <function=, GLM's name).
        j = skip_ws(s, i)
        if j < len(s) and s[j] not in VALUE_STARTS and starts(s, j, CLOSER) is False:
            return j - i + len(opener)
        return None
