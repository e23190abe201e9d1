"""The frames a scenario's backend sends, one dataclass per kind: what every dialect's
calls are written as (``WireDialect.calls``) and what the scenario model holds.

Pure data, below both the dialects and the scenario model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ContentFrame:
    """One content delta, exactly as the backend sends it."""

    content: str
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFrame:
    """One native ``tool_calls`` delta; absent fields are absent on the wire too."""

    index: int
    id: str | None = None
    type: str | None = None
    name: str | None = None
    arguments: str | None = None
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ToolUseFrame:
    """One native Anthropic ``tool_use`` block: its input arrives as these
    ``partial_json`` fragments, split exactly as given."""

    name: str
    id: str | None = None
    input_json: tuple[str, ...] = ()
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class RawFrame:
    """Bytes written verbatim, framing included: for malformed or unusual events."""

    raw: str
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class EventFrame:
    """One event of an event-stream dialect (Kiro), written as it comes: its type, its JSON
    payload, its message type (``event``, ``exception``, ``error``), and a CRC made wrong
    on purpose (``prelude`` or ``message``) when the scenario says so."""

    event: str
    payload: Any
    message_type: str = "event"
    corrupt: str | None = None
    delay_ms: float | None = None


Frame = ContentFrame | ToolCallFrame | ToolUseFrame | RawFrame | EventFrame


def frame_to_mapping(frame: Frame) -> str | dict[str, Any]:
    if isinstance(frame, ContentFrame):
        if frame.delay_ms is None:
            return frame.content
        return {"content": frame.content, "delay_ms": frame.delay_ms}
    if isinstance(frame, RawFrame):
        out: dict[str, Any] = {"raw": frame.raw}
    elif isinstance(frame, EventFrame):
        out = {"event": frame.event, "payload": frame.payload}
        if frame.message_type != "event":
            out["message_type"] = frame.message_type
        if frame.corrupt is not None:
            out["corrupt"] = frame.corrupt
    elif isinstance(frame, ToolUseFrame):
        use: dict[str, Any] = {"name": frame.name, "input_json": list(frame.input_json)}
        if frame.id is not None:
            use["id"] = frame.id
        out = {"tool_use": use}
    else:
        call = {
            k: v
            for k, v in (
                ("index", frame.index),
                ("id", frame.id),
                ("type", frame.type),
                ("name", frame.name),
                ("arguments", frame.arguments),
            )
            if v is not None
        }
        out = {"tool_call": call}
    if frame.delay_ms is not None:
        out["delay_ms"] = frame.delay_ms
    return out


def frames_from(data: Sequence[Any]) -> tuple[Frame, ...]:
    """Frames as the scenario schema writes them (the inverse of ``frame_to_mapping``)."""
    frames: list[Frame] = []
    for f in data:
        if isinstance(f, str):
            frames.append(ContentFrame(f))
        elif "content" in f:
            frames.append(ContentFrame(f["content"], f.get("delay_ms")))
        elif "raw" in f:
            frames.append(RawFrame(f["raw"], f.get("delay_ms")))
        elif "event" in f:
            frames.append(EventFrame(f["event"], f.get("payload"), f.get("message_type", "event"), f.get("corrupt"),
                                     f.get("delay_ms")))
        elif "tool_use" in f:
            tu = f["tool_use"]
            frames.append(ToolUseFrame(tu["name"], tu.get("id"), tuple(tu.get("input_json", ())), f.get("delay_ms")))
        else:
            tc = f["tool_call"]
            frames.append(ToolCallFrame(tc["index"], tc.get("id"), tc.get("type"), tc.get("name"),
                                        tc.get("arguments"), f.get("delay_ms")))
    return tuple(frames)
