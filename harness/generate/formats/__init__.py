"""How models write tool calls as text, one writer per format.

``FORMATS`` maps each format's stable id to its writer. Scenario generators and the
hypothesis strategies build model answers from these writers, never from a proxy's
parser.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.generate.formats.base import Call, FormatError, TextFormat
from harness.generate.formats.gemma import Gemma4
from harness.generate.formats.glm import Glm, Glm47
from harness.generate.formats.harmony import GptOss
from harness.generate.formats.json_formats import BareJson, Hermes, QwenTools, ToolCode
from harness.generate.formats.llama import LlamaJson
from harness.generate.formats.mistral import Granite, MistralList, MistralV11, Phi4Mini
from harness.generate.formats.narration import Narration, RooToolCall
from harness.generate.formats.pythonic import Llama4Pythonic, Pythonic
from harness.generate.formats.sections import DeepSeekV3, DeepSeekV31, KimiK2
from harness.generate.formats.xml_formats import (
    ClineXml, DeepSeekV4, DeepSeekV32, InvokeXml, MiniMaxM2, MiniMaxM3, QwenCoder, SeedOss,
)
from harness.generate.formats.xtml import KimiK3

_ALL: tuple[TextFormat, ...] = (
    QwenTools(),
    Hermes(),
    QwenCoder(),
    InvokeXml(),
    ToolCode(),
    ClineXml(),
    BareJson(),
    MistralList(),
    MistralV11(),
    LlamaJson(),
    Pythonic(),
    Glm(),
    Granite(),
    SeedOss(),
    KimiK2(),
    DeepSeekV31(),
    DeepSeekV3(),
    MiniMaxM2(),
    GptOss(),
    DeepSeekV32(),
    Phi4Mini(),
    Llama4Pythonic(),
    Gemma4(),
    KimiK3(),
    Glm47(),
    DeepSeekV4(),
    Narration(),
    RooToolCall(),
    MiniMaxM3(),
)

FORMATS: Mapping[str, TextFormat] = MappingProxyType({f.id: f for f in _ALL})

__all__ = ["Call", "FORMATS", "FormatError", "TextFormat"]
