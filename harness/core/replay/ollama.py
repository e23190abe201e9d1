"""What Ollama's ``POST /api/chat`` answers for a scenario: NDJSON lines, or one JSON object
for ``stream: false``; pure, no I/O.

Streamed, every line is ``{"model", "created_at", "message": {"role": "assistant",
"content"}, "done": false}``: a text frame is one line with its ``content``; a ``tool_use``
frame is one line whose ``message.tool_calls`` holds the whole call (``id``, ``function{index,
name, arguments}``, ``arguments`` the object its fragments say) and an empty ``content``; a
``raw`` frame is written as it stands (a scenario writes NDJSON lines, cut anywhere, as raw
frames). The answer ends with a separate ``done: true`` line carrying ``done_reason`` and
the counters, which a ``no_terminator`` fault leaves out (and a scenario whose raw lines end the
stream themselves, with their own ``done`` or ``{"error"}`` line, does without). Ollama streams unless the request
says ``"stream": false`` (``api/types.go``: "true by default"); the whole answer joins the
content and gathers the calls into the last object, as ``writeChatResponse`` does
(``server/routes.go``). The shapes: https://github.com/ollama/ollama/blob/main/docs/api.md.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import OLLAMA, NativeCall
from harness.core.dialects.frames import ContentFrame, RawFrame, ToolUseFrame
from harness.core.dialects.ollama import call_arguments
from harness.core.replay.wire import (
    Delivery,
    Event,
    delivery,
    dumps,
    frame_delay,
    multibyte_cut,
    status_phrase,
    tokens,
    with_fault,
)
from harness.core.scenario.model import Backend

CREATED_AT = "2025-07-07T20:22:19.184789Z"  # the answers' ``created_at`` (docs/api.md's own example stamp)
_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


@dataclass(frozen=True, slots=True)
class Piece:
    """One scenario frame, serialized once: a raw frame's bytes, or the ``message`` of a line."""

    raw: bytes | None
    message: Mapping[str, Any] | None
    delay: float


@dataclass(frozen=True, slots=True)
class OllamaReplay:
    """A scenario's Ollama backend, ready to answer any number of requests."""

    pieces: tuple[Piece, ...]
    done_reason: str
    prompt_eval_count: int
    eval_count: int
    content: str
    calls: tuple[Mapping[str, Any], ...]
    delivery: Delivery
    ends_itself: bool = False  # a raw line ends the stream (its own done or error line): no done line follows


@dataclass(frozen=True, slots=True)
class OllamaReply:
    """How one request is answered: streamed or whole, the model named, and the seed of call ids."""

    stream: bool
    model: str
    answer_id: str


def call_id(answer_id: str, index: int) -> str:
    """``call_`` and 8 lower-case letters or digits, as Ollama's ``toolCallId`` writes them."""
    seed = int(answer_id[:12] or "0", 16) + index * 7919
    letters = []
    for _ in range(8):
        seed, digit = divmod(seed, len(_ID_ALPHABET))
        letters.append(_ID_ALPHABET[digit])
    return "call_" + "".join(letters)


def _call(frame: ToolUseFrame, index: int) -> dict[str, Any]:
    arguments = call_arguments(NativeCall(frame.name, frame.id, frame.input_json))
    out: dict[str, Any] = {"function": {"index": index, "name": frame.name, "arguments": arguments}}
    if frame.id is not None:
        out = {"id": frame.id, **out}
    return out


def _gather(line: str, contents: list[str], calls: list[Mapping[str, Any]]) -> bool:
    """What one raw NDJSON line adds to the whole answer (``writeChatResponse`` joins every
    chunk's content and gathers every chunk's calls; a line that is not a chunk adds nothing);
    True when the line ends the stream itself (a ``done: true`` line, or an ``{"error"}`` line)."""
    try:
        chunk = json.loads(line)
    except ValueError:
        return False
    if not isinstance(chunk, dict):
        return False
    message = chunk.get("message")
    ends = chunk.get("done") is True or "error" in chunk
    if not isinstance(message, dict):
        return ends
    if isinstance(message.get("content"), str):
        contents.append(message["content"])
    if isinstance(message.get("tool_calls"), list):
        calls.extend(c for c in message["tool_calls"] if isinstance(c, dict))
    return ends


