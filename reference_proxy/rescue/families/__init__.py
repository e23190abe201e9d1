"""Every tool-call text format the rescuer knows, in priority order.

A new format is one more module with a ``Family`` subclass, added to ``FAMILIES``.
When several families claim the same opener, each gets a parser and the first one
to recognise a call wins.
"""

from __future__ import annotations

from reference_proxy.rescue.families.bare_json import BareJson
from reference_proxy.rescue.families.hermes import Hermes
from reference_proxy.rescue.families.invoke_xml import InvokeXml
from reference_proxy.rescue.families.qwen3_coder import Qwen3Coder
from reference_proxy.rescue.families.qwen_tools import QwenTools
from reference_proxy.rescue.families.tool_code import ToolCode
from reference_proxy.rescue.family import Family

FAMILIES: tuple[Family, ...] = (QwenTools(), Hermes(), Qwen3Coder(), InvokeXml(), ToolCode(), BareJson())

__all__ = ["FAMILIES"]
