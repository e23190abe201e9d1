"""Llama 3.x JSON tool calls (the Llama 3.1/3.2 chat templates; vLLM's ``llama3_json`` parser).

Each call is ``{"name": "f", "parameters": {...}}``; several are separated by ``; ``.
Models sometimes put the ``<|python_tag|>`` token first (it marks code for the
built-in tools), which parsers accept.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import PLAIN, THINK, Call, json_text, require_calls


class LlamaJson:
    id = "llama3-json"
    family = "llama"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "llama-3.1-8b-instruct"
    delimiters: tuple[str, ...] = ('{"name": ', '"parameters": ', "; ")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "; ".join(json_text({"name": c.name, "parameters": dict(c.arguments)}) for c in calls)
