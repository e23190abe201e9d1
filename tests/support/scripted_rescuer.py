"""A rescuer that answers from a script (hand-built event lists), so the pipeline tests of
either API test what the proxy does with rescue events, independently of how the parser
finds calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reference_proxy.rescue import ArgumentsDelta, Event, Text, ToolCallEnd, ToolCallStart, ToolSpec

TOOLS = (ToolSpec("get_weather"), ToolSpec("read_file"))


def call_events(index: int, name: str, *fragments: str) -> list[Event]:
    return [ToolCallStart(index, name), *(ArgumentsDelta(index, f) for f in fragments), ToolCallEnd(index)]


class ScriptedRescuer:
    """Answers each fed piece from a script (default: the piece as text)."""

    def __init__(self, script: Mapping[str, Sequence[Event]], at_finish: Sequence[Event], overflow: bool) -> None:
        self.script = script
        self.at_finish = at_finish
        self._overflow = overflow
        self.fed: list[str] = []

    @property
    def overflowed(self) -> bool:
        return self._overflow

    def feed(self, text: str) -> list[Event]:
        self.fed.append(text)
        return list(self.script.get(text, [Text(text)]))

    def finish(self) -> list[Event]:
        return list(self.at_finish)


def factory(script: Mapping[str, Sequence[Event]] | None = None, at_finish: Sequence[Event] = (), overflow: bool = False) -> Any:
    def make(tools: Sequence[ToolSpec], cap: int) -> ScriptedRescuer:
        return ScriptedRescuer(script or {}, at_finish, overflow)

    return make


LEAK = '<tools>{"name":"get_weather","arguments":{"city":"Paris"}}</tools>'
LEAK_EVENTS = call_events(0, "get_weather", '{"city": ', '"Paris"}')
