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


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A complete tool call was recognised; ``index`` counts rescued calls from 0."""

    index: int
    name: str


@dataclass(frozen=True, slots=True)
class ArgumentsDelta:
    """A piece of the call's arguments as JSON text; the pieces of one call join into
    one JSON object."""

    index: int
    fragment: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    index: int


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
