"""Kimi K3's XTML (vLLM's ``kimi_k3`` parser:
https://github.com/vllm-project/vllm/blob/main/vllm/frontend/processing/tool_parsers/kimi_k3_tool_parser.py):
a ``tools`` channel, ``<|open|>tools<|sep|>`` … ``<|close|>tools<|sep|>``, holding one
``<|open|>call tool="NAME" index="N"<|sep|>`` … ``<|close|>call<|sep|>`` block per call, each
argument an ``<|open|>argument key="K" type="T"<|sep|>VALUE<|close|>argument<|sep|>`` block.
A ``type="string"`` value is the raw text; any other is JSON. Attribute values escape ``&``
and ``"``; ``<|open|>``, ``<|close|>`` and ``<|sep|>`` are special tokens."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.generate.formats.base import PLAIN, THINK, Call, json_text, require_calls


def json_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def attribute(text: str) -> str:
    return text.replace("&", "&amp;").replace('"', "&quot;")


class KimiK3:
    id = "kimi-k3"
    family = "kimi-k3"
    special: tuple[str, ...] = ("<|open|>", "<|close|>", "<|sep|>")
    reasoning = THINK
    prose = PLAIN
    model = "kimi-k3"
    delimiters: tuple[str, ...] = ("<|open|>tools<|sep|>", "<|open|>call tool=", "<|open|>argument key=",
                                   "<|close|>argument<|sep|>", "<|close|>call<|sep|>", "<|close|>tools<|sep|>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        blocks = []
        for index, call in enumerate(calls, 1):
            arguments = "".join(
                f'<|open|>argument key="{attribute(key)}" type="{json_type(value)}"<|sep|>'
                f"{value if isinstance(value, str) else json_text(value)}<|close|>argument<|sep|>"
                for key, value in call.arguments.items()
            )
            blocks.append(f'<|open|>call tool="{attribute(call.name)}" index="{index}"<|sep|>{arguments}'
                          "<|close|>call<|sep|>")
        return "<|open|>tools<|sep|>" + "".join(blocks) + "<|close|>tools<|sep|>"
