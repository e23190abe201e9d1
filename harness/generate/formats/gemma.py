"""Gemma 4's tool calls (vLLM's ``gemma4`` parser:
https://github.com/vllm-project/vllm/blob/main/vllm/tool_parsers/gemma4_tool_parser.py):
``<|tool_call>call:NAME{key:VALUE,…}<tool_call|>``, one pair of tokens per call and the calls
written one after another with nothing between them. Keys are bare; a string is written as it
is between two ``<|"|>`` tokens; numbers, booleans and null bare; objects and arrays in braces
and brackets of the same syntax. The model reasons in ``<|channel>thought…<channel|>``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.generate.formats.base import PLAIN, Call, FormatError, Reasoning, json_text, require_calls

QUOTE = '<|"|>'
THOUGHT = Reasoning("<|channel>thought\n", "<channel|>", "")
"""Gemma 4's thinking channel (vLLM's ``gemma4`` reasoning parser)."""
_KEY = re.compile(r"[A-Za-z_][\w.-]*")


def value_text(value: Any) -> str:
    if isinstance(value, str):
        if QUOTE in value:
            raise FormatError(f"a Gemma 4 string cannot hold its own delimiter {QUOTE}")
        return f"{QUOTE}{value}{QUOTE}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_key(k)}:{value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(value_text(v) for v in value) + "]"
    return json_text(value)


def _key(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise FormatError(f"{key!r}: Gemma 4 writes keys bare, so a key must be a word")
    return key


class Gemma4:
    id = "gemma4"
    family = "gemma"
    special: tuple[str, ...] = ("<|tool_call>", "<tool_call|>", QUOTE, "<|channel>", "<channel|>")
    reasoning = THOUGHT
    prose = PLAIN
    model = "gemma-4-31b-it"
    delimiters: tuple[str, ...] = ("<|tool_call>", "call:", "<tool_call|>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "".join(f"<|tool_call>call:{c.name}{value_text(dict(c.arguments))}<tool_call|>" for c in calls)
