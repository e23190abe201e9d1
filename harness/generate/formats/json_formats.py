"""Formats that write each call as a JSON object: ``{"name": …, "arguments": {…}}``."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import Call, FormatError, Writer, json_text


def call_object(call: Call) -> str:
    return json_text({"name": call.name, "arguments": dict(call.arguments)})


class QwenTools(Writer, id="qwen-tools", family="qwen-tools", model="qwen2.5-7b-instruct"):
    """Qwen2.5 served as text (vllm-tool-proxy): ``<tools>{"name": …, "arguments": …}</tools>``;
    several calls one object per line inside one pair of tags."""

    delimiters = ("<tools>", "</tools>")

    def text(self, calls: Sequence[Call]) -> str:
        if len(calls) == 1:
            return f"<tools>{call_object(calls[0])}</tools>"
        return "<tools>\n" + "\n".join(call_object(c) for c in calls) + "\n</tools>"


class Hermes(Writer, id="hermes", family="hermes", model="qwen3-8b"):
    """The Hermes / Qwen2.5 / Qwen3 chat templates: one ``<tool_call>`` block per call,
    the JSON on its own line, blocks separated by a newline."""

    special = delimiters = ("<tool_call>", "</tool_call>")

    def text(self, calls: Sequence[Call]) -> str:
        return "\n".join(f"<tool_call>\n{call_object(c)}\n</tool_call>" for c in calls)


class BareJson(Writer, id="bare-json", family="qwen-tools", model="qwen2.5-7b-instruct"):
    """Qwen2.5 answers with no tags at all (vllm-tool-proxy): the whole content is the call
    object, or one object per line."""

    delimiters = ('{"name": ', '"arguments": ')

    def text(self, calls: Sequence[Call]) -> str:
        return "\n".join(call_object(c) for c in calls)


class ToolCode(Writer, id="tool-code", family="tool-code", model="qwen3-max"):
    """Roo ``tool_code`` blocks (the Roo-Cline transformer spec): a fenced block holding one object whose
    ``tool`` key names the tool and whose other keys are the arguments; one block per
    call, separated by a blank line."""

    delimiters = ("```tool_code\n", "\n```")

    def text(self, calls: Sequence[Call]) -> str:
        blocks = []
        for call in calls:
            if "tool" in call.arguments:
                raise FormatError(f"{call.name}: an argument named 'tool' cannot be written as tool_code")
            body = json_text({"tool": call.name, **call.arguments})
            blocks.append(f"```tool_code\n{body}\n```")
        return "\n\n".join(blocks)
