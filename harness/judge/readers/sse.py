"""A strict reading of raw Server-Sent Events bytes.

Every client parses SSE a little differently, so the harness keeps two things apart:
the events a spec-following parser dispatches (what the chunk rules read), and every
framing flaw found on the way (what the framing rules judge). Pure: bytes in, an
``SSEStream`` out, one pass over the input whatever its size.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, Self

AnomalyKind = Literal[
    "invalid-utf8",
    "stray-payload",
    "glued-events",
    "split-payload",
    "unterminated-event",
    "done-missing",
    "done-not-exact",
    "done-repeated",
    "event-after-done",
    "bytes-after-done",
]

DONE = "[DONE]"
_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_KNOWN_FIELDS = frozenset({"data", "event", "id", "retry"})


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event: a blank-line-terminated group of lines with a ``data`` field."""

    index: int  # position among dispatched events, from 0
    byte_offset: int  # where the event's first field line starts
    end_offset: int  # just past its terminating blank line (or the end of the body)
    data: str  # the data lines joined with "\n", as the SSE spec defines
    data_lines: int
    event: str | None = None
    id: str | None = None
    retry: str | None = None
    terminated: bool = True  # False: the body ended before the blank line

    @property
    def is_done(self) -> bool:
        """Whether this is the terminator, loosely: ``[DONE]`` with anything after it."""
        return is_done_like(self.data)


@dataclass(frozen=True, slots=True)
class JsonEvent:
    """One dispatched SSE event, its data parsed when it is JSON: what the events of every dialect share."""

    event: SSEEvent
    value: Any  # the parsed JSON, or None when it is not JSON
    json_error: str | None

    @classmethod
    def read(cls, event: SSEEvent) -> Self:
        """The event with its data parsed; data that is not JSON (or nests past the parser's
        depth) keeps the parser's complaint instead."""
        try:
            return cls(event, json.loads(event.data), None)
        except (ValueError, RecursionError) as exc:
            return cls(event, None, str(exc))

    @property
    def name(self) -> str | None:
        """The ``event:`` field, which is what the SDKs dispatch on."""
        return self.event.event

    @property
    def type(self) -> str | None:
        """The payload's ``type``, when the payload is an object that has a string one."""
        if isinstance(self.value, dict) and isinstance(self.value.get("type"), str):
            return self.value["type"]  # type: ignore[no-any-return]
        return None


@dataclass(frozen=True, slots=True)
class FramingAnomaly:
    """One framing flaw, located in the raw bytes."""

    kind: AnomalyKind
    message: str
    byte_offset: int
    event_index: int | None
    excerpt: str


@dataclass(frozen=True, slots=True)
class SSEStream:
    """The dispatched events of a body plus every framing flaw found in it."""

    events: tuple[SSEEvent, ...]
    anomalies: tuple[FramingAnomaly, ...]
    size: int

    def of_kind(self, *kinds: AnomalyKind) -> tuple[FramingAnomaly, ...]:
        return tuple(a for a in self.anomalies if a.kind in kinds)

    @property
    def done_event(self) -> SSEEvent | None:
        """The first terminator-like event, if any."""
        return next((e for e in self.events if e.is_done), None)


def is_done_like(data: str) -> bool:
    """``[DONE]`` give or take case and surrounding characters: meant as the terminator."""
    return data.strip().upper().startswith(DONE)


def excerpt(raw: bytes, offset: int, width: int = 60) -> str:
    """A short, printable window of ``raw`` around ``offset``."""
    start = max(0, offset - 10)
    piece = raw[start : start + width].decode("utf-8", "replace")
    text = repr(piece)[1:-1]
    return ("…" if start else "") + text + ("…" if start + width < len(raw) else "")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _lines(raw: bytes, pos: int) -> Iterator[tuple[int, bytes, int | None]]:
    """(offset, line without its end, offset after its line end) for every line;
    the last element is None for a final line the body ends inside."""
    for m in _LINE_END.finditer(raw, pos):
        yield pos, raw[pos : m.start()], m.end()
        pos = m.end()
    if pos < len(raw):
        yield pos, raw[pos:], None


