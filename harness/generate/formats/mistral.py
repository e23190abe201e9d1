"""Formats that put a special token before a JSON list of calls: Mistral's ``[TOOL_CALLS]``
formats, Granite's ``<|tool_call|>`` and Phi-4-mini's ``functools``.

Mistral (mistral-common tokenizers; vLLM's ``mistral`` parser).

Before tokenizer v11 (Mistral-7B-Instruct-v0.3, Mixtral-8x22B) the special token is
followed by a JSON list of call objects; from v11 on (Mistral-Small-3.1, Devstral,
Magistral) each call is ``[TOOL_CALLS]NAME[ARGS]{json}``, one after another.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import Call, JsonList, Writer, json_text


class MistralList(JsonList, id="mistral", family="mistral", model="mistral-7b-instruct-v0.3"):
    prefix = "[TOOL_CALLS] "
    special = delimiters = ("[TOOL_CALLS]",)


class MistralV11(Writer, id="mistral-v11", family="mistral", model="mistral-small-3.1-24b-instruct-2503"):
    special = delimiters = ("[TOOL_CALLS]", "[ARGS]")

    def text(self, calls: Sequence[Call]) -> str:
        return "".join(f"[TOOL_CALLS]{c.name}[ARGS]{json_text(dict(c.arguments))}" for c in calls)


class Granite(JsonList, id="granite", family="granite", model="granite-3.3-8b-instruct"):
    """IBM Granite 3.x chat template (vLLM's ``granite`` parser): ``<|tool_call|>`` and a
    JSON list of the calls."""

    prefix = "<|tool_call|>"
    special = delimiters = ("<|tool_call|>",)


class Phi4Mini(JsonList, id="phi4-mini", family="phi", model="phi-4-mini-instruct"):
    """Phi-4-mini's chat template (vLLM's ``phi4_mini_json`` parser): the word
    ``functools`` glued to a JSON list of the calls."""

    prefix = "functools"
    delimiters = ("functools[",)
