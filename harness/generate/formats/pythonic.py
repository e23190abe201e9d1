"""Pythonic call lists (Llama 3.2 and Llama 4 templates; vLLM's ``pythonic`` and
``llama4_pythonic`` parsers): ``[f(a=1, b="x"), g()]``, arguments as Python literals."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from harness.generate.formats.base import PLAIN, THINK, Call, FormatError, require_calls


def literal(value: Any) -> str:
    """``value`` as a Python literal (strings double-quoted; True, False, None)."""
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, (int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {literal(v)}" for k, v in value.items()) + "}"
    raise FormatError(f"{value!r} has no Python literal")


class Pythonic:
    id = "pythonic"
    family = "pythonic"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "llama-3.2-3b-instruct"
    delimiters: tuple[str, ...] = ("[", "(", ")]")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        for call in calls:
            if not call.name.isidentifier() or not all(str(k).isidentifier() for k in call.arguments):
                raise FormatError(f"{call.name}: names must be Python identifiers")
        return "[" + ", ".join(
            f"{c.name}(" + ", ".join(f"{k}={literal(v)}" for k, v in c.arguments.items()) + ")" for c in calls
        ) + "]"


class Llama4Pythonic:
    """Llama 4 (its chat template; vLLM's ``llama4_pythonic`` parser): the pythonic list
    between ``<|python_start|>`` and ``<|python_end|>``."""

    id = "llama4-pythonic"
    family = "pythonic"
    special: tuple[str, ...] = ("<|python_start|>", "<|python_end|>")
    reasoning = THINK
    prose = PLAIN
    model = "llama-4-scout-17b-16e-instruct"
    delimiters: tuple[str, ...] = ("<|python_start|>", "[", "(", ")]", "<|python_end|>")

    def write(self, calls: Sequence[Call]) -> str:
        return "<|python_start|>" + Pythonic().write(calls) + "<|python_end|>"
