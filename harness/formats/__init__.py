"""Text-format writers (temporary: the interface only, with the writers the fuzzer needs first)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from harness.formats.base import Call, TextFormat


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _raw(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


@dataclass(frozen=True)
class _Hermes:
    id: str = "hermes"
    family: str = "hermes"
    model: str = "qwen3-8b"
    delimiters: tuple[str, ...] = ("<tool_call>", "</tool_call>")

    def write(self, calls: Sequence[Call]) -> str:
        return "\n".join(f"<tool_call>\n{_json({'name': c.name, 'arguments': dict(c.arguments)})}\n</tool_call>"
                         for c in calls)


@dataclass(frozen=True)
class _QwenTools:
    id: str = "qwen-tools"
    family: str = "qwen-tools"
    model: str = "qwen2.5-7b-instruct"
    delimiters: tuple[str, ...] = ("<tools>", "</tools>")

    def write(self, calls: Sequence[Call]) -> str:
        return "\n".join(f"<tools>{_json({'name': c.name, 'arguments': dict(c.arguments)})}</tools>" for c in calls)


@dataclass(frozen=True)
class _QwenCoder:
    id: str = "qwen-coder"
    family: str = "qwen-coder"
    model: str = "qwen3-coder-30b-a3b-instruct"
    delimiters: tuple[str, ...] = ("<tool_call>", "<function=", ">", "<parameter=", "</parameter>", "</function>",
                                   "</tool_call>")

    def write(self, calls: Sequence[Call]) -> str:
        out = []
        for c in calls:
            params = "".join(f"<parameter={k}>\n{_raw(v)}\n</parameter>\n" for k, v in c.arguments.items())
            out.append(f"<tool_call>\n<function={c.name}>\n{params}</function>\n</tool_call>")
        return "\n".join(out)


@dataclass(frozen=True)
class _InvokeXml:
    id: str = "invoke-xml"
    family: str = "invoke-xml"
    model: str = "claude-sonnet-4"
    delimiters: tuple[str, ...] = ("<function_calls>", '<invoke name="', '">', '<parameter name="', "</parameter>",
                                   "</invoke>", "</function_calls>")

    def write(self, calls: Sequence[Call]) -> str:
        invokes = []
        for c in calls:
            params = "".join(f'<parameter name="{k}">{_raw(v)}</parameter>\n' for k, v in c.arguments.items())
            invokes.append(f'<invoke name="{c.name}">\n{params}</invoke>\n')
        return "<function_calls>\n" + "".join(invokes) + "</function_calls>"


@dataclass(frozen=True)
class _ToolCode:
    id: str = "tool-code"
    family: str = "tool-code"
    model: str = "qwen3-max"
    delimiters: tuple[str, ...] = ("```tool_code\n", "\n```")

    def write(self, calls: Sequence[Call]) -> str:
        return "\n".join(f"```tool_code\n{_json({'tool': c.name, **dict(c.arguments)})}\n```" for c in calls)


FORMATS: Mapping[str, TextFormat] = {f.id: cast(TextFormat, f) for f in (_Hermes(), _QwenTools(), _QwenCoder(), _InvokeXml(), _ToolCode())}

__all__ = ["FORMATS", "Call", "TextFormat"]
