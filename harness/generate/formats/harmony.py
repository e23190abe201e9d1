"""gpt-oss's Harmony format: each call is an assistant message on the ``commentary``
channel addressed to ``functions.NAME``, its body the JSON arguments, ended by
``<|call|>`` (the OpenAI Harmony response format, as the openai-harmony library renders
an assistant tool call: https://cookbook.openai.com/articles/openai-harmony).

Everything the model writes is inside a message (``PREAMBLE``, ``ANALYSIS``): reasoning on
the ``analysis`` channel, a preamble before calls on ``commentary`` with no recipient, an
answer with no call on ``final`` (ended by ``<|return|>``). Messages follow one another with
nothing between them but the special tokens (``<|end|><|start|>assistant``), and
``<|call|>`` ends the turn, so no text follows a call."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import ANALYSIS, PREAMBLE, Call, Writer, json_text


class GptOss(Writer, id="gpt-oss", family="gpt-oss", model="gpt-oss-120b"):
    special = ("<|start|>", "<|channel|>", "<|constrain|>", "<|message|>", "<|call|>", "<|end|>")
    reasoning = ANALYSIS
    prose = PREAMBLE
    delimiters = ("<|start|>assistant", "<|channel|>", " to=functions.", "<|constrain|>", "<|message|>", "<|call|>")

    def text(self, calls: Sequence[Call]) -> str:
        return "".join(
            f"<|start|>assistant<|channel|>commentary to=functions.{c.name} <|constrain|>json<|message|>"
            f"{json_text(dict(c.arguments))}<|call|>"
            for c in calls
        )
