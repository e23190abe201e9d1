"""Dialect-neutral pieces of a replayed answer: events, how each is cut into network
writes, how a fault changes the event sequence, and error answers.

A proxy's stream parser must cope with an event arriving in several reads, or a
UTF-8 character split between two reads. The mock produces exactly those cuts on
demand, so the cut positions are computed once per scenario, never per write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from harness.core.dialects.frames import Frame
from harness.core.scenario.model import Backend, Fault

_NON_ASCII = re.compile(rb"[\x80-\xff]")

DEFAULT_MODEL = "toolcall-conformance-mock"  # the model an answer names when neither scenario nor request does

SPLIT_PAUSE = 0.001  # default seconds between the writes of one cut event, so they leave separately

# Statuses some providers use that the standard library does not name.
_EXTRA_PHRASES = {529: "Overloaded"}


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact JSON as the providers write it (UTF-8, not ASCII-escaped). Text holding
    lone surrogates cannot be UTF-8; it falls back to escapes instead of failing."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), sort_keys=sort_keys).encode("ascii")


@dataclass(frozen=True, slots=True)
class Event:
    """One event's bytes as they go on the wire."""

    data: bytes
    delay: float = 0.0  # seconds to wait before sending it
    cut: int | None = None  # offset just past the lead byte of its first multi-byte character


def multibyte_cut(data: bytes) -> int | None:
    """Where to cut ``data`` so that its first multi-byte UTF-8 character is split in two."""
    if data.isascii():
        return None
    match = _NON_ASCII.search(data)
    return None if match is None else match.start() + 1


def writes(event: Event, *, write_bytes: int | None, split_multibyte: bool, tear_window: int | None = None) -> list[bytes]:
    """The network writes that carry ``event``: cut inside its first multi-byte character
    (when asked and there is one), then every part in writes of at most ``write_bytes``;
    with ``tear_window``, only near the bytes a reader of bytes treats apart (``torn``)."""
    data = event.data
    parts = [data[: event.cut], data[event.cut :]] if split_multibyte and event.cut is not None else [data]
    if write_bytes is None or write_bytes <= 0:
        return parts
    if tear_window is not None:
        return [piece for part in parts for piece in torn(part, write_bytes, tear_window)]
    return [part[i : i + write_bytes] for part in parts for i in range(0, len(part), write_bytes)]


# What a reader of bytes treats apart: a line break ends an SSE field or event, a byte of
# 0x80 or more belongs to a multi-byte UTF-8 character, a backslash opens a JSON escape.
_TORN_NEAR = re.compile(rb"[\x80-\xff\r\n\\]")


def torn(data: bytes, size: int, window: int) -> list[bytes]:
    """``data`` cut where writes of ``size`` bytes would cut it, but only at the cuts within
    ``window`` bytes of its edges, a line break, a non-ASCII byte or a backslash: each cut
    kept is one of the full tear's, so a character torn across three reads is torn the same
    way, and the stretches of plain JSON between go in one write each."""
    n = len(data)
    keep = [False] * (n + 1)
    for at in (0, n):
        for cut in range(max(0, at - window), min(n, at + window) + 1):
            keep[cut] = True
    for match in _TORN_NEAR.finditer(data):
        at = match.start()
        for cut in range(max(0, at - window + 1), min(n, at + window) + 1):
            keep[cut] = True
    out: list[bytes] = []
    start = 0
    for cut in range(size, n, size):
        if keep[cut]:
            out.append(data[start:cut])
            start = cut
    out.append(data[start:])
    return out


def frame_delay(backend: Backend, frame: Frame) -> float:
    """Seconds the backend waits before ``frame``: its own delay, else the backend's."""
    return (backend.delay_ms if frame.delay_ms is None else frame.delay_ms) / 1000.0


