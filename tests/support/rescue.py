"""Shared helpers for the rescue parser tests (no tests here): feeding, comparing, checking events."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reference_proxy.rescue import (
    ArgumentsDelta,
    Event,
    Rescuer,
    Text,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    collect,
)

WEATHER = ToolSpec(
    "get_weather",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string"}},
    },
)
READ = ToolSpec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}})
LIST = ToolSpec(
    "list_files",
    {"type": "object", "properties": {"path": {"type": "string"}, "recursive": {"type": "boolean"}}},
)
RUN = ToolSpec("run")  # no schema at all: values follow the literal rule
TYPED = ToolSpec(
    "typed",
    {
        "type": "object",
        "properties": {
            "s": {"type": "string"},
            "i": {"type": "integer"},
            "n": {"type": "number"},
            "b": {"type": "boolean"},
            "z": {"type": "null"},
            "o": {"type": "object"},
            "a": {"type": "array"},
            "u": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "l": {"type": ["string", "integer"]},
            "e": {"enum": ["x", "y"]},
        },
    },
)
ALL = (WEATHER, READ, LIST, RUN, TYPED)

Calls = list[tuple[str, dict[str, Any]]]


def feed_frames(frames: Iterable[str], tools: Sequence[ToolSpec], **kwargs: Any) -> tuple[Rescuer, list[Event]]:
    rescuer = Rescuer(tools, **kwargs)
    events: list[Event] = []
    for frame in frames:
        events += rescuer.feed(frame)
    events += rescuer.finish()
    return rescuer, events


def outcome(events: Sequence[Event]) -> tuple[str, Calls]:
    """Visible text and calls (arguments decoded) from a list of events."""
    text, calls = collect(events)
    return text, [(c.name, json.loads(c.arguments)) for c in calls]


def random_frames(text: str, rng: random.Random, *, max_size: int = 12) -> list[str]:
    frames = []
    i = 0
    while i < len(text):
        step = rng.randint(1, max_size)
        frames.append(text[i : i + step])
        i += step
    return frames


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def same_json(a: Any, b: Any) -> bool:
    """The shared comparison: key order free; strings, bools, null strict; numbers by value."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return False


def same_calls(got: Calls, expected: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    return len(got) == len(expected) and all(
        g[0] == e[0] and same_json(g[1], e[1]) for g, e in zip(got, expected)
    )


def folded(text: str) -> str:
    """The shared content comparison: trim, fold white-space runs to one space."""
    return re.sub(r"\s+", " ", text.strip())


def check_events(events: Sequence[Event]) -> None:
    """The event contract: no empty text; each call Start, Delta+, End in a row; indices 0..n-1;
    argument fragments join to one compact JSON object."""
    expected_index = 0
    i = 0
    while i < len(events):
        event = events[i]
        if isinstance(event, Text):
            assert event, "empty text event"
            i += 1
            continue
        assert isinstance(event, ToolCallStart), f"unexpected {event!r}"
        assert event.index == expected_index and event.name
        i += 1
        fragments = []
        while i < len(events) and isinstance(events[i], ArgumentsDelta):
            delta = events[i]
            assert isinstance(delta, ArgumentsDelta) and delta.index == expected_index
            fragments.append(delta.fragment)
            i += 1
        assert fragments, "a call without an ArgumentsDelta"
        end = events[i]
        assert isinstance(end, ToolCallEnd) and end.index == expected_index
        i += 1
        arguments = "".join(fragments)
        decoded = json.loads(arguments)
        assert isinstance(decoded, dict)
        assert json.dumps(decoded, ensure_ascii=False, separators=(",", ":")) == arguments
        expected_index += 1
