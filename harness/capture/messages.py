"""Anthropic Messages captures read into frames: a streamed answer's events, or one whole ``message``.

The frames are what the mock replays as the same answer: one text frame per
``text_delta``, one ``tool_use`` frame per tool_use block with its ``input_json_delta``
fragments exactly as split, and anything the scenario format has no frame for (an
``error`` event, an unknown event, a broken one) kept verbatim as a raw frame. The
model, ``stop_reason``, usage and a ``ping`` are kept for the backend to report.

Pure: parsed events or objects in, ``MessagesParts`` out; problems are ``CaptureError``
lines or warnings naming the capture.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from harness.capture.errors import CaptureError
from harness.capture.model import Dialect
from harness.capture.stream import StreamParts, data_line, read_stream
from harness.core.dialects import ANTHROPIC
from harness.core.dialects.frames import ContentFrame, RawFrame, ToolUseFrame
from harness.core.replay.anthropic import sse_event
from harness.judge.readers.sse import SSEStream

MESSAGES_EVENTS = frozenset({
    "message_start", "message_delta", "message_stop",
    "content_block_start", "content_block_delta", "content_block_stop",
})


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass
class _OpenTool:
    position: int  # of its frame in ``frames``
    given: tuple[str, ...]  # the input the block started with, as one fragment (none when empty)
    fragments: list[str]  # the input_json_delta fragments


def _given_input(value: Any) -> tuple[str, ...]:
    """A tool_use block's own ``input`` as a fragment; none when it is empty."""
    return () if value is None or value == {} else (json.dumps(value, ensure_ascii=False),)


def _input_json(given: tuple[str, ...], deltas: Sequence[str]) -> tuple[str, ...]:
    """The input fragments a frame replays, read as the SDK reads a block (see
    ``harness.judge.readers.anthropic_events.tool_arguments``): the deltas when any carried text,
    else the input the block came with."""
    return tuple(deltas) if "".join(deltas) else (*given, *deltas)


@dataclass
class MessagesParts(StreamParts):
    """What a Messages answer said, gathered event by event (its finish_reason is the
    stop_reason; it is done once message_stop came)."""

    DIALECT: ClassVar[Dialect] = ANTHROPIC
    FINISH: ClassVar[str] = f"{ANTHROPIC.finish_field} (no message_delta)"
    END: ClassVar[str] = ANTHROPIC.stream_end

    ping: bool = False
    started: bool = False  # message_start seen (or a whole message read)
    dropped_blocks: Counter[str] = field(default_factory=Counter)
    prefilled: int = 0  # tool_use blocks whose starting input is their whole input
    overridden: int = 0  # tool_use blocks whose starting input gave way to input_json_delta fragments
    _open: dict[int, _OpenTool | str] = field(default_factory=dict)  # open blocks: a tool, or the kind

    def _usage(self, usage: Any, *names: str) -> None:
        if not isinstance(usage, Mapping):
            return
        counts = {n: v for n in names if (v := _int(usage.get(n))) is not None}
        if counts:
            self.usage = {**(self.usage or {}), **counts}

    def _raw(self, raw: str, label: str, origin: str, why: str) -> None:
        self.frames.append(RawFrame(raw))
        self.warnings.append(f"{origin}: {label} {why}; kept verbatim as a raw frame")

    def event(self, payload: Any, raw: str, label: str, origin: str) -> None:
        """One event's parsed data (anything JSON gave), and its text for a raw frame."""
        kind = payload.get("type") if isinstance(payload, dict) else None
        if not isinstance(payload, dict) or not isinstance(kind, str):
            self._raw(raw, label, origin, "is not a Messages event")
        elif kind == "error":
            error = payload.get("error")
            message = error.get("message") if isinstance(error, dict) else error
            self._raw(raw, label, origin, f"is an error ({message!s:.120})")
        elif kind == "ping":
            self.ping = True
        elif kind == "message_start":
            self._start(payload, label, origin)
        elif kind == "content_block_start":
            self._block_start(payload, raw, label, origin)
        elif kind == "content_block_delta":
            self._block_delta(payload, raw, label, origin)
        elif kind == "content_block_stop":
            index = payload.get("index")
            self._close(index if isinstance(index, int) else -1)
        elif kind == "message_delta":
            delta = payload.get("delta")
            reason = delta.get("stop_reason") if isinstance(delta, dict) else None
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
            self._usage(payload.get("usage"), "output_tokens")
        elif kind == "message_stop":
            self.done = True
        else:
            self._raw(raw, label, origin, f"is an event of unknown type {kind!r}")

    def _start(self, payload: Mapping[str, Any], label: str, origin: str) -> None:
        if self.started:
            self.warnings.append(f"{origin}: {label} is a second message_start; ignored")
            return
        self.started = True
        message = payload.get("message")
        if isinstance(message, dict):
            model = message.get("model")
            if isinstance(model, str) and model:
                self.model = model
            self._usage(message.get("usage"), "input_tokens")

    def _block_start(self, payload: Mapping[str, Any], raw: str, label: str, origin: str) -> None:
        index, block = payload.get("index"), payload.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            self._raw(raw, label, origin, "is a content_block_start without an index and a block")
            return
        kind = block.get("type")
        if kind == "text":
            self._open[index] = "text"
            text = block.get("text")
            if isinstance(text, str) and text:
                self.frames.append(ContentFrame(text))
        elif kind == "tool_use":
            name, ident = block.get("name"), block.get("id")
            self._open[index] = _OpenTool(len(self.frames), _given_input(block.get("input")), [])
            self.frames.append(
                ToolUseFrame(name if isinstance(name, str) else "", ident if isinstance(ident, str) else None)
            )
        else:
            self._open[index] = str(kind)
            self.dropped_blocks[str(kind)] += 1

    def _block_delta(self, payload: Mapping[str, Any], raw: str, label: str, origin: str) -> None:
        index, delta = payload.get("index"), payload.get("delta")
        block = self._open.get(index) if isinstance(index, int) else None
        if block is None or not isinstance(delta, dict):
            self._raw(raw, label, origin, "is a delta outside any open block")
            return
        kind = delta.get("type")
        if block == "text" and kind == "text_delta" and isinstance(delta.get("text"), str):
            self.frames.append(ContentFrame(delta["text"]))
        elif isinstance(block, _OpenTool) and kind == "input_json_delta" and isinstance(delta.get("partial_json"), str):
            block.fragments.append(delta["partial_json"])
        elif (isinstance(block, str) and block in self.dropped_blocks) or kind == "citations_delta":
            pass  # a delta of a block kind left out (thinking...), or citations the frames cannot carry
        else:
            self._raw(raw, label, origin, f"is a {kind!r} delta its {block if isinstance(block, str) else 'tool_use'} "
                      "block cannot take")

    def _close(self, index: int) -> None:
        block = self._open.pop(index, None)
        if isinstance(block, _OpenTool):
            frame = self.frames[block.position]
            assert isinstance(frame, ToolUseFrame)
            if block.given and "".join(block.fragments):
                self.overridden += 1
            elif block.given:
                self.prefilled += 1
            self.frames[block.position] = replace(frame, input_json=_input_json(block.given, block.fragments))

    def close(self, origin: str) -> None:
        """The end of the capture: a tool_use block still open keeps the input that came."""
        for index, block in list(self._open.items()):
            if isinstance(block, _OpenTool):
                self.warnings.append(
                    f"{origin}: tool_use block {index} was never closed; its input is kept as far as it came"
                )
            self._close(index)

    def message(self, obj: Mapping[str, Any]) -> None:
        """A whole ``message``: each text block one frame, each tool_use block one frame with its input."""
        self.events += 1
        self.started = True
        model = obj.get("model")
        if isinstance(model, str) and model:
            self.model = model
        self._usage(obj.get("usage"), "input_tokens", "output_tokens")
        content = obj.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                self.frames.append(ContentFrame(block["text"]))
            elif kind == "tool_use":
                name, ident = block.get("name"), block.get("id")
                self.frames.append(
                    ToolUseFrame(name if isinstance(name, str) else "", ident if isinstance(ident, str) else None,
                                 _input_json(_given_input(block.get("input")), ()))
                )
            else:
                self.dropped_blocks[str(kind)] += 1
        reason = obj.get("stop_reason")
        if isinstance(reason, str) and reason:
            self.finish_reason = reason

    def summary_warnings(self, origin: str) -> list[str]:
        out = list(self.warnings)
        for kind, count in sorted(self.dropped_blocks.items()):
            out.append(f"{origin}: dropped {count} {kind} block(s): scenarios have no frame for them")
        if self.prefilled:
            out.append(
                f"{origin}: {self.prefilled} tool_use block(s) started with their input filled in and no "
                "input_json_delta followed; that input became their one input fragment"
            )
        if self.overridden:
            out.append(
                f"{origin}: {self.overridden} tool_use block(s) started with their input filled in, then got "
                "input_json_delta fragments; the fragments are kept (clients read those), the starting input is not"
            )
        return out


