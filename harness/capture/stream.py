"""What the capture readers of both dialects share: an answer gathered event by event,
and the one loop that feeds it the events of an SSE transcript.

Every event is kept with its verbatim text (for a raw frame) and its data parsed once;
a last event cut off mid-way is dropped with a warning, and events after the stream's
end are ignored with one. What an event means is the dialect's business
(``StreamParts.event``), as are the names its finish and its end go by in warnings.

Pure: parsed SSE in, frames and warnings out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from harness.capture.model import Dialect
from harness.core.dialects.frames import Frame
from harness.judge.readers.sse import SSEEvent, SSEStream


class _NotJson:
    """The parsed value of data that is not JSON."""

    def __repr__(self) -> str:
        return "NOT_JSON"


NOT_JSON: Final = _NotJson()


def loads(text: str) -> Any:
    """``text`` parsed as JSON, or ``NOT_JSON``."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return NOT_JSON


def parse_data(stream: SSEStream) -> list[Any]:
    """Every event's data parsed (``NOT_JSON`` where it is not), by event index."""
    return [loads(event.data) for event in stream.events]


def data_line(value: Any) -> str:
    """An event that came without its framing (an item of a logged list), as a ``data:`` event."""
    return f"data: {json.dumps(value, ensure_ascii=False)}\n\n"


@dataclass
class StreamParts:
    """What an answer said, gathered event by event, in either dialect."""

    DIALECT: ClassVar[Dialect]  # the API whose answer it reads
    FINISH: ClassVar[str]  # how a warning names a missing finish
    END: ClassVar[str]  # how a warning names the stream's last event

    frames: list[Frame] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    events: int = 0
    done: bool = False  # the stream's end was seen
    cut: bool = False  # the last event was cut off and dropped
    warnings: list[str] = field(default_factory=list)

    def event(self, payload: Any, raw: str, label: str, origin: str) -> None:
        """One event's parsed data (``NOT_JSON`` when it is not JSON) and its text for a raw frame."""
        raise NotImplementedError

    def ends(self, data: str) -> bool:
        """Whether event data is the stream's terminator (Messages has none: its end is an event)."""
        return False

    def pieces(self, data: str, parsed: Any, raw: str) -> list[tuple[str, Any, str]]:
        """The events one SSE event holds: (data, parsed data, raw text); one, unless a
        dialect reads events glued together."""
        return [(data, parsed, raw)]

    def truncation_warnings(self, origin: str) -> None:
        if self.finish_reason is None:
            self.warnings.append(
                f"{origin}: no {self.FINISH}: the stream looks truncated; imported what is there"
            )
        elif not self.done:
            self.warnings.append(f"{origin}: no {self.END} at the end: the capture may be incomplete")


def _verbatim(body: bytes, event: SSEEvent) -> str:
    """An event's text as captured, ending in a blank line."""
    text = body[event.byte_offset : event.end_offset].decode("utf-8", "replace")
    return text if text.endswith(("\n\n", "\r\n\r\n", "\r\r")) else text + "\n\n"


def read_stream(parts: StreamParts, body: bytes, stream: SSEStream, parsed: Sequence[Any], origin: str) -> None:
    """Feed every event of ``stream`` (read from ``body``, its data ``parsed``) to ``parts``."""
    last = len(stream.events) - 1
    for event in stream.events:
        label = f"event {event.index + 1}"
        if parts.done:
            if not parts.ends(event.data):
                parts.warnings.append(f"{origin}: {label} comes after {parts.END}; ignored")
            continue
        for data, value, raw in parts.pieces(event.data, parsed[event.index], _verbatim(body, event)):
            if parts.ends(data):
                parts.done = True
                continue
            if value is NOT_JSON and event.index == last and not parts.done:
                parts.cut = True
                parts.warnings.append(f"{origin}: the stream is cut off inside {label} ({data[:60]!r}...); dropped it")
                continue
            parts.event(value, raw, label, origin)
