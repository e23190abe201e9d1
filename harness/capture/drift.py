"""Shape drift: a server answers the same request in a different shape than it did when
recorded: other chunk fields, another event order, usage or the finish in another place.

Two recordings are compared by shape, never by text: each event becomes the skeleton of its
JSON (keys and value types; the values only of the fields that name a kind of event or
object), and a run of events with the same skeleton counts once, since a model's next answer
is rarely as long as its last. Which server and version each capture came from stays in the
report, so a habit's first and last version are both visible.

Pure: recordings in, lines out.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from harness.capture.recording import Recording

# Fields whose value names a kind (of event, object, block, delta): kept in a shape.
KIND_FIELDS = frozenset({"type", "object", "role", "event", "status"})


def skeleton(value: Any, key: str | None = None) -> Any:
    """A JSON value's shape: objects by their keys, arrays by their items' distinct shapes,
    scalars by type (kind fields by value)."""
    if isinstance(value, dict):
        return {k: skeleton(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        shapes: list[Any] = []
        for item in value:
            shape = skeleton(item, key)
            if shape not in shapes:
                shapes.append(shape)
        return shapes
    if key in KIND_FIELDS and isinstance(value, str):
        return value
    if value is None:
        return None
    return type(value).__name__


def event_shape(text: str) -> str:
    """One SSE event's shape: its ``event:`` name and its data's skeleton, on one line."""
    name = None
    data: list[str] = []
    for line in text.splitlines():
        field, _, rest = line.partition(":")
        if field == "event":
            name = rest.strip()
        elif field == "data":
            data.append(rest.lstrip(" "))
    joined = "\n".join(data)
    try:
        parsed: Any = skeleton(json.loads(joined))
    except (ValueError, RecursionError):
        parsed = joined.strip()[:40]
    head = f"event: {name} " if name else ""
    return head + json.dumps(parsed, sort_keys=True)


def shape(recording: Recording) -> list[str]:
    """A recording's shape: its status, then each event's shape, a run of equal ones once."""
    lines = [f"status {recording.status}", "stream" if recording.streamed else "one body"]
    if recording.streamed:
        for event in recording.events:
            line = event_shape(event.text)
            if lines[-1] != line:  # a run of alike events counts once: an answer's length is no shape
                lines.append(line)
    else:
        lines.append(event_shape(f"data: {recording.body or ''}"))
    return lines


@dataclass(frozen=True, slots=True)
class Drift:
    """One request whose answer changed shape between two recordings."""

    key: str
    path: str
    before: str  # where the earlier recording is kept
    after: str
    server: str
    versions: tuple[str, str]
    diff: tuple[str, ...]

    def describe(self) -> str:
        head = (f"shape drift: {self.server} {self.versions[0]} -> {self.versions[1]}, request {self.key} to "
                f"{self.path}: {self.before} -> {self.after}")
        return "\n".join([head, *(f"  {line}" for line in self.diff)])

    def to_json(self) -> dict[str, Any]:
        return {"kind": "shape", "key": self.key, "path": self.path, "before": self.before, "after": self.after,
                "server": self.server, "versions": list(self.versions), "diff": list(self.diff)}


def shape_diff(before: Recording, after: Recording) -> list[str]:
    """How ``after``'s shape differs from ``before``'s ('-' before, '+' after); empty when alike."""
    old, new = shape(before), shape(after)
    if old == new:
        return []
    return [line for line in difflib.unified_diff(old, new, lineterm="", n=1) if not line.startswith(("---", "+++"))]


def drift_between(before: tuple[str, Recording], after: tuple[str, Recording]) -> Drift | None:
    lines = shape_diff(before[1], after[1])
    if not lines:
        return None
    return Drift(after[1].key, after[1].path, before[0], after[0], after[1].server,
                 (before[1].version, after[1].version), tuple(lines))


def drifts(recordings: Iterable[tuple[str, Recording]]) -> list[Drift]:
    """For each request and server, the shape drift of its newest recording from the one
    before it (``recordings`` in the order they were made)."""
    by_key: dict[tuple[str, str], list[tuple[str, Recording]]] = {}
    for name, recording in recordings:
        by_key.setdefault((recording.server, recording.key), []).append((name, recording))
    out: list[Drift] = []
    for series in by_key.values():
        if len(series) >= 2:
            found = drift_between(series[-2], series[-1])
            if found is not None:
                out.append(found)
    return out


