"""What Kiro's ``generateAssistantResponse`` answers for a scenario: AWS event-stream
messages (``harness.core.eventstream``), pure, no I/O.

A text frame is one ``assistantResponseEvent{content}``; a ``tool_use`` frame is a call's
lifecycle as Kiro streams it: a ``toolUseEvent{name, toolUseId}`` that opens it, one
``toolUseEvent{input, name, toolUseId}`` per input fragment (a call without fragments sends its
``{}`` whole), then one with ``stop: true``; an ``event`` frame is written as it stands, a
``raw`` frame as its bytes. Every JSON payload is written with its keys in alphabetical order,
as Kiro writes them (``{"input":"{\"com","name":"bash","toolUseId":…}``, ``{"name":"bash",
"stop":true,"toolUseId":…}``): gateways read an event's kind from its first key
(jwadow/kiro-gateway's ``AwsEventStreamParser.EVENT_PATTERNS`` looks for ``{"input":``), so an
order Kiro never sends would fail them for nothing, and it works against Kiro itself. The
lifecycle is the one jwadow/kiro-gateway's fixtures stream (``tests/conftest.py``: the call
opened by ``{"name","toolUseId"}``, then ``{"input":…}`` fragments); that the fragments repeat
the name and id is why AIClient-2-API stopped relying on a payload's first key
(``src/providers/claude/claude-kiro.js``, ``parseAwsEventStreamBuffer``). The answer ends with a ``contextUsageEvent`` and a
``metadataEvent{stopReason, tokenUsage}``, the two a ``no_terminator`` fault leaves out
(enterprise accounts never get the metadata:
https://github.com/jwadow/kiro-gateway/issues/56 shows a cut stream without either).
Kiro has no non-streamed answer: every reply is an event stream.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import KIRO
from harness.core.dialects.frames import ContentFrame, EventFrame, Frame, RawFrame, ToolUseFrame
from harness.core.eventstream import PRELUDE, Decoder, encode_headers, event
from harness.core.replay.wire import (
    Delivery, Event, delivery, dumps, frame_delay, multibyte_cut, tokens, upstream_error_text, with_fault,
)
from harness.core.scenario.model import Backend

TERMINATOR = 2  # contextUsageEvent, metadataEvent


@dataclass(frozen=True, slots=True)
class KiroReplay:
    """A scenario's Kiro backend, ready to answer any number of requests."""

    frames: tuple[Frame, ...]
    delays: tuple[float, ...]  # seconds before each frame
    stop_reason: str
    input_tokens: int
    output_tokens: int
    delivery: Delivery


@dataclass(frozen=True, slots=True)
class KiroReply:
    """How one request is answered: the ids of calls the scenario left without one derive from ``answer_id``."""

    model: str
    answer_id: str


def prepare(backend: Backend) -> KiroReplay:
    usage = backend.usage or {}
    return KiroReplay(
        frames=backend.frames,
        delays=tuple(frame_delay(backend, frame) for frame in backend.frames),
        stop_reason=backend.finish_reason,
        input_tokens=tokens(usage, "inputTokens", "input_tokens", "prompt_tokens"),
        output_tokens=tokens(usage, "outputTokens", "output_tokens", "completion_tokens"),
        delivery=delivery(backend, default_error_body),
    )


def error_body(message: str, type: str = "ValidationException") -> dict[str, Any]:
    return KIRO.errors.write(message, type)


def default_error_body(status: int) -> dict[str, Any]:
    return error_body(upstream_error_text(status), KIRO.error_type(status))


def plan_reply(replay: KiroReplay, body: Mapping[str, Any], *, answer_id: str | None = None) -> KiroReply:
    current = body.get("conversationState")
    message = current.get("currentMessage") if isinstance(current, Mapping) else None
    user = message.get("userInputMessage") if isinstance(message, Mapping) else None
    model = user.get("modelId") if isinstance(user, Mapping) else None
    return KiroReply(replay.delivery.model or (model if isinstance(model, str) and model else "auto"),
                     answer_id or os.urandom(10).hex())


