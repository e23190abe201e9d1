"""Hermes ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``.

Used by the Hermes, Qwen2.5 and Qwen3 chat templates. ``arguments`` may be an object or
the JSON text of one; Llama-style models write ``parameters``. Qwen3-Coder shares the
opener; the text after it decides which family the marker belongs to. A call whose
closing tag is missing at the very end of the answer is still a call (Qwen and Hermes
models often stop right after the JSON; vLLM's ``Hermes2ProToolParser`` reads it so too).
"""

from __future__ import annotations

from typing import Any

from reference_proxy.rescue.families.json_calls import CallWatcher, calls_from_values
from reference_proxy.rescue.families.tagged_json import TaggedJsonParser
from reference_proxy.rescue.family import Call, Context, Family, MarkerParser, Opener
from reference_proxy.rescue.jsonscan import Watcher
from reference_proxy.rescue.toolbox import Toolbox


class HermesParser(TaggedJsonParser):
    closer = "</tool_call>"
    closer_optional_at_end = True

    def watcher(self) -> Watcher:
        return CallWatcher(self._tools)

    def calls(self, values: list[Any]) -> tuple[Call, ...] | None:
        return calls_from_values(values, self._tools)


class Hermes(Family):
    name = "hermes"
    formats = ("hermes", "granite")  # Granite 3.1 spells its token out: <tool_call>[...]
    openers = (Opener("<tool_call>"),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return HermesParser(opener, tools)
