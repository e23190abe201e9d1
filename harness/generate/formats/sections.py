"""Formats that wrap each call's name and JSON arguments in special tokens, inside a
section: Kimi K2, DeepSeek V3.1 and DeepSeek V3 (their chat templates; vLLM's ``kimi_k2``,
``deepseek_v31`` and ``deepseekv3`` parsers)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import PLAIN, THINK, Call, json_text, require_calls


class KimiK2:
    id = "kimi-k2"
    family = "kimi-k2"
    special: tuple[str, ...] = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>")
    reasoning = THINK
    prose = PLAIN
    model = "kimi-k2-instruct-0905"
    delimiters: tuple[str, ...] = ("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "functions.",
                                   "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        body = "".join(
            f"<|tool_call_begin|>functions.{c.name}:{i}<|tool_call_argument_begin|>{json_text(dict(c.arguments))}"
            "<|tool_call_end|>"
            for i, c in enumerate(calls)
        )
        return f"<|tool_calls_section_begin|>{body}<|tool_calls_section_end|>"


class DeepSeekV31:
    id = "deepseek-v31"
    family = "deepseek"
    special: tuple[str, ...] = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")
    reasoning = THINK
    prose = PLAIN
    model = "deepseek-v3.1"
    delimiters: tuple[str, ...] = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>",
                                   "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        body = "".join(
            f"<｜tool▁call▁begin｜>{c.name}<｜tool▁sep｜>{json_text(dict(c.arguments))}<｜tool▁call▁end｜>" for c in calls
        )
        return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"


class DeepSeekV3:
    """DeepSeek V3 and R1 (before V3.1): the call's type, ``function``, before the separator
    and the name after it, then the arguments in a ```` ```json ```` fence; calls after the
    first on a new line (the DeepSeek-V3 chat template; vLLM's ``deepseekv3`` parser)."""

    id = "deepseek-v3"
    family = "deepseek"
    special: tuple[str, ...] = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")
    reasoning = THINK
    prose = PLAIN
    model = "deepseek-v3-0324"
    delimiters: tuple[str, ...] = ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "function<｜tool▁sep｜>",
                                   "\n```json\n", "\n```", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        body = "\n".join(
            f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{c.name}\n```json\n{json_text(dict(c.arguments))}\n```"
            "<｜tool▁call▁end｜>"
            for c in calls
        )
        return f"<｜tool▁calls▁begin｜>{body}<｜tool▁calls▁end｜>"