def message(event_type: str, payload: Any, *, message_type: str = "event", corrupt: str | None = None,
            cut: bool = False) -> Event:
    """One event-stream message as an event of the replay; ``cut`` marks a multi-byte
    character of its payload to be split between two writes."""
    data = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else dumps(payload, sort_keys=True)
    raw = event(event_type, data, message_type=message_type,
                corrupt=corrupt if corrupt in ("prelude", "message") else None)  # type: ignore[arg-type]
    inside = multibyte_cut(data) if cut else None
    if inside is not None:
        key = {"exception": ":exception-type", "error": ":error-code"}.get(message_type, ":event-type")
        headers = encode_headers({key: event_type, ":content-type": "application/json",
                                  ":message-type": message_type})
        inside += PRELUDE + len(headers)
    return Event(raw, 0.0, inside)


def tool_id(answer_id: str, index: int) -> str:
    return f"tooluse_{answer_id[:16]}{index:04d}"


def _frame_events(frame: Frame, index: int, reply: KiroReply, cut: bool) -> list[Event]:
    if isinstance(frame, ContentFrame):
        return [message("assistantResponseEvent", {"content": frame.content}, cut=cut)]
    if isinstance(frame, ToolUseFrame):
        ident = frame.id if frame.id is not None else tool_id(reply.answer_id, index)
        head = {"name": frame.name, "toolUseId": ident}
        fragments = frame.input_json or ("{}",)
        out = [message("toolUseEvent", {**head, "input": fragment}, cut=cut) for fragment in fragments]
        return [message("toolUseEvent", head), *out, message("toolUseEvent", {**head, "stop": True})]
    if isinstance(frame, EventFrame):
        return [message(frame.event, frame.payload, message_type=frame.message_type, corrupt=frame.corrupt, cut=cut)]
    if isinstance(frame, RawFrame):
        data = frame.raw.encode("utf-8", "surrogatepass")
        return [Event(data, 0.0, multibyte_cut(data) if cut else None)]
    return []  # an OpenAI tool_call delta has no Kiro form; such scenarios are not served here


def stream_events(replay: KiroReplay, reply: KiroReply) -> list[Event]:
    """Every message of the answer, in order, then the context usage and the metadata."""
    cut = replay.delivery.split_multibyte
    events: list[Event] = []
    starts: list[int] = []
    calls = 0
    for frame, delay in zip(replay.frames, replay.delays):
        starts.append(len(events))
        written = _frame_events(frame, calls, reply, cut)
        calls += isinstance(frame, ToolUseFrame)
        if written:
            first = written[0]
            written[0] = Event(first.data, first.delay + delay, first.cut)
        events.extend(written)
    starts.append(len(events))
    events.append(message("contextUsageEvent", {"contextUsagePercentage": 1.5}))
    usage = {"inputTokens": replay.input_tokens, "outputTokens": replay.output_tokens}
    events.append(message("metadataEvent", {"stopReason": replay.stop_reason, "tokenUsage": usage}))
    fault = replay.delivery.fault
    at = starts[fault.after_frame or 0] if fault is not None else 0
    return with_fault(events, fault, at=at, terminator=TERMINATOR)


def planned_events(backend: Backend, request: Mapping[str, Any]) -> list[Event]:
    """The messages the mock streams for ``backend`` answering ``request``, with fixed ids (what re-chunking cuts)."""
    replay = prepare(backend)
    return stream_events(replay, plan_reply(replay, request, answer_id="0" * 20))


def payloads(events: list[Event]) -> list[dict[str, Any]]:
    """What the messages of ``events`` carry, read back (for tests and reports)."""
    decoder = Decoder()
    out: list[dict[str, Any]] = []
    for item in events:
        for m in decoder.feed(item.data):
            out.append({"event": m.event_type, "message_type": m.message_type, "payload": json.loads(m.payload)})
    return out
