"""What a vLLM-like OpenAI backend answers for a scenario: pure, no I/O.

``prepare`` does everything that depends on the scenario alone once (every frame's
delta serialized, cut points found, the non-streaming message assembled), so that
answering a request only glues a few byte strings together: the mock is the
baseline of a throughput benchmark and must not be its bottleneck.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import OPENAI
from harness.core.dialects.frames import ContentFrame, RawFrame, ToolCallFrame
from harness.core.replay.wire import (
    Answering, Delivery, Event, delivery, dumps, frame_delay, multibyte_cut, upstream_error_text, with_fault,
)
from harness.core.scenario.model import Backend

_DONE = b"data: [DONE]\n\n"
_ROLE_DELTA = b'{"role":"assistant","content":""}'
_OPEN_TAIL = b',"logprobs":null,"finish_reason":null}]}\n\n'
# The finish chunk as vLLM writes it: an empty content delta, then finish_reason and its own stop_reason.
_FINISH_DELTA = b'{"content":""},"logprobs":null,"finish_reason":'
_FINISH_TAIL = b',"stop_reason":null}]}\n\n'


@dataclass(frozen=True, slots=True)
class FramePiece:
    """One scenario frame, serialized once."""

    data: bytes  # the delta object's JSON, or the raw frame's bytes
    raw: bool
    delay: float  # seconds before the frame
    cut: int | None  # multi-byte cut inside ``data``


@dataclass(frozen=True, slots=True)
class ToolCallTotal:
    """A native call as the non-streaming answer carries it (all its frames joined)."""

    index: int
    id: str | None
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class OpenAIReplay:
    """A scenario's backend, ready to answer any number of requests."""

    pieces: tuple[FramePiece, ...]
    finish_reason: str
    finish_json: bytes
    usage: Mapping[str, int]
    usage_json: bytes
    content: str | None  # joined content frames; None when there are none
    tool_calls: tuple[ToolCallTotal, ...]
    delivery: Delivery  # how it reaches the proxy: form, model, pace, writes, fault


@dataclass(frozen=True, slots=True)
class Reply(Answering):
    include_usage: bool
    completion_id: str
    created: int
    choices: int = 1  # the request's ``n``


# In an answer with several choices, choice 0 is the scenario as written and each further
# choice i has this mark in its frames replaced by i: each choice says something of its own.
CHOICE_MARK = "{{choice}}"
MAX_CHOICES = 16


def asked_choices(body: Mapping[str, Any]) -> int:
    """The request's ``n`` when it is a sensible number of choices, else 1."""
    n = body.get("n")
    return n if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_CHOICES else 1


def _tool_call_delta(frame: ToolCallFrame) -> dict[str, Any]:
    call: dict[str, Any] = {"index": frame.index}
    if frame.id is not None:
        call["id"] = frame.id
    if frame.type is not None:
        call["type"] = frame.type
    function = {k: v for k, v in (("name", frame.name), ("arguments", frame.arguments)) if v is not None}
    if function:
        call["function"] = function
    return {"tool_calls": [call]}


def _usage(given: Mapping[str, int] | None) -> dict[str, int]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    usage.update(given or {})
    if given and "total_tokens" not in given:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def prepare(backend: Backend) -> OpenAIReplay:
    """Serialize a backend's frames once; the result is shared by every run of the scenario."""
    pieces: list[FramePiece] = []
    calls: dict[int, dict[str, Any]] = {}
    contents: list[str] = []
    for frame in backend.frames:
        delay = frame_delay(backend, frame)
        if isinstance(frame, RawFrame):
            data = frame.raw.encode("utf-8", "surrogatepass")
            pieces.append(FramePiece(data, True, delay, multibyte_cut(data)))
            continue
        if isinstance(frame, ContentFrame):
            contents.append(frame.content)
            data = dumps({"content": frame.content})
        elif isinstance(frame, ToolCallFrame):
            call = calls.setdefault(frame.index, {"id": None, "name": "", "arguments": ""})
            if call["id"] is None and frame.id is not None:
                call["id"] = frame.id
            call["name"] += frame.name or ""
            call["arguments"] += frame.arguments or ""
            data = dumps(_tool_call_delta(frame))
        else:
            continue  # an Anthropic block has no OpenAI form; such scenarios are not replayed here
        pieces.append(FramePiece(data, False, delay, multibyte_cut(data)))
    usage = _usage(backend.usage)
    return OpenAIReplay(
        pieces=tuple(pieces),
        finish_reason=backend.finish_reason,
        finish_json=dumps(backend.finish_reason),
        usage=usage,
        usage_json=dumps(usage),
        content="".join(contents) if contents else None,
        tool_calls=tuple(
            ToolCallTotal(index, c["id"], c["name"], c["arguments"]) for index, c in sorted(calls.items())
        ),
        delivery=delivery(backend, default_error_body),
    )


def default_error_body(status: int) -> dict[str, Any]:
    """What an OpenAI-compatible upstream answers with ``status`` when the scenario gives no body."""
    return error_body(upstream_error_text(status), code=None,
                      type=OPENAI.error_type(status))


def plan_reply(replay: OpenAIReplay, body: Mapping[str, Any], *, completion_id: str, created: int) -> Reply:
    """Decide the answer's form from the request: stream or not, model, usage chunk."""
    options = body.get("stream_options")
    include_usage = isinstance(options, Mapping) and options.get("include_usage") is True
    how = replay.delivery
    return Reply(how.streams(body), how.model_for(body), include_usage, completion_id, created, asked_choices(body))


