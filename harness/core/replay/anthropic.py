"""What the Anthropic Messages API answers for a scenario: pure, no I/O.

The frames become content blocks: consecutive text frames are one text block, one
``text_delta`` each; a ``tool_use`` frame is a block of its own, one
``input_json_delta`` per fragment. ``prepare`` serializes every event once per
scenario; answering a request only builds ``message_start`` (its id and model) and
the ids of tool blocks the scenario left without one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import ANTHROPIC
from harness.core.dialects.frames import ContentFrame, RawFrame, ToolUseFrame
from harness.core.replay.wire import (
    Answering, Delivery, Event, delivery, dumps, frame_delay, multibyte_cut, tokens, upstream_error_text, with_fault,
)
from harness.core.scenario.model import Backend

ERROR_TYPES: Mapping[int, str] = ANTHROPIC.error_types  # the API's error type for each status

_PING = b'event: ping\ndata: {"type":"ping"}\n\n'
_MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def sse_event(payload: Mapping[str, Any]) -> bytes:
    """One event as the API writes it: an ``event:`` line naming the payload's type, then its data."""
    return b"event: " + str(payload["type"]).encode() + b"\ndata: " + dumps(payload) + b"\n\n"


@dataclass(frozen=True, slots=True)
class Piece:
    """One event of the content blocks, serialized once. A tool block start whose id is
    generated per answer is kept as the bytes before (``data``) and after (``after_id``)
    the id; ``cut`` then lies inside ``after_id``."""

    data: bytes
    delay: float  # seconds before the event
    cut: int | None
    after_id: bytes | None = None
    block: int = 0  # the block index the generated id is derived from


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool_use block as the non-streaming answer carries it."""

    index: int  # the block's index in the message
    id: str | None  # None: generated per answer
    name: str
    input: Any  # the fragments joined and parsed; the joined text when it is not JSON


@dataclass(frozen=True, slots=True)
class AnthropicReplay:
    """A scenario's Messages backend, ready to answer any number of requests."""

    ping: bool
    pieces: tuple[Piece, ...]  # the content block events, then message_delta and message_stop
    frame_starts: tuple[int, ...]  # [k]: index in ``pieces`` of the first event after k frames
    first_block: int | None  # index in ``pieces`` of the first content_block_start; the ping follows it
    stop_reason: str
    input_tokens: int
    output_tokens: int
    start_output_tokens: int  # what message_start reports: 1, as the API does, unless the answer has none
    blocks: tuple[TextBlock | ToolUseBlock, ...]
    delivery: Delivery  # how it reaches the proxy: form, model, pace, writes, fault


@dataclass(frozen=True, slots=True)
class AnthropicReply(Answering):
    message_id: str


def _tool_input(fragments: tuple[str, ...]) -> Any:
    joined = "".join(fragments)
    if not joined.strip():
        return {}
    try:
        return json.loads(joined)
    except ValueError:
        return joined  # what the fragments say, so a broken input stays visible


class _Builder:
    """Accumulates the block events; each frame's delay goes to its first event."""

    def __init__(self) -> None:
        self.pieces: list[Piece] = []
        self.blocks: list[TextBlock | ToolUseBlock] = []
        self.delay = 0.0
        self.next_index = 0
        self.text_index: int | None = None  # the open text block
        self.text: list[str] = []
        self.first_block: int | None = None

    def emit(self, data: bytes, *, after_id: bytes | None = None, block: int = 0) -> None:
        cut = multibyte_cut(data if after_id is None else after_id)
        self.pieces.append(Piece(data, self.delay, cut, after_id, block))
        self.delay = 0.0

    def block_starts(self) -> None:
        """The next event starts a block; the first such event is where the ping follows."""
        if self.first_block is None:
            self.first_block = len(self.pieces)

    def text_delta(self, text: str) -> None:
        if self.text_index is None:
            self.text_index = self.next_index
            self.next_index += 1
            self.block_starts()
            self.emit(sse_event({"type": "content_block_start", "index": self.text_index,
                                 "content_block": {"type": "text", "text": ""}}))
        self.text.append(text)
        self.emit(sse_event({"type": "content_block_delta", "index": self.text_index,
                             "delta": {"type": "text_delta", "text": text}}))

    def close_text(self) -> None:
        if self.text_index is not None:
            self.emit(sse_event({"type": "content_block_stop", "index": self.text_index}))
            self.blocks.append(TextBlock("".join(self.text)))
            self.text_index = None
            self.text = []

    def tool_use(self, frame: ToolUseFrame) -> None:
        self.close_text()
        index = self.next_index
        self.next_index += 1
        head = b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,' % index
        tail = b',"name":' + dumps(frame.name) + b',"input":{}}}\n\n'
        self.block_starts()
        if frame.id is None:
            self.emit(head + b'"content_block":{"type":"tool_use","id":', after_id=tail, block=index)
        else:
            self.emit(head + b'"content_block":{"type":"tool_use","id":' + dumps(frame.id) + tail)
        for fragment in frame.input_json:
            self.emit(sse_event({"type": "content_block_delta", "index": index,
                                 "delta": {"type": "input_json_delta", "partial_json": fragment}}))
        self.emit(sse_event({"type": "content_block_stop", "index": index}))
        self.blocks.append(ToolUseBlock(index, frame.id, frame.name, _tool_input(frame.input_json)))


