"""GLM-4.5/4.6 (the GLM-4.5 chat template; vLLM's ``glm45`` parser):
``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>``, one block per
call. Values are bare text (strings as they are, others as JSON), typed by the schema.
The opener is Hermes's; what follows it (a name, not JSON) tells the two apart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from harness.generate.formats.base import Call, Writer, bare_value, tagged


class Glm(Writer, id="glm", family="glm", model="glm-4.5-air"):
    special = ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
    delimiters = ("<tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "</tool_call>")

    gap: ClassVar[str] = "\n"  # after the name and after each key and value

    def argument(self, key: str, value: Any) -> str:
        return f"<arg_key>{key}</arg_key>{self.gap}<arg_value>{bare_value(value)}</arg_value>{self.gap}"

    def text(self, calls: Sequence[Call]) -> str:
        return "\n".join(tagged(c, f"<tool_call>{c.name}{self.gap}", self.argument, "</tool_call>") for c in calls)


class Glm47(Glm, id="glm47", family="glm", model="glm-4.7"):
    """GLM-4.7 (its chat template; vLLM's ``glm47`` parser,
    https://github.com/vllm-project/vllm/blob/main/vllm/tool_parsers/glm47_moe_tool_parser.py):
    GLM-4.5's tags with nothing between them, the name followed at once by the first
    ``<arg_key>`` (or by ``</tool_call>`` when there are no arguments)."""

    gap = ""
