"""Formats that write each argument as bare text between tags, typed back by the schema."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from harness.generate.formats.base import (
    SEED_THINK,
    Call,
    FormatError,
    Reasoning,
    Writer,
    bare_value,
    json_text,
    tagged,
)


class FunctionBlocks(Writer):
    """Qwen3-Coder's tags: one ``<wrapper>`` block per call around ``<function=NAME>`` and
    its ``<parameter=P>`` tags; ``edge`` is written between each tag and its value."""

    wrapper: ClassVar[str]
    edge: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.special = (f"<{cls.wrapper}>", f"</{cls.wrapper}>")
        cls.delimiters = (f"<{cls.wrapper}>", "<function=", "<parameter=", "</parameter>", "</function>",
                          f"</{cls.wrapper}>")

    def parameter(self, key: str, value: Any) -> str:
        return f"<parameter={key}>{self.edge}{bare_value(value)}{self.edge}</parameter>\n"

    def text(self, calls: Sequence[Call]) -> str:
        return "\n".join(tagged(call, f"<{self.wrapper}>\n<function={call.name}>\n", self.parameter,
                                f"</function>\n</{self.wrapper}>") for call in calls)


class QwenCoder(FunctionBlocks, id="qwen-coder", family="qwen-coder", model="qwen3-coder-30b-a3b-instruct"):
    """Qwen3-Coder's chat template: ``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nVALUE\\n
    </parameter>\\n</function>\\n</tool_call>``, one block per call. The newline after
    the opening and before the closing parameter tag belongs to the markup."""

    wrapper, edge = "tool_call", "\n"


class SeedOss(FunctionBlocks, id="seed-oss", family="seed-oss", model="seed-oss-36b-instruct"):
    """ByteDance Seed-OSS chat template (vLLM's ``seed_oss`` parser): Qwen3-Coder's
    function and parameter tags inside ``<seed:tool_call>``, values on the tag's line."""

    wrapper, edge = "seed:tool_call", ""
    reasoning = SEED_THINK


class InvokeBlocks(Writer):
    """Invoke XML: ``<wrapper>`` around one ``<invoke name="f">`` per call, each with one
    ``<parameter name="p">value</parameter>`` line per argument; ``tag`` prefixes the
    invoke and parameter tags (DeepSeek V3.2's ``｜DSML｜``)."""

    wrapper: ClassVar[str]
    tag = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.delimiters = (f"<{cls.wrapper}>", f"<{cls.tag}invoke name=", f"<{cls.tag}parameter name=",
                          f"</{cls.tag}parameter>", f"</{cls.tag}invoke>", f"</{cls.wrapper}>")

    def parameter(self, key: str, value: Any) -> str:
        return f'<parameter name="{key}">{bare_value(value)}</parameter>\n'

    def text(self, calls: Sequence[Call]) -> str:
        tag = self.tag
        invokes = "".join(tagged(call, f'<{tag}invoke name="{call.name}">\n', self.parameter, f"</{tag}invoke>\n")
                          for call in calls)
        return f"<{self.wrapper}>\n{invokes}</{self.wrapper}>"


class InvokeXml(InvokeBlocks, id="invoke-xml", family="invoke-xml", model="claude-sonnet-4"):
    """Anthropic-style calls leaked into text (the VTC design and Kiro-Go PR #114): ``<function_calls>`` around
    one ``<invoke name="f">`` per call, each with ``<parameter name="p">value</parameter>``
    lines; values raw, never entity-escaped."""

    wrapper = "function_calls"

class ClineXml(Writer, id="cline-xml", family="cline-xml", model="qwen3-coder-30b-a3b-instruct"):
    """Cline / Roo / Kilo XML (the VTC design and the Roo-Cline transformer spec): ``<tool>\\n<param>value</param>\\n</tool>``,
    tag names are the tool's and its parameters'; one block per call, separated by a
    blank line; values raw, multi-line ones on their own lines."""

    delimiters = ("<", "</", ">")

    def parameter(self, key: str, value: Any) -> str:
        text = bare_value(value)
        if "\n" in text:
            text = f"\n{text}\n"
        return f"<{key}>{text}</{key}>\n"

    def text(self, calls: Sequence[Call]) -> str:
        return "\n\n".join(tagged(call, f"<{call.name}>\n", self.parameter, f"</{call.name}>") for call in calls)


class MiniMaxM2(InvokeBlocks, id="minimax-m2", family="minimax", model="minimax-m2"):
    """MiniMax M2 chat template (vLLM's ``minimax_m2`` parser): invoke XML inside
    ``<minimax:tool_call>``, one wrapper around all the calls of an answer."""

    wrapper = "minimax:tool_call"
    special = ("<minimax:tool_call>", "</minimax:tool_call>")


class DeepSeekV32(InvokeBlocks, id="deepseek-v32", family="deepseek", model="deepseek-v3.2"):
    """DeepSeek V3.2's DSML (its encoding script; vLLM's ``deepseek_v32`` parser): invoke
    XML with ``<｜DSML｜``-prefixed tags inside ``<｜DSML｜function_calls>``; a parameter says
    ``string="true"`` for a string written as it is, ``"false"`` for any other value written
    as JSON."""

    wrapper, tag = "｜DSML｜function_calls", "｜DSML｜"

    def parameter(self, key: str, value: Any) -> str:
        written = value if isinstance(value, str) else json_text(value)
        return (f'<｜DSML｜parameter name="{key}" string="{str(isinstance(value, str)).lower()}">{written}'
                "</｜DSML｜parameter>\n")


class DeepSeekV4(DeepSeekV32, id="deepseek-v4", family="deepseek", model="deepseek-v4"):
    """DeepSeek V4 and V4.1 (vLLM's ``deepseek_v4`` parser,
    https://github.com/vllm-project/vllm/blob/main/vllm/tool_parsers/deepseekv4_tool_parser.py):
    V3.2's DSML invoke and parameter tags inside ``<｜DSML｜tool_calls>`` instead of
    ``<｜DSML｜function_calls>``."""

    wrapper = "｜DSML｜tool_calls"


MINIMAX_NS = "]<]minimax[>["
"""MiniMax M3's namespace token (one token of its vocabulary, before every tag of a call)."""
MM_THINK = Reasoning("<mm:think>\n", "\n</mm:think>")
"""MiniMax M3 thinks in ``<mm:think>…</mm:think>`` (its chat template's think_begin_token)."""


def namespaced_xml(value: Any) -> str:
    """An argument value as MiniMax M3's template writes it (its ``to_xml`` macro): an
    object's members as ``NS<key>…NS</key>``, a list's as ``NS<item>…NS</item>``, a boolean
    as JSON, any other value as its text. A null has no writing: the template leaves it out."""
    if value is None:
        raise FormatError("MiniMax M3's template writes no null: it leaves the argument out")
    if isinstance(value, dict):
        return "".join(f"{MINIMAX_NS}<{k}>{namespaced_xml(v)}{MINIMAX_NS}</{k}>" for k, v in value.items())
    if isinstance(value, list):
        return "".join(f"{MINIMAX_NS}<item>{namespaced_xml(v)}{MINIMAX_NS}</item>" for v in value)
    if isinstance(value, bool):
        return json_text(value)
    return str(value)


class MiniMaxM3(Writer, id="minimax-m3", family="minimax", model="minimax-m3"):
    """MiniMax M3 (its chat template, https://huggingface.co/MiniMaxAI/MiniMax-M3/blob/main/chat_template.jinja,
    and vLLM's ``minimax_m3`` parser fixtures,
    https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_minimax_m3_tool_parser.py):
    not M2's ``<parameter name=…>`` lines but ``NS<tool_call>`` around ``NS<invoke name="f">``
    blocks, one line each, whose arguments are elements named after the parameter, nested
    for objects and lists, every tag preceded by the namespace token ``]<]minimax[>[``."""

    special = (MINIMAX_NS,)
    delimiters = (f"{MINIMAX_NS}<tool_call>", f'{MINIMAX_NS}<invoke name="', f"{MINIMAX_NS}</invoke>",
                  f"{MINIMAX_NS}</tool_call>")
    reasoning = MM_THINK

    def text(self, calls: Sequence[Call]) -> str:
        invokes = "\n".join(
            f'{MINIMAX_NS}<invoke name="{call.name}">{namespaced_xml(dict(call.arguments))}{MINIMAX_NS}</invoke>'
            for call in calls
        )
        return f"{MINIMAX_NS}<tool_call>\n{invokes}\n{MINIMAX_NS}</tool_call>"
