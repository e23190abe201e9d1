"""Formats that put a special token before a JSON list of calls: Mistral's ``[TOOL_CALLS]``
formats, Granite's ``<|tool_call|>`` and Phi-4-mini's ``functools``.

Mistral (mistral-common tokenizers; vLLM's ``mistral`` parser).

Before tokenizer v11 (Mistral-7B-Instruct-v0.3, Mixtral-8x22B) the special token is
followed by a JSON list of call objects; from v11 on (Mistral-Small-3.1, Devstral,
Magistral) each call is ``[TOOL_CALLS]NAME[ARGS]{json}``, one after another.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import PLAIN, THINK, Call, json_text, require_calls


class MistralList:
    id = "mistral"
    family = "mistral"
    special: tuple[str, ...] = ("[TOOL_CALLS]",)
    reasoning = THINK
    prose = PLAIN
    model = "mistral-7b-instruct-v0.3"
    delimiters: tuple[str, ...] = ("[TOOL_CALLS]",)

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "[TOOL_CALLS] " + json_text([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])


class MistralV11:
    id = "mistral-v11"
    family = "mistral"
    special: tuple[str, ...] = ("[TOOL_CALLS]", "[ARGS]")
    reasoning = THINK
    prose = PLAIN
    model = "mistral-small-3.1-24b-instruct-2503"
    delimiters: tuple[str, ...] = ("[TOOL_CALLS]", "[ARGS]")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "".join(f"[TOOL_CALLS]{c.name}[ARGS]{json_text(dict(c.arguments))}" for c in calls)


class Granite:
    """IBM Granite 3.x chat template (vLLM's ``granite`` parser): ``<|tool_call|>`` and a
    JSON list of the calls."""

    id = "granite"
    family = "granite"
    special: tuple[str, ...] = ("<|tool_call|>",)
    reasoning = THINK
    prose = PLAIN
    model = "granite-3.3-8b-instruct"
    delimiters: tuple[str, ...] = ("<|tool_call|>",)

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "<|tool_call|>" + json_text([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])


class Phi4Mini:
    """Phi-4-mini's chat template (vLLM's ``phi4_mini_json`` parser): the word
    ``functools`` glued to a JSON list of the calls."""

    id = "phi4-mini"
    family = "phi"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "phi-4-mini-instruct"
    delimiters: tuple[str, ...] = ("functools[",)

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "functools" + json_text([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])
