"""Qwen2.5 ``<tools>…</tools>``: one call object, one per line, or an array of them (vllm-tool-proxy)."""

from __future__ import annotations

from typing import Any

from reference_proxy.rescue.families.json_calls import CallWatcher, calls_from_values
from reference_proxy.rescue.families.tagged_json import TaggedJsonParser
from reference_proxy.rescue.family import Call, Context, Family, MarkerParser, Opener
from reference_proxy.rescue.jsonscan import Watcher
from reference_proxy.rescue.toolbox import Toolbox


class QwenToolsParser(TaggedJsonParser):
    closer = "</tools>"
    many = True

    def watcher(self) -> Watcher:
        return CallWatcher(self._tools)

    def calls(self, values: list[Any]) -> tuple[Call, ...] | None:
        return calls_from_values(values, self._tools)


class QwenTools(Family):
    name = "qwen-tools"
    formats = ("qwen-tools",)
    openers = (Opener("<tools>"),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return QwenToolsParser(opener, tools)