def prepare(backend: Backend) -> OllamaReplay:
    usage = backend.usage or {}
    pieces: list[Piece] = []
    contents: list[str] = []
    calls: list[Mapping[str, Any]] = []
    raw: list[str] = []  # the raw frames' text, whose whole lines the whole answer gathers too
    ended = False
    for frame in backend.frames:
        delay = frame_delay(backend, frame)
        if isinstance(frame, RawFrame):
            pieces.append(Piece(frame.raw.encode("utf-8", "surrogatepass"), None, delay))
            raw.append(frame.raw)
            if "\n" in frame.raw:
                *whole, rest = "".join(raw).split("\n")
                raw = [rest]
                for line in whole:
                    ended = _gather(line, contents, calls) or ended
        elif isinstance(frame, ContentFrame):
            raw = []
            contents.append(frame.content)
            pieces.append(Piece(None, {"role": "assistant", "content": frame.content}, delay))
        elif isinstance(frame, ToolUseFrame):
            raw = []
            call = _call(frame, len(calls))
            calls.append(call)
            pieces.append(Piece(None, {"role": "assistant", "content": "", "tool_calls": [call]}, delay))
        # an OpenAI tool_call delta or a Kiro event has no Ollama form; such scenarios are not served here
    return OllamaReplay(
        pieces=tuple(pieces),
        done_reason=backend.finish_reason,
        prompt_eval_count=tokens(usage, "prompt_eval_count", "prompt_tokens", "input_tokens", "inputTokens"),
        eval_count=tokens(usage, "eval_count", "completion_tokens", "output_tokens", "outputTokens"),
        content="".join(contents),
        calls=tuple(calls),
        delivery=delivery(backend, default_error_body),
        ends_itself=ended,
    )


def error_body(message: str) -> dict[str, Any]:
    return OLLAMA.errors.write(message, OLLAMA.client_error_type)


def default_error_body(status: int) -> dict[str, Any]:
    return error_body(f"{status_phrase(status)} (HTTP {status} from the upstream)")


def plan_reply(replay: OllamaReplay, body: Mapping[str, Any], *, answer_id: str | None = None) -> OllamaReply:
    """Streamed unless the request says ``"stream": false`` (or the scenario forces a form)."""
    how = replay.delivery
    stream = body.get("stream") is not False if how.stream == "auto" else how.stream
    return OllamaReply(stream, how.model_for(body), answer_id or os.urandom(8).hex())


def _with_ids(message: Mapping[str, Any], reply: OllamaReply, first: int = 0) -> Mapping[str, Any]:
    """A message whose calls lack an id given one derived from the answer and their place among
    its calls (``first`` is the first one's), as Ollama gives every call one."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    given = [call if "id" in call else {"id": call_id(reply.answer_id, first + i), **call}
             for i, call in enumerate(calls)]
    return {**message, "tool_calls": given}


def _line(reply: OllamaReply, message: Mapping[str, Any], **tail: Any) -> bytes:
    return dumps({"model": reply.model, "created_at": CREATED_AT, "message": message, **tail}) + b"\n"


def _counters(replay: OllamaReplay) -> dict[str, Any]:
    return {"total_duration": 182242375, "load_duration": 41295167, "prompt_eval_count": replay.prompt_eval_count,
            "prompt_eval_duration": 24573166, "eval_count": replay.eval_count, "eval_duration": 115959084}


def stream_events(replay: OllamaReplay, reply: OllamaReply) -> list[Event]:
    """Every line of the answer, in order, then the ``done: true`` line."""
    events: list[Event] = []
    for piece in replay.pieces:
        if piece.raw is not None:
            data = piece.raw
        else:
            assert piece.message is not None
            calls = piece.message.get("tool_calls") or [{"function": {"index": 0}}]
            data = _line(reply, _with_ids(piece.message, reply, calls[0]["function"]["index"]), done=False)
        events.append(Event(data, piece.delay, multibyte_cut(data) if replay.delivery.split_multibyte else None))
    if not replay.ends_itself:
        final = _line(reply, {"role": "assistant", "content": ""}, done=True, done_reason=replay.done_reason,
                      **_counters(replay))
        events.append(Event(final))
    fault = replay.delivery.fault
    return with_fault(events, fault, at=(fault.after_frame or 0) if fault is not None else 0, terminator=1)


def planned_events(backend: Backend, request: Mapping[str, Any]) -> list[Event]:
    """The lines the mock streams for ``backend`` answering ``request``, with fixed ids (what re-chunking cuts)."""
    replay = prepare(backend)
    return stream_events(replay, plan_reply(replay, request, answer_id="0" * 16))


def chat_response(replay: OllamaReplay, reply: OllamaReply) -> dict[str, Any]:
    """The whole answer (``"stream": false``): one object, content joined, calls gathered."""
    message: dict[str, Any] = {"role": "assistant", "content": replay.content}
    if replay.calls:
        message = dict(_with_ids({**message, "tool_calls": list(replay.calls)}, reply))
    return {"model": reply.model, "created_at": CREATED_AT, "message": message, "done": True,
            "done_reason": replay.done_reason, **_counters(replay)}


def lines(events: list[Event]) -> list[dict[str, Any]]:
    """The objects the lines of ``events`` carry, read back (for tests and reports)."""
    body = b"".join(event.data for event in events)
    return [json.loads(line) for line in body.split(b"\n") if line.strip()]