def tokens(usage: Mapping[str, Any], *names: str) -> int:
    """A count under the first of ``names`` that holds one (a scenario may name usage in any dialect)."""
    for name in names:
        value = usage.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def with_fault(events: list[Event], fault: Fault | None, *, at: int, terminator: int) -> list[Event]:
    """The events as a faulty upstream sends them. ``at`` is the index of the event the
    fault strikes before (the first one after ``fault.after_frame`` scenario frames);
    ``terminator`` is how many trailing events a ``no_terminator`` fault leaves out."""
    if fault is None or fault.kind == "http_error":
        return events
    if fault.kind == "no_terminator":
        return events[: len(events) - terminator]
    if fault.kind == "stall":
        nxt = events[at]
        events[at] = Event(nxt.data, nxt.delay + (fault.seconds or 0.0), nxt.cut)
        return events
    # drop: what was sent so far, maybe half the next event, then the connection closes
    kept = events[:at]
    if fault.mid_event:
        half = events[at].data[: len(events[at].data) // 2]
        kept.append(Event(half, events[at].delay))
    return kept


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    """An ``http_error`` fault: what is answered instead of the completion."""

    status: int
    body: bytes
    media_type: str
    headers: Mapping[str, str]


def status_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return _EXTRA_PHRASES.get(status, "Error")


def upstream_error_text(status: int) -> str:
    """The message of an error the mock answers in the upstream's place (a fault's default body)."""
    return f"{status_phrase(status)} (HTTP {status} from the upstream)"


def error_answer(fault: Fault, default_body: Callable[[int], Mapping[str, Any]]) -> ErrorAnswer:
    """The answer to an ``http_error`` fault: its own body (a mapping as JSON, a string
    verbatim), else ``default_body(status)``, the dialect's own error shape."""
    status = fault.status or 500
    headers = dict(fault.headers)
    if fault.body is None:
        return ErrorAnswer(status, dumps(default_body(status)), "application/json", headers)
    if isinstance(fault.body, str):  # written verbatim: may be any text, even broken JSON
        try:
            json.loads(fault.body)
            media_type = "application/json"
        except ValueError:
            media_type = "text/plain; charset=utf-8"
        return ErrorAnswer(status, fault.body.encode("utf-8", "surrogatepass"), media_type, headers)
    return ErrorAnswer(status, dumps(fault.body), "application/json", headers)


@dataclass(frozen=True, slots=True)
class Answering:
    """How one request is answered, in every dialect that may or may not stream: a dialect's
    reply adds its ids."""

    stream: bool  # from ``Delivery.streams``
    model: str  # from ``Delivery.model_for``


@dataclass(frozen=True, slots=True)
class Delivery:
    """How a replayed answer reaches the proxy, the same in every dialect: its form and
    model, its pace, how its events are cut into writes, and its fault."""

    stream: Literal["auto"] | bool
    model: str | None
    total_delay: float  # seconds a non-streaming answer takes
    write_bytes: int | None
    split_multibyte: bool
    tear_window: int | None  # with write_bytes: the events after the first torn only near what matters
    write_pause: float  # seconds between the writes of one cut event
    fault: Fault | None
    error: ErrorAnswer | None  # set for an http_error fault

    @property
    def drops(self) -> bool:
        """Whether the connection is closed before the answer is complete."""
        return self.fault is not None and self.fault.kind == "drop"

    def streams(self, body: Mapping[str, Any]) -> bool:
        """Whether the answer to ``body`` is streamed: as asked, unless the scenario forces it."""
        return body.get("stream") is True if self.stream == "auto" else self.stream

    def model_for(self, body: Mapping[str, Any]) -> str:
        """The model the answer names: the scenario's, else the one asked for."""
        requested = body.get("model")
        return self.model or (requested if isinstance(requested, str) and requested else DEFAULT_MODEL)

    def cut(self, data: bytes) -> int | None:
        """Where ``data`` is cut in two inside a character, when the scenario asks for it."""
        return multibyte_cut(data) if self.split_multibyte else None


def delivery(backend: Backend, default_error_body: Callable[[int], Mapping[str, Any]]) -> Delivery:
    """A backend's delivery; ``default_error_body`` is its dialect's error for a bare status."""
    fault = backend.fault
    return Delivery(
        stream=backend.stream,
        model=backend.model,
        total_delay=sum(frame_delay(backend, frame) for frame in backend.frames),
        write_bytes=backend.write_bytes,
        split_multibyte=backend.split_multibyte,
        tear_window=backend.tear_window,
        write_pause=SPLIT_PAUSE if backend.write_delay_ms is None else backend.write_delay_ms / 1000.0,
        fault=fault,
        error=error_answer(fault, default_error_body) if fault is not None and fault.kind == "http_error" else None,
    )
