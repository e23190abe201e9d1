"""Formats that write each call as a JSON object: ``{"name": …, "arguments": {…}}``."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import PLAIN, THINK, Call, FormatError, json_text, require_calls


def call_object(call: Call) -> str:
    return json_text({"name": call.name, "arguments": dict(call.arguments)})


class QwenTools:
    """Qwen2.5 served as text (vllm-tool-proxy): ``<tools>{"name": …, "arguments": …}</tools>``;
    several calls one object per line inside one pair of tags."""

    id = "qwen-tools"
    family = "qwen-tools"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "qwen2.5-7b-instruct"
    delimiters: tuple[str, ...] = ("<tools>", "</tools>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        if len(calls) == 1:
            return f"<tools>{call_object(calls[0])}</tools>"
        return "<tools>\n" + "\n".join(call_object(c) for c in calls) + "\n</tools>"


class Hermes:
    """The Hermes / Qwen2.5 / Qwen3 chat templates: one ``<tool_call>`` block per call,
    the JSON on its own line, blocks separated by a newline."""

    id = "hermes"
    family = "hermes"
    special: tuple[str, ...] = ("<tool_call>", "</tool_call>")
    reasoning = THINK
    prose = PLAIN
    model = "qwen3-8b"
    delimiters: tuple[str, ...] = ("<tool_call>", "</tool_call>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "\n".join(f"<tool_call>\n{call_object(c)}\n</tool_call>" for c in calls)


class BareJson:
    """Qwen2.5 answers with no tags at all (vllm-tool-proxy): the whole content is the call
    object, or one object per line."""

    id = "bare-json"
    family = "qwen-tools"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "qwen2.5-7b-instruct"
    delimiters: tuple[str, ...] = ('{"name": ', '"arguments": ')

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return "\n".join(call_object(c) for c in calls)


class ToolCode:
    """Roo ``tool_code`` blocks (the Roo-Cline transformer spec): a fenced block holding one object whose
    ``tool`` key names the tool and whose other keys are the arguments; one block per
    call, separated by a blank line."""

    id = "tool-code"
    family = "tool-code"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "qwen3-max"
    delimiters: tuple[str, ...] = ("```tool_code\n", "\n```")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        blocks = []
        for call in calls:
            if "tool" in call.arguments:
                raise FormatError(f"{call.name}: an argument named 'tool' cannot be written as tool_code")
            body = json_text({"tool": call.name, **call.arguments})
            blocks.append(f"```tool_code\n{body}\n```")
        return "\n\n".join(blocks)