def prepare(backend: Backend) -> AnthropicReplay:
    """Serialize a backend's frames once; the result is shared by every run of the scenario."""
    build = _Builder()
    starts: list[int] = []
    for frame in backend.frames:
        build.delay += frame_delay(backend, frame)
        starts.append(len(build.pieces))
        if isinstance(frame, RawFrame):
            build.emit(frame.raw.encode("utf-8", "surrogatepass"))
        elif isinstance(frame, ContentFrame):
            build.text_delta(frame.content)
        elif isinstance(frame, ToolUseFrame):
            build.tool_use(frame)
        # an OpenAI tool_call delta has no Messages form; such scenarios are not replayed here
    starts.append(len(build.pieces))
    build.close_text()
    usage = backend.usage or {}
    output_tokens = tokens(usage, "output_tokens", "completion_tokens")
    stated = any(name in usage for name in ("output_tokens", "completion_tokens"))
    build.emit(sse_event({"type": "message_delta",
                          "delta": {"stop_reason": backend.finish_reason, "stop_sequence": None},
                          "usage": {"output_tokens": output_tokens}}))
    build.emit(_MESSAGE_STOP)
    return AnthropicReplay(
        ping=backend.ping,
        pieces=tuple(build.pieces),
        frame_starts=tuple(starts),
        first_block=build.first_block,
        stop_reason=backend.finish_reason,
        input_tokens=tokens(usage, "input_tokens", "prompt_tokens"),
        output_tokens=output_tokens,
        start_output_tokens=min(1, output_tokens) if stated else 1,
        blocks=tuple(build.blocks),
        delivery=delivery(backend, default_error_body),
    )


def error_type(status: int) -> str:
    """The error ``type`` the API reports with ``status``."""
    return ANTHROPIC.error_type(status)


def error_body(message: str, type: str = "invalid_request_error") -> dict[str, Any]:
    """An error in the shape every Anthropic client parses."""
    return ANTHROPIC.errors.write(message, type)


def default_error_body(status: int) -> dict[str, Any]:
    """What the API answers with ``status`` when the scenario gives no body."""
    return error_body(upstream_error_text(status), error_type(status))


def plan_reply(replay: AnthropicReplay, body: Mapping[str, Any], *, message_id: str) -> AnthropicReply:
    """Decide the answer's form from the request: stream or not, and the model."""
    return AnthropicReply(replay.delivery.streams(body), replay.delivery.model_for(body), message_id)


def tool_id(message_id: str, block: int) -> str:
    """The id of a tool_use block the scenario gave none: unique per answer and block."""
    return f"toolu_{message_id[-20:]}{block:04d}"


def _usage(replay: AnthropicReplay, output_tokens: int) -> dict[str, Any]:
    """Usage as the API reports it: no prompt caching, the standard service tier."""
    return {"input_tokens": replay.input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "output_tokens": output_tokens, "service_tier": "standard"}


def stream_events(replay: AnthropicReplay, reply: AnthropicReply) -> list[Event]:
    """Every SSE event of the answer, in order: message_start, the blocks (with the ping
    after the first content_block_start, where the API sends it), message_delta, message_stop."""
    start = sse_event({
        "type": "message_start",
        "message": {
            "id": reply.message_id, "type": "message", "role": "assistant", "content": [], "model": reply.model,
            "stop_reason": None, "stop_sequence": None, "usage": _usage(replay, replay.start_output_tokens),
        },
    })
    events = [Event(start, 0.0, replay.delivery.cut(start))]
    for piece in replay.pieces:
        if piece.after_id is None:
            events.append(Event(piece.data, piece.delay, piece.cut))
        else:
            ident = dumps(tool_id(reply.message_id, piece.block))
            cut = None if piece.cut is None else len(piece.data) + len(ident) + piece.cut
            events.append(Event(piece.data + ident + piece.after_id, piece.delay, cut))
    ping = None
    if replay.ping:  # with no block at all, right after message_start
        ping = 1 if replay.first_block is None else 2 + replay.first_block
        events.insert(ping, Event(_PING))
    fault = replay.delivery.fault
    # after_frame counts scenario frames; no_terminator leaves out message_stop only, as the
    # OpenAI dialect leaves out [DONE] after the finish chunk.
    at = 0
    if fault is not None:
        at = 1 + replay.frame_starts[fault.after_frame or 0]
        if ping is not None and ping <= at:
            at += 1
    return with_fault(events, fault, at=at, terminator=1)


def message(replay: AnthropicReplay, reply: AnthropicReply) -> dict[str, Any]:
    """The non-streaming ``message`` answer: the same blocks, each whole."""
    content: list[dict[str, Any]] = []
    for block in replay.blocks:
        if isinstance(block, TextBlock):
            content.append({"type": "text", "text": block.text})
        else:
            ident = block.id if block.id is not None else tool_id(reply.message_id, block.index)
            content.append({"type": "tool_use", "id": ident, "name": block.name, "input": block.input})
    return {
        "id": reply.message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": replay.stop_reason,
        "stop_sequence": None,
        "usage": _usage(replay, replay.output_tokens),
    }


def planned_events(backend: Backend, request: Mapping[str, Any]) -> list[Event]:
    """The events the mock streams for ``backend`` answering ``request``, with fixed ids (what re-chunking cuts)."""
    replay = prepare(backend)
    return stream_events(replay, plan_reply(replay, request, message_id="msg_" + "0" * 24))