class _Reader:
    """One pass over the lines of a body, building events and noting flaws."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.events: list[SSEEvent] = []
        self.anomalies: list[FramingAnomaly] = []
        self.done_index: int | None = None  # index of the first terminator event
        self.after_done: int | None = None  # first non-event, non-blank byte after it
        self._start: int | None = None
        self._data: list[str] = []
        self._fields: dict[str, str] = {}

    def flag(self, kind: AnomalyKind, message: str, offset: int, index: int | None) -> None:
        self.anomalies.append(FramingAnomaly(kind, message, offset, index, excerpt(self.raw, offset)))

    def feed(self, offset: int, line: bytes, after: int | None) -> None:
        if not line:
            self.dispatch(offset if after is None else after, terminated=True)
            return
        if line.startswith(b":"):
            return  # a comment (": keep-alive") is acceptable anywhere, after [DONE] too
        name_b, colon, value_b = line.partition(b":")
        if colon and value_b.startswith(b" "):
            value_b = value_b[1:]
        name = name_b.decode("utf-8", "replace")
        if name not in _KNOWN_FIELDS:
            stripped = line.decode("utf-8", "replace").strip()
            if "{" in stripped or is_done_like(stripped):
                self.flag(
                    "stray-payload",
                    f"a payload line without the 'data:' field at byte {offset}; SSE parsers ignore it",
                    offset,
                    None,
                )
            self._note_after_done(offset)
            return
        if self._start is None:
            self._start = offset
        value = value_b.decode("utf-8", "replace")
        if name == "data":
            self._data.append(value)
        else:
            self._fields[name] = value

    def _note_after_done(self, offset: int) -> None:
        if self.done_index is not None and self.after_done is None:
            self.after_done = offset

    def dispatch(self, end: int, *, terminated: bool) -> None:
        start, data, fields = self._start, self._data, self._fields
        self._start, self._data, self._fields = None, [], {}
        if start is None:
            return
        if not data:  # fields without data: the spec dispatches nothing
            self._note_after_done(start)
            return
        index = len(self.events)
        event = SSEEvent(
            index=index,
            byte_offset=start,
            end_offset=end,
            data="\n".join(data),
            data_lines=len(data),
            event=fields.get("event"),
            id=fields.get("id"),
            retry=fields.get("retry"),
            terminated=terminated,
        )
        self.events.append(event)
        if event.is_done and self.done_index is None:
            self.done_index = index
        if len(data) > 1:
            separately = sum(1 for line in data if is_done_like(line) or _is_json(line))
            if separately > 1:
                self.flag(
                    "glued-events",
                    f"event {index} holds {separately} payloads on {len(data)} data lines: "
                    "the blank line between events is missing",
                    start,
                    index,
                )
            else:
                self.flag(
                    "split-payload", f"event {index} spreads one payload over {len(data)} data lines", start, index
                )
        if not terminated and not event.is_done:
            self.flag(
                "unterminated-event",
                f"event {index} is not ended by a blank line: the body stops inside it",
                start,
                index,
            )

    def check_terminator(self) -> None:
        done = [e for e in self.events if e.is_done]
        if not done:
            self.flag("done-missing", "the stream has no 'data: [DONE]' terminator", len(self.raw), None)
            return
        first = done[0]
        for e in done:
            if e.data != DONE:
                self.flag(
                    "done-not-exact", f"the terminator's data is {e.data!r}, not '[DONE]'", e.byte_offset, e.index
                )
        for e in done[1:]:
            self.flag("done-repeated", f"'[DONE]' is sent again in event {e.index}", e.byte_offset, e.index)
        for e in self.events[first.index + 1 :]:
            if not e.is_done:
                self.flag(
                    "event-after-done",
                    f"event {e.index} comes after '[DONE]'; clients stop reading at the terminator",
                    e.byte_offset,
                    e.index,
                )
        if not first.terminated:
            self.flag(
                "bytes-after-done", "'[DONE]' is not ended by a blank line", first.byte_offset, first.index
            )
        if self.after_done is not None:
            self.flag(
                "bytes-after-done", f"bytes follow '[DONE]' at byte {self.after_done}", self.after_done, None
            )


def parse_events(raw: bytes) -> SSEStream:
    """Split ``raw`` into SSE events the way the WHATWG algorithm does (CR, LF and
    CRLF line ends, ``:`` comments, one optional space after the colon, a leading BOM
    skipped) and record every framing anomaly an OpenAI-style stream should not have."""
    reader = _Reader(raw)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        reader.flag("invalid-utf8", f"invalid UTF-8 at byte {exc.start}: {exc.reason}", exc.start, None)
    for offset, line, after in _lines(raw, len(_BOM) if raw.startswith(_BOM) else 0):
        reader.feed(offset, line, after)
    reader.dispatch(len(raw), terminated=False)
    reader.check_terminator()
    reader.anomalies.sort(key=lambda a: a.byte_offset)
    return SSEStream(tuple(reader.events), tuple(reader.anomalies), len(raw))
