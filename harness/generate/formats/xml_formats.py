"""Formats that write each argument as bare text between tags, typed back by the schema."""

from __future__ import annotations

from collections.abc import Sequence

from harness.generate.formats.base import PLAIN, SEED_THINK, THINK, Call, bare_value, json_text, require_calls


class QwenCoder:
    """Qwen3-Coder's chat template: ``<tool_call>\\n<function=NAME>\\n<parameter=P>\\nVALUE\\n
    </parameter>\\n</function>\\n</tool_call>``, one block per call. The newline after
    the opening and before the closing parameter tag belongs to the markup."""

    id = "qwen-coder"
    family = "qwen-coder"
    special: tuple[str, ...] = ("<tool_call>", "</tool_call>")
    reasoning = THINK
    prose = PLAIN
    model = "qwen3-coder-30b-a3b-instruct"
    delimiters: tuple[str, ...] = (
        "<tool_call>",
        "<function=",
        "<parameter=",
        "</parameter>",
        "</function>",
        "</tool_call>",
    )

    def write(self, calls: Sequence[Call]) -> str:
        return function_blocks(calls, "tool_call", "\n")


def function_blocks(calls: Sequence[Call], wrapper: str, edge: str) -> str:
    """One ``<wrapper>`` block per call around ``<function=NAME>`` and its
    ``<parameter=P>`` tags; ``edge`` is written between each tag and its value."""
    require_calls(calls)
    blocks = []
    for call in calls:
        params = "".join(
            f"<parameter={key}>{edge}{bare_value(value)}{edge}</parameter>\n" for key, value in call.arguments.items()
        )
        blocks.append(f"<{wrapper}>\n<function={call.name}>\n{params}</function>\n</{wrapper}>")
    return "\n".join(blocks)


class InvokeXml:
    """Anthropic-style calls leaked into text (the VTC design and Kiro-Go PR #114): ``<function_calls>`` around
    one ``<invoke name="f">`` per call, each with ``<parameter name="p">value</parameter>``
    lines; values raw, never entity-escaped."""

    id = "invoke-xml"
    family = "invoke-xml"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "claude-sonnet-4"
    delimiters: tuple[str, ...] = (
        "<function_calls>",
        "<invoke name=",
        "<parameter name=",
        "</parameter>",
        "</invoke>",
        "</function_calls>",
    )

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        invokes = []
        for call in calls:
            params = "".join(
                f'<parameter name="{key}">{bare_value(value)}</parameter>\n' for key, value in call.arguments.items()
            )
            invokes.append(f'<invoke name="{call.name}">\n{params}</invoke>\n')
        return "<function_calls>\n" + "".join(invokes) + "</function_calls>"


class ClineXml:
    """Cline / Roo / Kilo XML (the VTC design and the Roo-Cline transformer spec): ``<tool>\\n<param>value</param>\\n</tool>``,
    tag names are the tool's and its parameters'; one block per call, separated by a
    blank line; values raw, multi-line ones on their own lines."""

    id = "cline-xml"
    family = "cline-xml"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "qwen3-coder-30b-a3b-instruct"
    delimiters: tuple[str, ...] = ("<", "</", ">")

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        blocks = []
        for call in calls:
            params = []
            for key, value in call.arguments.items():
                text = bare_value(value)
                if "\n" in text:
                    text = f"\n{text}\n"
                params.append(f"<{key}>{text}</{key}>\n")
            blocks.append(f"<{call.name}>\n{''.join(params)}</{call.name}>")
        return "\n\n".join(blocks)


class SeedOss:
    """ByteDance Seed-OSS chat template (vLLM's ``seed_oss`` parser): Qwen3-Coder's
    function and parameter tags inside ``<seed:tool_call>``, values on the tag's line."""

    id = "seed-oss"
    family = "seed-oss"
    special: tuple[str, ...] = ("<seed:tool_call>", "</seed:tool_call>")
    reasoning = SEED_THINK
    prose = PLAIN
    model = "seed-oss-36b-instruct"
    delimiters: tuple[str, ...] = (
        "<seed:tool_call>",
        "<function=",
        "<parameter=",
        "</parameter>",
        "</function>",
        "</seed:tool_call>",
    )

    def write(self, calls: Sequence[Call]) -> str:
        return function_blocks(calls, "seed:tool_call", "")


class MiniMaxM2:
    """MiniMax M2 chat template (vLLM's ``minimax_m2`` parser): invoke XML inside
    ``<minimax:tool_call>``, one wrapper around all the calls of an answer."""

    id = "minimax-m2"
    family = "minimax"
    special: tuple[str, ...] = ("<minimax:tool_call>", "</minimax:tool_call>")
    reasoning = THINK
    prose = PLAIN
    model = "minimax-m2"
    delimiters: tuple[str, ...] = (
        "<minimax:tool_call>",
        "<invoke name=",
        "<parameter name=",
        "</parameter>",
        "</invoke>",
        "</minimax:tool_call>",
    )

    def write(self, calls: Sequence[Call]) -> str:
        return InvokeXml().write(calls).replace("<function_calls>", "<minimax:tool_call>").replace(
            "</function_calls>", "</minimax:tool_call>"
        )


class DeepSeekV32:
    """DeepSeek V3.2's DSML (its encoding script; vLLM's ``deepseek_v32`` parser): invoke
    XML with ``<｜DSML｜``-prefixed tags inside ``<｜DSML｜function_calls>``; a parameter says
    ``string="true"`` for a string written as it is, ``"false"`` for any other value written
    as JSON."""

    id = "deepseek-v32"
    family = "deepseek"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "deepseek-v3.2"
    delimiters: tuple[str, ...] = (
        "<｜DSML｜function_calls>",
        "<｜DSML｜invoke name=",
        "<｜DSML｜parameter name=",
        "</｜DSML｜parameter>",
        "</｜DSML｜invoke>",
        "</｜DSML｜function_calls>",
    )

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        invokes = []
        for call in calls:
            params = "".join(
                f'<｜DSML｜parameter name="{key}" string="{str(isinstance(value, str)).lower()}">'
                f"{value if isinstance(value, str) else json_text(value)}</｜DSML｜parameter>\n"
                for key, value in call.arguments.items()
            )
            invokes.append(f'<｜DSML｜invoke name="{call.name}">\n{params}</｜DSML｜invoke>\n')
        return "<｜DSML｜function_calls>\n" + "".join(invokes) + "</｜DSML｜function_calls>"


class DeepSeekV4:
    """DeepSeek V4 and V4.1 (vLLM's ``deepseek_v4`` parser,
    https://github.com/vllm-project/vllm/blob/main/vllm/tool_parsers/deepseekv4_tool_parser.py):
    V3.2's DSML invoke and parameter tags inside ``<｜DSML｜tool_calls>`` instead of
    ``<｜DSML｜function_calls>``."""

    id = "deepseek-v4"
    family = "deepseek"
    special: tuple[str, ...] = ()
    reasoning = THINK
    prose = PLAIN
    model = "deepseek-v4"
    delimiters: tuple[str, ...] = tuple(d.replace("DSML｜function_calls>", "DSML｜tool_calls>")
                                        for d in DeepSeekV32.delimiters)

    def write(self, calls: Sequence[Call]) -> str:
        return DeepSeekV32().write(calls).replace("DSML｜function_calls>", "DSML｜tool_calls>")
