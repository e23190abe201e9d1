"""Llama 3.x JSON tool calls (the Llama 3.1/3.2 chat templates; vLLM's ``llama3_json`` parser).

Each call is ``{"name": "f", "parameters": {...}}``; several are separated by ``; ``.
Models sometimes put the ``<|python_tag|>`` token first (it marks code for the
built-in tools), which parsers accept.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import Call, Writer, json_text


class LlamaJson(Writer, id="llama3-json", family="llama", model="llama-3.1-8b-instruct"):
    delimiters = ('{"name": ', '"parameters": ', "; ")

    def text(self, calls: Sequence[Call]) -> str:
        return "; ".join(json_text({"name": c.name, "parameters": dict(c.arguments)}) for c in calls)
