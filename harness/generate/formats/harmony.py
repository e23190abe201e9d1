"""gpt-oss's Harmony format: each call is an assistant message on the ``commentary``
channel addressed to ``functions.NAME``, its body the JSON arguments, ended by
``<|call|>`` (the OpenAI Harmony response format, as the openai-harmony library renders
an assistant tool call)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import ANALYSIS, PREAMBLE, Call, json_text, require_calls


class GptOss:
    id = "gpt-oss"
    family = "gpt-oss"
    special: tuple[str, ...] = ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|call|>", "<|end|>")
    reasoning = ANALYSIS
    prose = PREAMBLE
    model = "gpt-oss-120b"
    delimiters: tuple[str, ...] = ("<|start|>assistant", "<|channel|>", " to=functions.", "<|constrain|>",
                                   "<|message|>", "<|call|>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "".join(
            f"<|start|>assistant<|channel|>commentary to=functions.{c.name} <|constrain|>json<|message|>"
            f"{json_text(dict(c.arguments))}<|call|>"
            for c in calls
        )
