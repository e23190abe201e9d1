"""Qwen2.5 ``<tools>…</tools>``: one call object, one per line, or an array of them (vllm-tool-proxy)."""

from __future__ import annotations

from reference_proxy.rescue.families.tagged_json import CallObjectsParser
from reference_proxy.rescue.family import Context, Family, MarkerParser, Opener
from reference_proxy.rescue.toolbox import Toolbox


class QwenToolsParser(CallObjectsParser):
    closer = "</tools>"
    many = True


class QwenTools(Family):
    name = "qwen-tools"
    formats: tuple[str, ...] = ("qwen-tools",)
    openers: tuple[Opener, ...] = (Opener("<tools>"),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return QwenToolsParser(opener, tools)
