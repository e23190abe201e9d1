"""Roo-style blocks: ```` ```tool_code\\n{"tool": "NAME", "k": v}\\n``` ```` (the Roo-Cline transformer spec).

The ``tool`` key names the tool, every other key is an argument. The block is a fenced
code block, so the ``code`` family finds it and hands it to this parser; whatever is
not a valid call (malformed JSON, an undeclared tool) stays text as a whole there.
"""

from __future__ import annotations

from typing import Any, Final

from reference_proxy.rescue.coercion import compact_json
from reference_proxy.rescue.families.json_calls import CallWatcher
from reference_proxy.rescue.families.tagged_json import TaggedJsonParser
from reference_proxy.rescue.family import Call
from reference_proxy.rescue.jsonscan import Watcher

FENCE: Final = "```"
LANGUAGE: Final = "tool_code"


class ToolCodeParser(TaggedJsonParser):
    """Fed from the opening fence on; the opener is the fence and ``tool_code``."""

    closer = FENCE
    empty_is_markup = False
    value_starts = "{"

    def watcher(self) -> Watcher:
        return CallWatcher(self._tools, name_key="tool")

    def calls(self, values: list[Any]) -> tuple[Call, ...] | None:
        (obj,) = values
        if not isinstance(obj, dict) or not isinstance(obj.get("tool"), str):
            return None
        name = self._tools.resolve(obj["tool"])
        arguments = {k: v for k, v in obj.items() if k != "tool"}
        if name is None or compact_json(arguments) is None:
            return None
        return (Call(name, arguments),)
