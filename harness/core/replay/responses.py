"""What the OpenAI Responses API answers for a scenario: pure, no I/O.

The frames become output items: consecutive text frames are one ``message`` item with
one ``output_text`` part, one ``response.output_text.delta`` each; a ``tool_use``
frame is a ``function_call`` item of its own, one
``response.function_call_arguments.delta`` per fragment. Every event carries its
``sequence_number``, counted from 0 in the order sent, and every item is announced by
``response.output_item.added`` and closed by ``response.output_item.done``, as the
API streams them (https://platform.openai.com/docs/api-reference/responses-streaming).

Item and call ids are generated per answer, so the events are written per request;
``prepare`` does what depends on the scenario alone once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects.frames import ContentFrame, RawFrame, ToolUseFrame
from harness.core.dialects.responses import RESPONSES, STATUS
from harness.core.replay.openai import error_body
from harness.core.replay.wire import (
    Answering, Delivery, Event, delivery, dumps, frame_delay, multibyte_cut, tokens, upstream_error_text, with_fault,
)
from harness.core.scenario.model import Backend


@dataclass(frozen=True, slots=True)
class TextStep:
    text: str
    delay: float


@dataclass(frozen=True, slots=True)
class CallStep:
    name: str
    call_id: str | None  # None: generated per answer
    fragments: tuple[str, ...]
    delay: float


@dataclass(frozen=True, slots=True)
class RawStep:
    data: bytes
    delay: float


Step = TextStep | CallStep | RawStep


@dataclass(frozen=True, slots=True)
class ResponsesReplay:
    """A scenario's Responses backend, ready to answer any number of requests."""

    steps: tuple[Step, ...]  # one per scenario frame
    status: str  # completed | incomplete
    input_tokens: int
    output_tokens: int
    delivery: Delivery  # how it reaches the proxy: form, model, pace, writes, fault


@dataclass(frozen=True, slots=True)
class ResponsesReply(Answering):
    response_id: str
    created_at: int
    request: Mapping[str, Any]


def prepare(backend: Backend) -> ResponsesReplay:
    steps: list[Step] = []
    for frame in backend.frames:
        delay = frame_delay(backend, frame)
        if isinstance(frame, ContentFrame):
            steps.append(TextStep(frame.content, delay))
        elif isinstance(frame, ToolUseFrame):
            steps.append(CallStep(frame.name, frame.id, frame.input_json, delay))
        elif isinstance(frame, RawFrame):
            steps.append(RawStep(frame.raw.encode("utf-8", "surrogatepass"), delay))
        # a Chat Completions tool_call delta has no Responses form; serve_as refuses such scripts
    usage = backend.usage or {}
    return ResponsesReplay(
        steps=tuple(steps),
        status=STATUS.get(backend.finish_reason, "completed"),
        input_tokens=tokens(usage, "input_tokens", "prompt_tokens"),
        output_tokens=tokens(usage, "output_tokens", "completion_tokens"),
        delivery=delivery(backend, default_error_body),
    )


def default_error_body(status: int) -> dict[str, Any]:
    """What the API answers with ``status`` when the scenario gives no body."""
    return error_body(upstream_error_text(status), code=None,
                      type=RESPONSES.error_type(status))


def plan_reply(replay: ResponsesReplay, body: Mapping[str, Any], *, response_id: str,
               created_at: int) -> ResponsesReply:
    how = replay.delivery
    return ResponsesReply(how.streams(body), how.model_for(body), response_id, created_at, body)


def item_id(reply: ResponsesReply, kind: str, index: int) -> str:
    """An output item's id: unique per answer and position (``msg_…``, ``fc_…``)."""
    return f"{kind}_{reply.response_id[-24:]}{index:04d}"


def call_id(reply: ResponsesReply, step: CallStep, index: int) -> str:
    return step.call_id if step.call_id is not None else item_id(reply, "call", index)


def _message(ident: str, text: str, status: str) -> dict[str, Any]:
    return {"id": ident, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]}


def _function_call(ident: str, call: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {"id": ident, "type": "function_call", "status": status, "call_id": call, "name": name,
            "arguments": arguments}


def _items(replay: ResponsesReplay, reply: ResponsesReply) -> list[dict[str, Any]]:
    """The output items of the whole answer, each complete."""
    items: list[dict[str, Any]] = []
    text: list[str] | None = None
    item_status = "completed" if replay.status == "completed" else "incomplete"
    for step in replay.steps:
        if isinstance(step, TextStep):
            if text is None:
                text = []
                items.append(_message(item_id(reply, "msg", len(items)), "", item_status))
            text.append(step.text)
            items[-1]["content"][0]["text"] = "".join(text)
        elif isinstance(step, CallStep):
            text = None
            index = len(items)
            items.append(_function_call(item_id(reply, "fc", index), call_id(reply, step, index), step.name,
                                        "".join(step.fragments), "completed"))
    return items


def _usage(replay: ResponsesReplay) -> dict[str, Any]:
    return {"input_tokens": replay.input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": replay.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": replay.input_tokens + replay.output_tokens}


def response_object(replay: ResponsesReplay, reply: ResponsesReply, *, status: str,
                    output: list[dict[str, Any]], usage: bool) -> dict[str, Any]:
    """The ``response`` object, echoing what the request set as the API does."""
    request = reply.request
    incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
    tools = request.get("tools")
    return {
        "id": reply.response_id, "object": "response", "created_at": reply.created_at, "status": status,
        "background": False, "error": None, "incomplete_details": incomplete,
        "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
        "model": reply.model, "output": output, "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"), "reasoning": {"effort": None, "summary": None},
        "store": request.get("store", True), "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}}, "tool_choice": request.get("tool_choice", "auto"),
        "tools": tools if isinstance(tools, list) else [], "top_p": request.get("top_p", 1.0),
        "truncation": "disabled", "usage": _usage(replay) if usage else None, "user": None, "metadata": {},
    }


