"""Every tool-call text format the rescuer knows, in priority order.

A new format is one more module with a ``Family`` subclass, added to ``FAMILIES``
(and to ``CALLS``, the families a fenced code block may hold). When several families
claim the same opener, each gets a parser and the first one to recognise a call wins.
"""

from __future__ import annotations

from reference_proxy.rescue.families.bare_json import BareJson
from reference_proxy.rescue.families.code import Code
from reference_proxy.rescue.families.glm import Glm
from reference_proxy.rescue.families.harmony import Harmony
from reference_proxy.rescue.families.hermes import Hermes
from reference_proxy.rescue.families.invoke_xml import DeepSeekDsml, InvokeXml, MiniMaxM2
from reference_proxy.rescue.families.qwen3_coder import Qwen3Coder, SeedOss
from reference_proxy.rescue.families.mistral import Granite, Mistral, Phi4Mini
from reference_proxy.rescue.families.orphans import Orphans
from reference_proxy.rescue.families.pythonic import Llama4Pythonic, Pythonic
from reference_proxy.rescue.families.qwen_tools import QwenTools
from reference_proxy.rescue.families.reasoning import Reasoning
from reference_proxy.rescue.families.sections import DeepSeek, DeepSeekV3, KimiK2
from reference_proxy.rescue.family import Family

CALLS: tuple[Family, ...] = (QwenTools(), Hermes(), Qwen3Coder(), SeedOss(), Glm(), InvokeXml(), MiniMaxM2(), Mistral(), Granite(), Phi4Mini(), KimiK2(), DeepSeek(), DeepSeekV3(), DeepSeekDsml(), Harmony(), Llama4Pythonic(), Pythonic(), BareJson())
FAMILIES: tuple[Family, ...] = (Reasoning(), *CALLS[:-1], Code(CALLS), CALLS[-1], Orphans())

__all__ = ["CALLS", "FAMILIES"]
