"""What the rescue parser says about a stream of text.

The parser is fed text as it arrives and answers with events. The streaming and
non-streaming paths of the proxy, and the scenario importer, consume the same
events, so they can never disagree on what was a tool call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


Text = str
"""Visible text, safe to send to the client now: the text itself. A string is the cheapest
event there is, and most of a stream is text: on the plain-text path the rescuer answers a
frame with the frame itself, where building an event object around it would cost more
than every check the path makes (``docs/benchmarks.md``, "Events as strings")."""


class ToolCallStart:
    """A complete tool call was recognised; ``index`` counts rescued calls from 0.

    The three call events are plain classes with slots, not frozen dataclasses: the
    parser makes three per call, and compiled with mypyc a dataclass's ``__init__`` (made
    by ``dataclasses``) still runs as Python, while this one is made in C. Equality, hash
    and ``repr`` are a frozen dataclass's; nothing assigns to an event once made."""

    __slots__ = ("index", "name")

    def __init__(self, index: int, name: str) -> None:
        self.index = index
        self.name = name

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ToolCallStart)
        return self.index == other.index and self.name == other.name

    def __hash__(self) -> int:
        return hash((self.index, self.name))

    def __repr__(self) -> str:
        return f"ToolCallStart(index={self.index!r}, name={self.name!r})"


class ArgumentsDelta:
    """A piece of the call's arguments as JSON text; the pieces of one call join into
    one JSON object."""

    __slots__ = ("index", "fragment")

    def __init__(self, index: int, fragment: str) -> None:
        self.index = index
        self.fragment = fragment

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ArgumentsDelta)
        return self.index == other.index and self.fragment == other.fragment

    def __hash__(self) -> int:
        return hash((self.index, self.fragment))

    def __repr__(self) -> str:
        return f"ArgumentsDelta(index={self.index!r}, fragment={self.fragment!r})"


class ToolCallEnd:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, ToolCallEnd)
        return self.index == other.index

    def __hash__(self) -> int:
        return hash((self.index,))

    def __repr__(self) -> str:
        return f"ToolCallEnd(index={self.index!r})"


Event = Text | ToolCallStart | ArgumentsDelta | ToolCallEnd


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the client declared: only these are ever extracted."""

    name: str
    parameters: Mapping[str, Any] | None = None


def tools_from_request(body: Mapping[str, Any]) -> list[ToolSpec]:
    """The tools an OpenAI-style request lets the model call (malformed entries are
    skipped). None with ``tool_choice: "none"``: the client takes no call, so the model's
    text is relayed as it is."""
    out: list[ToolSpec] = []
    if body.get("tool_choice") == "none":
        return out
    for tool in body.get("tools") or ():
        if not isinstance(tool, Mapping):
            continue
        fn = tool.get("function")
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str) and fn["name"]:
            params = fn.get("parameters")
            out.append(ToolSpec(fn["name"], params if isinstance(params, Mapping) else None))
    return out


@dataclass(frozen=True, slots=True)
class RescuedCall:
    """A whole call, as the non-streaming path and the importer want it."""

    name: str
    arguments: str  # JSON object text


def collect(events: Sequence[Event]) -> tuple[str, list[RescuedCall]]:
    """Fold events into (visible text, calls)."""
    text: list[str] = []
    names: dict[int, str] = {}
    args: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, str):
            text.append(event)
        elif isinstance(event, ToolCallStart):
            names[event.index] = event.name
            args[event.index] = []
        elif isinstance(event, ArgumentsDelta):
            args[event.index].append(event.fragment)
    return "".join(text), [RescuedCall(names[i], "".join(args[i]) or "{}") for i in sorted(names)]
