"""Every tool-call text format the rescuer knows, in priority order.

A new format is one more module with a ``Family`` subclass, added to ``CALLS`` (the
families a fenced code block may hold too), naming the format ids it reads in
``formats``; ``families_for`` makes the whole list for a selection of formats. When several families
claim the same opener, each gets a parser and the first one to recognise a call wins.
"""

from __future__ import annotations

from typing import Final

from reference_proxy.rescue.families.bare_json import BareJson
from reference_proxy.rescue.families.code import TOOL_CODE_FORMAT, Code, Nest
from reference_proxy.rescue.families.gemma import Gemma
from reference_proxy.rescue.families.glm import Glm
from reference_proxy.rescue.families.harmony import Harmony
from reference_proxy.rescue.families.hermes import Hermes
from reference_proxy.rescue.families.invoke_xml import DeepSeekDsml, InvokeXml, MiniMaxM2
from reference_proxy.rescue.families.minimax_m3 import MiniMaxM3
from reference_proxy.rescue.families.mistral import Granite, Mistral, Phi4Mini
from reference_proxy.rescue.families.narration import ArrowCalls, Narration
from reference_proxy.rescue.families.orphans import Orphans
from reference_proxy.rescue.families.pythonic import Llama4Pythonic, Pythonic
from reference_proxy.rescue.families.qwen3_coder import Qwen3Coder, SeedOss
from reference_proxy.rescue.families.qwen_tools import QwenTools
from reference_proxy.rescue.families.reasoning import Reasoning
from reference_proxy.rescue.families.sections import DEEPSEEK_V3_CALLS, DEEPSEEK_V31_CALLS, KIMI_K2_CALLS
from reference_proxy.rescue.families.xtml import KimiK3
from reference_proxy.rescue.family import Family

CALLS: Final[tuple[Family, ...]] = (QwenTools(), Hermes(), Qwen3Coder(), SeedOss(), Glm(), InvokeXml(), MiniMaxM2(), MiniMaxM3(), Mistral(), Granite(), Phi4Mini(), KIMI_K2_CALLS, DEEPSEEK_V31_CALLS, DEEPSEEK_V3_CALLS, DeepSeekDsml(), Harmony(), Gemma(), KimiK3(), Narration(), ArrowCalls(), Llama4Pythonic(), Pythonic(), BareJson())


def families_for(formats: frozenset[str] | None, *, nest: Nest) -> tuple[Family, ...]:
    """The families that read ``formats`` (format ids; None: every format), in priority
    order, with the families that read no call (reasoning, code, left-over closers); a
    fence's content is scanned by what ``nest`` makes (the scanner's own rescuer)."""
    calls = CALLS if formats is None else tuple(f for f in CALLS if formats.intersection(f.formats))
    code = Code(calls, nest=nest, tool_code=formats is None or TOOL_CODE_FORMAT in formats)
    last = tuple(f for f in calls if isinstance(f, BareJson))  # after code: a fence is not bare JSON
    first = tuple(f for f in calls if not isinstance(f, BareJson))
    return (Reasoning(), *first, code, *last, Orphans())


FORMAT_IDS: Final[tuple[str, ...]] = tuple(sorted({*(x for f in CALLS for x in f.formats), TOOL_CODE_FORMAT}))
"""Every format id some family reads."""

__all__ = ["CALLS", "FORMAT_IDS", "families_for"]
