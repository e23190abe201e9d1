"""Formats that wrap each call's name and JSON arguments in special tokens, inside a
section: Kimi K2, DeepSeek V3.1 and DeepSeek V3 (their chat templates; vLLM's ``kimi_k2``,
``deepseek_v31`` and ``deepseekv3`` parsers)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import Call, Writer, json_text

_KIMI = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>",
         "<|tool_calls_section_end|>")
_DEEPSEEK = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")


class Section(Writer):
    """The calls, each written by ``call``, joined by ``between`` inside the section's first
    and last special token."""

    between = ""

    def call(self, call: Call, index: int) -> str:
        raise NotImplementedError

    def text(self, calls: Sequence[Call]) -> str:
        body = self.between.join(self.call(c, i) for i, c in enumerate(calls))
        return f"{self.special[0]}{body}{self.special[-1]}"


class KimiK2(Section, id="kimi-k2", family="kimi-k2", model="kimi-k2-instruct-0905"):
    special = _KIMI
    delimiters = (*_KIMI[:2], "functions.", *_KIMI[2:])

    def call(self, call: Call, index: int) -> str:
        return (f"<|tool_call_begin|>functions.{call.name}:{index}<|tool_call_argument_begin|>"
                f"{json_text(dict(call.arguments))}<|tool_call_end|>")


class DeepSeekV31(Section, id="deepseek-v31", family="deepseek", model="deepseek-v3.1"):
    special = delimiters = _DEEPSEEK

    def call(self, call: Call, index: int) -> str:
        return f"<｜tool▁call▁begin｜>{call.name}<｜tool▁sep｜>{json_text(dict(call.arguments))}<｜tool▁call▁end｜>"


class DeepSeekV3(Section, id="deepseek-v3", family="deepseek", model="deepseek-v3-0324"):
    """DeepSeek V3 and R1 (before V3.1): the call's type, ``function``, before the separator
    and the name after it, then the arguments in a ```` ```json ```` fence; calls after the
    first on a new line (the DeepSeek-V3 chat template; vLLM's ``deepseekv3`` parser)."""

    special = _DEEPSEEK
    delimiters = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "function<｜tool▁sep｜>", "\n```json\n", "\n```",
                  "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")
    between = "\n"

    def call(self, call: Call, index: int) -> str:
        return (f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{call.name}\n```json\n{json_text(dict(call.arguments))}\n```"
                "<｜tool▁call▁end｜>")