def stream_events(replay: OpenAIReplay, reply: Reply) -> list[Event]:
    """Every SSE event of the answer, in order: role, one per frame, finish, usage, [DONE].
    With several choices (the request's ``n``), each of those steps is one event per
    choice, choice 0 first: frame k of every choice before frame k+1 of any."""
    if reply.choices > 1:
        return _several_choices(replay, reply)
    envelope = (
        b'{"id":' + dumps(reply.completion_id) + b',"object":"chat.completion.chunk","created":'
        + str(reply.created).encode() + b',"model":' + dumps(reply.model)
    )
    head = b"data: " + envelope + b',"choices":[{"index":0,"delta":'
    # The envelope is ASCII unless the model name is not; only then can a cut fall in it.
    head_cut = replay.delivery.cut(head)
    offset = len(head)
    events = [Event(head + _ROLE_DELTA + _OPEN_TAIL, 0.0, head_cut)]
    for piece in replay.pieces:
        if piece.raw:
            events.append(Event(piece.data, piece.delay, piece.cut))
        else:
            cut = head_cut if head_cut is not None else (None if piece.cut is None else offset + piece.cut)
            events.append(Event(head + piece.data + _OPEN_TAIL, piece.delay, cut))
    events.append(Event(head + _FINISH_DELTA + replay.finish_json + _FINISH_TAIL, 0.0, head_cut))
    if reply.include_usage:
        usage = b"data: " + envelope + b',"choices":[],"usage":' + replay.usage_json + b"}\n\n"
        events.append(Event(usage, 0.0, head_cut))
    events.append(Event(_DONE))
    # after_frame counts scenario frames: the fault strikes before event after_frame + 1
    # (the role chunk is event 0); no_terminator leaves out [DONE].
    fault = replay.delivery.fault
    at = (fault.after_frame or 0) + 1 if fault is not None else 0
    return with_fault(events, fault, at=at, terminator=1)


def _several_choices(replay: OpenAIReplay, reply: Reply) -> list[Event]:
    """The stream of an answer with ``reply.choices`` choices, interleaved step by step;
    choice 0 is the scenario as written, and ``{{choice}}`` in a frame of choice i > 0
    becomes i. Network cuts apply per event."""
    envelope = (
        b'data: {"id":' + dumps(reply.completion_id) + b',"object":"chat.completion.chunk","created":'
        + str(reply.created).encode() + b',"model":' + dumps(reply.model)
    )
    heads = [envelope + b',"choices":[{"index":' + str(i).encode() + b',"delta":' for i in range(reply.choices)]
    mark = CHOICE_MARK.encode()

    def own(data: bytes, i: int) -> bytes:
        return data.replace(mark, str(i).encode()) if i else data

    def event(data: bytes, delay: float = 0.0) -> Event:
        return Event(data, delay, replay.delivery.cut(data))

    events = [event(head + _ROLE_DELTA + _OPEN_TAIL) for head in heads]
    for piece in replay.pieces:
        for i, head in enumerate(heads):
            data = own(piece.data, i) if piece.raw else head + own(piece.data, i) + _OPEN_TAIL
            events.append(event(data, piece.delay if i == 0 else 0.0))
    events += [event(head + _FINISH_DELTA + replay.finish_json + _FINISH_TAIL) for head in heads]
    if reply.include_usage:
        events.append(event(envelope + b',"choices":[],"usage":' + replay.usage_json + b"}\n\n"))
    events.append(Event(_DONE))
    fault = replay.delivery.fault
    at = ((fault.after_frame or 0) + 1) * reply.choices if fault is not None else 0
    return with_fault(events, fault, at=at, terminator=1)


def _own(text: str | None, i: int) -> str | None:
    return text if text is None or not i else text.replace(CHOICE_MARK, str(i))


def completion(replay: OpenAIReplay, reply: Reply) -> dict[str, Any]:
    """The non-streaming ``chat.completion`` answer (one choice per ``n``, as streamed)."""
    several = reply.choices > 1
    choices = []
    for i in range(reply.choices):
        message: dict[str, Any] = {"role": "assistant", "content": _own(replay.content, i)}
        if replay.tool_calls:
            suffix = f"_{i}" if several else ""
            message["tool_calls"] = [
                {
                    "id": call.id if call.id is not None else f"call_{reply.completion_id[-24:]}_{call.index}{suffix}",
                    "type": "function",
                    "function": {"name": _own(call.name, i), "arguments": _own(call.arguments, i)},
                }
                for call in replay.tool_calls
            ]
        choices.append({"index": i, "message": message, "logprobs": None, "finish_reason": replay.finish_reason})
    return {
        "id": reply.completion_id,
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": choices,
        "usage": dict(replay.usage),
    }


def error_body(
    message: str, *, code: str | None, type: str = "invalid_request_error", param: str | None = None
) -> dict[str, Any]:
    """An error in the shape every OpenAI client parses."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def planned_events(backend: Backend, request: Mapping[str, Any]) -> list[Event]:
    """The events the mock streams for ``backend`` answering ``request``, with fixed ids (what re-chunking cuts)."""
    replay = prepare(backend)
    return stream_events(replay, plan_reply(replay, request, completion_id="chatcmpl-" + "0" * 32, created=10**9))