def read_messages_sse(body: bytes, stream: SSEStream, parsed: Sequence[Any], origin: str) -> MessagesParts:
    """A Messages SSE transcript (the HTTP head already removed), as parsed by ``harness.judge.readers.sse``,
    each event's data parsed (``capture_stream.parse_data``)."""
    parts = MessagesParts(events=len(stream.events))
    read_stream(parts, body, stream, parsed, origin)
    parts.close(origin)
    if not parts.started:
        if parts.cut and not parts.frames:
            raise CaptureError(f"{origin}: truncated SSE: the stream is cut off before its message_start")
        raise CaptureError(f"{origin}: no message_start among {len(stream.events)} Messages event(s)")
    parts.truncation_warnings(origin)
    return parts


def read_messages_events(items: Sequence[Any], origin: str) -> MessagesParts:
    """A list of Messages event objects, as some logs keep a stream."""
    parts = MessagesParts(events=len(items))
    for position, item in enumerate(items):
        named = isinstance(item, dict) and "type" in item
        raw = sse_event(item).decode("utf-8") if named else data_line(item)
        parts.event(item, raw, f"event {position + 1}", origin)
    parts.close(origin)
    if not parts.started:
        raise CaptureError(f"{origin}: no message_start among {len(items)} Messages event(s)")
    parts.truncation_warnings(origin)
    return parts


def read_message_object(obj: Mapping[str, Any], origin: str) -> MessagesParts:
    """A non-streaming Messages answer."""
    parts = MessagesParts()
    parts.message(obj)
    if parts.finish_reason is None:
        parts.warnings.append(f"{origin}: no stop_reason in the response")
    return parts


def is_messages_payload(obj: Any) -> bool:
    """Whether a parsed payload is a Messages event or a whole ``message``."""
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    return kind in MESSAGES_EVENTS or (kind == "message" and isinstance(obj.get("content"), list))


def is_messages_stream(stream: SSEStream, parsed: Sequence[Any]) -> bool:
    """Whether a transcript is of Messages events: an ``event:`` name or a payload type
    (``parsed``: each event's data, ``capture_stream.parse_data``) says so."""
    for event, payload in zip(stream.events, parsed, strict=True):
        if event.event in MESSAGES_EVENTS:
            return True
        if isinstance(payload, dict) and ("choices" in payload or is_messages_payload(payload)):
            return is_messages_payload(payload)
    return False