def response(replay: ResponsesReplay, reply: ResponsesReply) -> dict[str, Any]:
    """The non-streaming answer: the same items, each whole."""
    return response_object(replay, reply, status=replay.status, output=_items(replay, reply), usage=True)


class _Writer:
    """Numbers and serializes the events; a step's delay goes to its first event."""

    def __init__(self, split_multibyte: bool) -> None:
        self.events: list[Event] = []
        self.sequence = 0
        self.delay = 0.0
        self.split = split_multibyte

    def emit(self, payload: dict[str, Any]) -> None:
        payload["sequence_number"] = self.sequence
        self.sequence += 1
        data = b"event: " + str(payload["type"]).encode() + b"\ndata: " + dumps(payload) + b"\n\n"
        self.events.append(Event(data, self.delay, multibyte_cut(data) if self.split else None))
        self.delay = 0.0

    def raw(self, data: bytes) -> None:
        self.events.append(Event(data, self.delay, multibyte_cut(data) if self.split else None))
        self.delay = 0.0


def stream_events(replay: ResponsesReplay, reply: ResponsesReply) -> list[Event]:
    """Every event of the answer in order: created, in_progress, each item added, its deltas
    and done events, then completed (incomplete for ``max_output_tokens``)."""
    out = _Writer(replay.delivery.split_multibyte)
    out.emit({"type": "response.created",
              "response": response_object(replay, reply, status="in_progress", output=[], usage=False)})
    out.emit({"type": "response.in_progress",
              "response": response_object(replay, reply, status="in_progress", output=[], usage=False)})
    done: list[dict[str, Any]] = []
    starts: list[int] = []
    message: dict[str, Any] | None = None
    text: list[str] = []
    item_status = "completed" if replay.status == "completed" else "incomplete"

    def close_message() -> None:
        nonlocal message
        if message is None:
            return
        joined = "".join(text)
        where = {"item_id": message["id"], "output_index": len(done), "content_index": 0}
        out.emit({"type": "response.output_text.done", **where, "text": joined, "logprobs": []})
        out.emit({"type": "response.content_part.done", **where,
                  "part": {"type": "output_text", "text": joined, "annotations": [], "logprobs": []}})
        whole = _message(message["id"], joined, item_status)
        out.emit({"type": "response.output_item.done", "output_index": len(done), "item": whole})
        done.append(whole)
        message = None
        text.clear()

    for step in replay.steps:
        starts.append(len(out.events))
        out.delay += step.delay
        if isinstance(step, TextStep):
            if message is None:
                message = {"id": item_id(reply, "msg", len(done))}
                out.emit({"type": "response.output_item.added", "output_index": len(done),
                          "item": {"id": message["id"], "type": "message", "status": "in_progress",
                                   "role": "assistant", "content": []}})
                out.emit({"type": "response.content_part.added", "item_id": message["id"],
                          "output_index": len(done), "content_index": 0,
                          "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}})
            text.append(step.text)
            out.emit({"type": "response.output_text.delta", "item_id": message["id"], "output_index": len(done),
                      "content_index": 0, "delta": step.text, "logprobs": []})
        elif isinstance(step, CallStep):
            close_message()
            index = len(done)
            ident, call = item_id(reply, "fc", index), call_id(reply, step, index)
            out.emit({"type": "response.output_item.added", "output_index": index,
                      "item": _function_call(ident, call, step.name, "", "in_progress")})
            for fragment in step.fragments:
                out.emit({"type": "response.function_call_arguments.delta", "item_id": ident, "output_index": index,
                          "delta": fragment})
            arguments = "".join(step.fragments)
            out.emit({"type": "response.function_call_arguments.done", "item_id": ident, "output_index": index,
                      "name": step.name, "arguments": arguments})
            whole = _function_call(ident, call, step.name, arguments, "completed")
            out.emit({"type": "response.output_item.done", "output_index": index, "item": whole})
            done.append(whole)
        else:
            out.raw(step.data)
    starts.append(len(out.events))
    close_message()
    final = "response.completed" if replay.status == "completed" else "response.incomplete"
    out.emit({"type": final, "response": response_object(replay, reply, status=replay.status, output=done,
                                                         usage=True)})
    fault = replay.delivery.fault
    at = starts[fault.after_frame or 0] if fault is not None else 0
    return with_fault(out.events, fault, at=at, terminator=1)


def planned_events(backend: Backend, request: Mapping[str, Any]) -> list[Event]:
    """The events the mock streams for ``backend`` answering ``request``, with fixed ids (what re-chunking cuts)."""
    replay = prepare(backend)
    return stream_events(replay, plan_reply(replay, request, response_id="resp_" + "0" * 48, created_at=10**9))
