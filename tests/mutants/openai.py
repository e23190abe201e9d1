"""OpenAI-dialect mutants: each breaks one thing real proxies get wrong.

Wire mutants rewrite the reference proxy's chunks; behaviour mutants swap one piece
of it. Each entry of ``MUTANTS`` says what it breaks, which rules must catch it and
which scenarios expose it.
"""

from __future__ import annotations

import html
import json
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from starlette.types import ASGIApp

from harness.core.dialects.clients import CLIENTS
from mutants import base
from mutants.base import (
    DONE,
    ChunkRewriter,
    Mutant,
    Out,
    RewritingApp,
    SSEEvent,
    WholeAnswerRewriter,
    deltas,
    failing_after,
    finish_reason,
    reference,
    rewritten,
    tool_calls,
    wire,
    with_parts,
)
from reference_proxy.config import ProxyConfig
from reference_proxy.parts import Parts
from reference_proxy.pipeline import RescuerFactory, RescuerLike, StreamPipeline, _Choice
from reference_proxy.rescue import Event, Rescuer, Text, ToolSpec
from reference_proxy.rescue.families import CALLS
from reference_proxy.rescue.families.code import Code
from reference_proxy.rescue.family import Family
from reference_proxy.rescue.openers import Openers
from reference_proxy.rescue.scanner import FAMILIES

# --------------------------------------------------------------------------- wire: tool calls


class AnswerRewriter(WholeAnswerRewriter, ChunkRewriter):
    """Rewrites a whole (non-streaming) answer of status 200 as data (``on_answer``)."""

    def is_answer(self, status: int, answer: dict[str, Any]) -> bool:
        return status == 200


def answer_calls(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool call of a whole answer, in order."""
    messages = [choice.get("message") or {} for choice in answer.get("choices") or ()]
    return [call for message in messages for call in message.get("tool_calls") or ()]


class WholeCallWithoutIndex(ChunkRewriter):
    """Sends each call as one entry (id, name and arguments together) with no ``index``."""

    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        calls = tool_calls(chunk)
        if not calls:
            return (chunk,)
        if "id" in calls[0]:
            self.start = chunk  # the reference sends the arguments in the next chunk
            return ()
        assert self.start is not None
        whole = tool_calls(self.start)[0]
        whole["function"]["arguments"] = calls[0]["function"]["arguments"]
        del whole["index"]
        return (self.start,)


class FirstCallOnly(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        return () if any(call["index"] > 0 for call in tool_calls(chunk)) else (chunk,)


class IndicesFromOne(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            call["index"] += 1
        return (chunk,)


class ArgumentsCutShort(ChunkRewriter):
    """Loses the last character of every call's arguments (its closing brace)."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            function = call.get("function", {})
            if "id" not in call and function.get("arguments"):
                function["arguments"] = function["arguments"][:-1]
        return (chunk,)


class CallIdResentChanged(ChunkRewriter):
    """Repeats an ``id`` on every later delta of a call, a fresh one each time."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            call.setdefault("id", "call_" + secrets.token_hex(12))
        return (chunk,)


class StopWithToolCalls(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "stop"
        return (chunk,)


class ToolCallsFinishAsFunctionCall(ChunkRewriter):
    """Names a streamed call's finish by the legacy functions API's reason, as a proxy still mapping to it does."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason") == "tool_calls":
                choice["finish_reason"] = "function_call"
        return (chunk,)


# --------------------------------------------------------------------------- wire: text and framing


class TextBeforeCallDropped(ChunkRewriter):
    """Holds text back in case a call follows, and throws it away when one does."""

    def __init__(self) -> None:
        self.held: list[dict[str, Any]] = []

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if any("content" in delta for delta in deltas(chunk)):
            self.held.append(chunk)
            return ()
        if tool_calls(chunk):
            self.held.clear()
        elif finish_reason(chunk):
            held, self.held = self.held, []
            return (*held, chunk)
        return (chunk,)


class TextAfterFinish(ChunkRewriter):
    """Sends each text chunk one event late, so the last one lands after the finish chunk."""

    def __init__(self) -> None:
        self.late: dict[str, Any] | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if any("content" in delta for delta in deltas(chunk)):
            late, self.late = self.late, chunk
            return () if late is None else (late,)
        if finish_reason(chunk) and self.late is not None:
            late, self.late = self.late, None
            return (chunk, late)
        return (chunk,)


class ChunkIdPerChunk(ChunkRewriter):
    def __init__(self) -> None:
        self.count = 0

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        self.count += 1
        chunk["id"] = f"chatcmpl-{self.count}"
        return (chunk,)


class NoUsageChunk(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        return () if chunk.get("choices") == [] else (chunk,)


class NoDone(ChunkRewriter):
    def on_done(self) -> Out:
        return ()


class DoneTwice(ChunkRewriter):
    def on_done(self) -> Out:
        return (DONE, DONE)


# --------------------------------------------------------------------------- wire: upstream faults


class Envelope(ChunkRewriter):
    """Remembers the stream's envelope (id, created, model) to write chunks of its own."""

    def __init__(self) -> None:
        self.envelope: dict[str, Any] = {"id": "chatcmpl-mutant", "object": "chat.completion.chunk", "created": 0,
                                         "model": "mutant"}

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        self.envelope = {k: chunk[k] for k in ("id", "object", "created", "model") if k in chunk}
        return (chunk,)

    def finish(self, reason: str) -> dict[str, Any]:
        return {**self.envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}

    def completed(self) -> Out:
        return (self.finish("stop"),)  # the reference's [DONE] follows


class HangsOnUpstreamFailure(base.HangsOnUpstreamFailure, ChunkRewriter):
    """Waits for an upstream that is gone: sends nothing more, never ends the answer."""


class SwallowsStreamError(base.SwallowsStreamError, Envelope):
    """Ends the stream as if the answer were complete when the upstream broke off."""


class SwallowsHttpError(Envelope):
    """Answers an upstream error status with 200 and an empty answer, in the form asked for."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status < 400:
            return status, content_type, body
        if json.loads(self.request).get("stream"):
            role = {**self.envelope, "choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]}
            events = (SSEEvent.of(role), SSEEvent.of(self.finish("stop")), DONE)
            return 200, "text/event-stream", b"".join(self.encode(e) for e in events)
        empty = {**self.envelope, "object": "chat.completion",
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]}
        return 200, "application/json", json.dumps(empty).encode()


# --------------------------------------------------------------------------- wire: more breakage seen in the field


class NameSplit(ChunkRewriter):
    """Sends a call's name in two deltas, as some backends stream it."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        calls = tool_calls(chunk)
        if not calls or "id" not in calls[0]:
            return (chunk,)
        function = calls[0]["function"]
        name, function["name"] = function["name"], function["name"][:4]
        rest = {"index": calls[0]["index"], "function": {"name": name[4:]}}
        return (chunk, {**chunk, "choices": [{**chunk["choices"][0], "delta": {"tool_calls": [rest]}}]})


class PlaceholderArguments(ChunkRewriter):
    """Opens each call with `"arguments": "{}"` before the real arguments."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            if "id" in call:
                call["function"]["arguments"] = "{}"
        return (chunk,)


class EmptyArguments(ChunkRewriter):
    """Sends nothing for a call without arguments (the arguments join to "")."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        calls = tool_calls(chunk)
        return () if calls and "id" not in calls[0] and calls[0]["function"].get("arguments") == "{}" else (chunk,)


class RoleOnEveryDelta(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in deltas(chunk):
            delta.setdefault("role", "assistant")
        return (chunk,)


class SameIdForEveryCall(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            if "id" in call:
                call["id"] = "call_0"
        return (chunk,)


class NoFinishChunk(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        return () if finish_reason(chunk) else (chunk,)


class DoneWithTrailingSpace(ChunkRewriter):
    def on_done(self) -> Out:
        return (SSEEvent("[DONE] "),)


class ChunkOverTwoLines(ChunkRewriter):
    """Writes each chunk's JSON over two `data:` lines of one event."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        data = SSEEvent.of(chunk).data
        return (SSEEvent(data.replace(",", ",\n", 1)),)


class ErrorWithoutDone(ChunkRewriter):
    """Reports an upstream failure with an error chunk, then stops without `[DONE]`."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        self.failed = True
        return (payload,)

    def on_done(self) -> Out:
        return () if getattr(self, "failed", False) else (DONE,)


class ErrorStatusAsStream(Envelope):
    """Turns an upstream error status into a started stream (200) carrying an error chunk."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status < 400 or not json.loads(self.request).get("stream"):
            return status, content_type, body
        events = (SSEEvent(body.decode()), DONE)
        return 200, "text/event-stream", b"".join(self.encode(e) for e in events)


class ArgumentsAsObject(AnswerRewriter):
    """In a whole (non-streaming) answer, writes each call's arguments as a JSON object, not a string."""

    def on_answer(self, answer: dict[str, Any]) -> None:
        for call in answer_calls(answer):
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])


class LengthBecomesStop(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason") == "length":
                choice["finish_reason"] = "stop"
        return (chunk,)


# --------------------------------------------------------------------------- wire: framing


class PayloadLineWithoutField(ChunkRewriter):
    """Writes the first chunk as a bare JSON line, without the `data:` field."""

    def __init__(self) -> None:
        self.first = True

    def encode(self, event: SSEEvent) -> bytes:
        if self.first and event.payload is not None:
            self.first = False
            return wire(f"{event.data}\n\n")
        return super().encode(event)


class TwoChunksPerEvent(ChunkRewriter):
    """Sends chunks in pairs, both in one event (the blank line between them left out)."""

    def __init__(self) -> None:
        self.held: SSEEvent | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        event = SSEEvent.of(chunk)
        if self.held is None:
            self.held = event
            return ()
        held, self.held = self.held, None
        return (SSEEvent(f"{held.data}\n{event.data}"),)

    def on_done(self) -> Out:
        held, self.held = self.held, None
        return (*(() if held is None else (held,)), DONE)


class ChunkAfterDone(Envelope):
    def on_done(self) -> Out:
        return (DONE, {**self.envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": None}]})


class InvalidUtf8(ChunkRewriter):
    """Writes a byte that is not UTF-8 into the role chunk."""

    def writes(self, body: bytes) -> Iterable[bytes]:
        return (body.replace(b'"role":"assistant"', b'"role":"assistant","x_note":"\xff"', 1),)


class LastChunkUnterminated(ChunkRewriter):
    """Ends the stream inside the finish chunk's event: no blank line after it, no `[DONE]`."""

    def encode(self, event: SSEEvent) -> bytes:
        payload = event.payload
        if payload is not None and finish_reason(payload):
            return wire(f"data: {event.data}\n")
        return super().encode(event)

    def on_done(self) -> Out:
        return ()


# --------------------------------------------------------------------------- wire: chunks


class NotJsonKeepAlive(ChunkRewriter):
    """Sends `data: keep-alive` before the first chunk."""

    def __init__(self) -> None:
        self.sent = False

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if self.sent:
            return (chunk,)
        self.sent = True
        return (SSEEvent("keep-alive"), chunk)


class HeartbeatWithoutChoices(Envelope):
    """Sends a heartbeat chunk (the envelope, no `choices`) after the first chunk."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        first = self.envelope.get("id") == "chatcmpl-mutant"
        super().on_chunk(chunk)
        return (chunk, dict(self.envelope)) if first else (chunk,)


class EmptyToolCallsOnText(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in deltas(chunk):
            if "content" in delta:
                delta["tool_calls"] = []
        return (chunk,)


class EmptyRole(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in deltas(chunk):
            if "role" in delta:
                delta["role"] = ""
        return (chunk,)


class NoRole(ChunkRewriter):
    """Never sends the role."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in deltas(chunk):
            delta.pop("role", None)
        return (chunk,)


class RoleOnSecondChunk(ChunkRewriter):
    """Sends the role on the chunk after the first."""

    def __init__(self) -> None:
        self.chunks = 0

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        self.chunks += 1
        for delta in deltas(chunk):
            if self.chunks == 1:
                delta.pop("role", None)
            elif self.chunks == 2:
                delta["role"] = "assistant"
        return (chunk,)


class EmptyChunkAfterFinish(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if not finish_reason(chunk):
            return (chunk,)
        after = {**chunk, "choices": [{**choice, "delta": {}, "finish_reason": None} for choice in chunk["choices"]]}
        return (chunk, after)


class StopThenToolCalls(ChunkRewriter):
    """Sends a finish chunk with "stop" before the one with "tool_calls"."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if finish_reason(chunk) != "tool_calls":
            return (chunk,)
        stop = {**chunk, "choices": [{**choice, "finish_reason": "stop"} for choice in chunk["choices"]]}
        return (stop, chunk)


class UnaskedUsage(Envelope):
    """Sends a usage chunk though the client did not ask for one."""

    def on_done(self) -> Out:
        usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
        return ({**self.envelope, "choices": [], "usage": usage}, DONE)


class DropsConnectionAtTheEnd(ChunkRewriter):
    """Breaks the connection where the finish chunk was due: no complete answer arrives."""

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        if finish_reason(chunk):
            raise ConnectionAbortedError("the mutant drops the connection")
        return (chunk,)


class DropsText(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in deltas(chunk):
            delta.pop("content", None)
        return (chunk,)


# --------------------------------------------------------------------------- wire: whole answers and status


class CompletionWithoutCreated(AnswerRewriter):
    def on_answer(self, answer: dict[str, Any]) -> None:
        answer.pop("created", None)


class DeltaInWholeAnswer(AnswerRewriter):
    """Writes a whole answer's message as a `delta`, as if it were one chunk."""

    def on_answer(self, answer: dict[str, Any]) -> None:
        for choice in answer.get("choices") or ():
            choice["delta"] = choice.pop("message", {})


class WholeAnswerAsText(ChunkRewriter):
    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        return status, "text/plain; charset=utf-8", body


class WholeAnswerForStream(Envelope):
    """Answers a streaming request with one chat.completion body, as if it had not asked to stream."""

    def __init__(self) -> None:
        super().__init__()
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.reason: str | None = None

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        super().on_chunk(chunk)
        for delta in deltas(chunk):
            self.content.append(delta.get("content") or "")
        for call in tool_calls(chunk):
            whole = self.calls.setdefault(call["index"], {"id": "", "type": "function",
                                                          "function": {"name": "", "arguments": ""}})
            whole["id"] = call.get("id", whole["id"])
            for key in ("name", "arguments"):
                whole["function"][key] += call.get("function", {}).get(key) or ""
        self.reason = finish_reason(chunk) or self.reason
        return ()

    def on_done(self) -> Out:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content) or None}
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        answer = {**self.envelope, "object": "chat.completion",
                  "choices": [{"index": 0, "message": message, "finish_reason": self.reason}]}
        return (SSEEvent(json.dumps(answer)),)

    def encode(self, event: SSEEvent) -> bytes:
        return event.data.encode()


class ServerErrorForText(ChunkRewriter):
    """Answers a whole text answer with status 500."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status != 200:
            return status, content_type, body
        error = {"error": {"message": "internal error", "type": "server_error", "param": None, "code": None}}
        return 500, "application/json", json.dumps(error).encode()


class StringErrorInStream(ChunkRewriter):
    def on_error(self, payload: dict[str, Any]) -> Out:
        return ({"error": str(payload["error"].get("message", "upstream error"))},)


class DetailErrorBody(ChunkRewriter):
    """Passes an upstream error status on with a `{"detail": …}` body (a web framework's default)."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status < 400:
            return status, content_type, body
        return status, "application/json", json.dumps({"detail": "upstream error"}).encode()


class HtmlErrorPage(ChunkRewriter):
    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status < 400:
            return status, content_type, body
        page = f"<!DOCTYPE html><html><body><h1>{status} Bad Gateway</h1></body></html>"
        return 502, "text/html; charset=utf-8", page.encode()


class DropsRetryAfter(ChunkRewriter):
    drop_headers = ("retry-after",)


class SlowOnUpstreamError(ChunkRewriter):
    """Waits six seconds before passing an upstream error on (retrying with back-off, say)."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status >= 500:
            self.pause = 6.0
        return status, content_type, body


# --------------------------------------------------------------------------- wire: upstream


class ToolResultsCut(ChunkRewriter):
    """Cuts every tool result it forwards to ten characters."""

    def on_request(self, body: bytes) -> bytes:
        request = json.loads(body)
        for message in request.get("messages") or ():
            if message.get("role") == "tool" and isinstance(message.get("content"), str):
                message["content"] = message["content"][:10]
        return json.dumps(request).encode()


class AsksUpstreamTwice(ChunkRewriter):
    """Sends every request upstream twice (a retry that was not needed) and answers the second."""

    attempts = 2


@dataclass
class Outage:
    """Whether a proxy has seen its upstream fail (shared by the requests of one app)."""

    failed: bool = False


class StopsServingAfterAFailure(ChunkRewriter):
    """Answers 503 to every request once its upstream has failed."""

    def __init__(self, outage: Outage) -> None:
        self.outage = outage

    def refusal(self) -> tuple[int, str, bytes] | None:
        if not self.outage.failed:
            return None
        error = {"error": {"message": "service unavailable", "type": "server_error", "param": None, "code": None}}
        return 503, "application/json", json.dumps(error).encode()

    def on_error(self, payload: dict[str, Any]) -> Out:
        self.outage.failed = True
        return (payload,)

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        self.outage.failed = self.outage.failed or status >= 500
        return status, content_type, body


def stops_serving_after_a_failure(config: ProxyConfig) -> ASGIApp:
    outage = Outage()
    return RewritingApp(reference(config), lambda: StopsServingAfterAFailure(outage))


# --------------------------------------------------------------------------- behaviour


def families_without(family: str) -> tuple[Family, ...]:
    """The rescuer's families with ``family`` switched off, inside fenced blocks too."""
    if family not in {f.name for f in FAMILIES}:
        raise ValueError(f"no rescue family {family!r}")
    calls = tuple(f for f in CALLS if f.name != family)
    return tuple(Code(calls, nest=f.nest) if isinstance(f, Code) else f for f in FAMILIES if f.name != family)


class ForgetsHeldTextAtEnd:
    """A rescuer that drops whatever it still holds when the stream ends."""

    def __init__(self, tools: Sequence[ToolSpec], buffer_cap: int) -> None:
        self.inner = Rescuer(tools, buffer_cap=buffer_cap)

    @property
    def overflowed(self) -> bool:
        return self.inner.overflowed

    def feed(self, text: str) -> list[Event]:
        return self.inner.feed(text)

    def finish(self) -> list[Event]:
        return [e for e in self.inner.finish() if not isinstance(e, Text)]


def with_rescuer(factory: RescuerFactory) -> partial[StreamPipeline]:
    return partial(StreamPipeline, rescuer_factory=factory)


def without_family(family: str) -> RescuerFactory:
    """Rescuers that do not know ``family``, made as the proxy makes its own."""
    openers = Openers(families_without(family))

    def factory(tools: Sequence[ToolSpec], buffer_cap: int) -> RescuerLike:
        return Rescuer(tools, buffer_cap=buffer_cap, openers=openers)

    return factory


class AdmitsEveryCall:
    """A call ledger that never recognises a duplicate."""

    def admit_rescued(self, name: str, arguments: str) -> bool:
        return True

    admit_native = admit_rescued


class NoDedup(StreamPipeline):
    def _open_choice(self, index: int, emitter: Any, out: list[str]) -> _Choice:
        choice = super()._open_choice(index, emitter, out)
        choice.ledger = AdmitsEveryCall()  # type: ignore[assignment]
        return choice


class CompletesCallsOnFailure(StreamPipeline):
    """Repairs the native calls it was buffering when the upstream fails into JSON that
    parses, and delivers them. (Relaying the half arguments before the error chunk is no
    defect: no client runs them.)"""

    def _end_choice(self, choice: _Choice, out: list[str], *, complete_natives: bool) -> None:
        for call in choice.native.values():
            if not call.done and call.parts:
                call.parts = [base.closed_json("".join(call.parts))]
        super()._end_choice(choice, out, complete_natives=True)


class RelaysHalfCallsOnFailure(StreamPipeline):
    """Delivers the native calls it was buffering when the upstream fails, as far as they
    got, then the error chunk: what LiteLLM does. No client runs such a call."""

    def _end_choice(self, choice: _Choice, out: list[str], *, complete_natives: bool) -> None:
        super()._end_choice(choice, out, complete_natives=True)


def _not_a_json_object(data: str) -> bool:
    try:
        return not isinstance(json.loads(data), dict)
    except ValueError:
        return True


class ErrorAtMalformedEvent(StreamPipeline):
    """Ends the answer with a clean error chunk at an upstream event that is not JSON, as
    LiteLLM does: the text before it stays, and the client is told the answer is cut."""

    def feed_data(self, data: str) -> str:
        if data.strip() != "[DONE]" and _not_a_json_object(data):
            return self.fail({"message": "the upstream sent an event that is not JSON", "type": "server_error"})
        return super().feed_data(data)


class EndsAtMalformedEvent(StreamPipeline):
    """Ends the answer as if complete at an upstream event that is not JSON: the rest is
    lost and the client is never told."""

    def feed_data(self, data: str) -> str:
        if data.strip() != "[DONE]" and _not_a_json_object(data):
            return self.close()
        return super().feed_data(data)


def forget_held_text(pipeline: StreamPipeline) -> None:
    """Drops the text its rescuers hold when the upstream fails."""
    for choice in pipeline._choices.values():
        choice.rescuer = None


ForgetsHeldTextOnFailure = failing_after(StreamPipeline, forget_held_text)


def never_xml_client(user_agent: str | None, patterns: Sequence[str]) -> bool:
    return False


def entity_escaped_xml(name: str, arguments: str) -> str:
    """Cline-style XML with the values entity-escaped, as an XML library writes them."""
    values = json.loads(arguments or "{}")
    lines = [f"<{k}>{html.escape(v if isinstance(v, str) else json.dumps(v), quote=False)}</{k}>"
             for k, v in values.items()]
    return "\n".join([f"<{name}>", *lines, f"</{name}>"])


# --------------------------------------------------------------------------- the catalogue

NATIVE = "plain-native-single"
PARALLEL = "plain-native-parallel"
NOT_STREAMED = "plain-text-non-stream"

# Correct, though unlike the reference: the half call it relays before the error chunk is never run.
RELAYS_HALF_CALL = Mutant(
    "relays-half-call-before-error",
    "Nothing: it relays the unfinished native call it had before the error chunk, as LiteLLM does.",
    (),
    ("faults-openai-drop-mid-native-call",),
    with_parts(Parts(chat_pipeline=RelaysHalfCallsOnFailure)),
)

# Correct, though unlike the reference: it ends with a clean error where an upstream event is broken.
ERROR_AT_MALFORMED_EVENT = Mutant(
    "error-at-malformed-event",
    "Nothing: it ends the answer with a clean error chunk at a broken upstream event, after the text before it.",
    (),
    ("faults-openai-malformed-event",),
    with_parts(Parts(chat_pipeline=ErrorAtMalformedEvent)),
)

MUTANTS: tuple[Mutant, ...] = (
    Mutant("whole-call-without-index", "Sends each tool call as one delta entry with no `index`.",
           ("TOOL-001", "SDK-001"), (NATIVE,), rewritten(WholeCallWithoutIndex)),
    Mutant("first-call-only", "Delivers only the first of parallel tool calls.",
           ("CALLS-001", "SDK-002"), (PARALLEL, "hermes-parallel"), rewritten(FirstCallOnly)),
    Mutant("hermes-rescue-off", "Does not know the Hermes `<tool_call>` format: its tags leak into the content.",
           ("TEXT-003", "TEXT-001"), ("hermes-single",),
           with_parts(Parts(chat_pipeline=with_rescuer(without_family("hermes"))))),
    Mutant("held-tag-lost-at-end", "Drops the text it held back as a possible tag when the stream ends.",
           ("TEXT-001",), ("faults-openai-unterminated-tool-call",),
           with_parts(Parts(chat_pipeline=with_rescuer(ForgetsHeldTextAtEnd)))),
    Mutant("stop-with-tool-calls", 'Sends `finish_reason: "stop"` after tool calls (whole answers keep "tool_calls").',
           ("TOOL-009", "EQ-001"), (NATIVE,), rewritten(StopWithToolCalls), strict=True),
    Mutant("tool-calls-finish-as-function-call", 'Reports an answer with tool calls by the deprecated `finish_reason: '
           '"function_call"`, at which VS Code Copilot hands no tool calls on.',
           ("CALLS-002", "EQ-001"), (NATIVE,), rewritten(ToolCallsFinishAsFunctionCall)),
    Mutant("no-done", "Ends the stream without `data: [DONE]`.",
           ("SSE-004",), (NATIVE,), rewritten(NoDone), strict=True),
    Mutant("done-twice", "Sends `data: [DONE]` twice.",
           ("SSE-007",), (NATIVE,), rewritten(DoneTwice), strict=True),
    Mutant("arguments-not-json", "Cuts the closing brace off every call's arguments.",
           ("TOOL-006", "CALLS-001"), (NATIVE,), rewritten(ArgumentsCutShort)),
    Mutant("call-id-changes", "Repeats a call's `id` on its later deltas, with a different value each time.",
           ("TOOL-003",), (NATIVE,), rewritten(CallIdResentChanged)),
    Mutant("chunk-id-changes", "Gives every chunk of a stream its own `id`.",
           ("CHUNK-004",), (NATIVE,), rewritten(ChunkIdPerChunk), strict=True),
    Mutant("indices-from-one", "Numbers tool calls from 1.",
           ("TOOL-004", "SDK-001"), (PARALLEL,), rewritten(IndicesFromOne)),
    Mutant("text-before-call-dropped", "Throws away the text that came before a tool call.",
           ("TEXT-001",), ("qwen-tools-text-before-tags", PARALLEL), rewritten(TextBeforeCallDropped)),
    Mutant("dedup-off", "Delivers a call twice when it came both as text and natively.",
           ("CALLS-001",), ("invoke-xml-native-duplicate",), with_parts(Parts(chat_pipeline=NoDedup))),
    Mutant("text-after-finish", "Sends the last piece of text after the finish chunk.",
           ("CHUNK-008",), ("plain-text-multibyte",), rewritten(TextAfterFinish)),
    Mutant("usage-missing", "Leaves out the usage chunk the client asked for.",
           ("USAGE-001",), ("plain-include-usage",), rewritten(NoUsageChunk), strict=True),
    Mutant("xml-client-gets-tool-calls", "Gives an XML-reading client (Cline) structured `tool_calls` instead of XML.",
           ("VTC-001", "VTC-002", "VTC-004"), ("cline-xml-backend-native", "hermes-single"),
           with_parts(Parts(xml_client=never_xml_client)), profile=CLIENTS["xml-client"], strict=True),
    # upstream faults
    Mutant("hangs-on-upstream-failure", "Never ends the client's stream when the upstream connection drops.",
           ("HTTP-002",), ("faults-openai-drop-between-events",), rewritten(HangsOnUpstreamFailure), timeout=2.0),
    Mutant("swallows-stream-error", "Ends the stream as if complete when the upstream drops mid-answer.",
           ("FAULT-001",), ("faults-openai-drop-between-events",), rewritten(SwallowsStreamError)),
    Mutant("swallows-http-error", "Answers an upstream 500 with 200 and empty content.",
           ("FAULT-001",), ("faults-openai-http-500",), rewritten(SwallowsHttpError)),
    Mutant("ends-at-malformed-event", "Ends the answer as if complete at a broken upstream event, losing the rest.",
           ("TEXT-001", "SDK-002"), ("faults-openai-malformed-event",), with_parts(Parts(chat_pipeline=EndsAtMalformedEvent))),
    Mutant("repaired-call-on-drop", "Repairs the half-received native call into JSON that parses and delivers it when the upstream drops mid-call.",
           ("CALLS-001", "SDK-002"), ("faults-openai-drop-mid-native-call",),
           with_parts(Parts(chat_pipeline=CompletesCallsOnFailure))),
    Mutant("held-text-lost-on-failure", "Drops the text it held back (a '<') when the upstream fails.",
           ("FAULT-006", "TEXT-001"), ("faults-openai-drop-mid-event",),
           with_parts(Parts(chat_pipeline=ForgetsHeldTextOnFailure))),
    # more breakage seen in the field, one rule each
    Mutant("name-split", "Sends a tool call's name over two deltas.",
           ("TOOL-002", "TOOL-003"), (NATIVE,), rewritten(NameSplit)),
    Mutant("placeholder-arguments", 'Opens every call with `"arguments": "{}"` before the real arguments.',
           ("TOOL-007",), (NATIVE,), rewritten(PlaceholderArguments)),
    Mutant("empty-arguments", 'Sends a call without arguments with `""` instead of `"{}"`.',
           ("TOOL-008",), ("plain-native-no-arguments",), rewritten(EmptyArguments)),
    Mutant("role-on-every-delta", "Repeats `role` on every delta.",
           ("CHUNK-006",), ("plain-text-multibyte",), rewritten(RoleOnEveryDelta)),
    Mutant("same-id-for-every-call", "Gives parallel calls the same id.",
           ("TOOL-005",), (PARALLEL,), rewritten(SameIdForEveryCall)),
    Mutant("no-finish-reason", "Never sends a finish reason.",
           ("CHUNK-007",), (NATIVE, "plain-text-multibyte"), rewritten(NoFinishChunk)),
    Mutant("done-with-trailing-space", "Terminates the stream with `data: [DONE] `.",
           ("SSE-005",), (NATIVE,), rewritten(DoneWithTrailingSpace)),
    Mutant("chunk-over-two-lines", "Writes each chunk's JSON over two `data:` lines.",
           ("SSE-003",), (NATIVE,), rewritten(ChunkOverTwoLines)),
    Mutant("error-without-done", "Ends the stream after an error chunk without `[DONE]`.",
           ("FAULT-004",), ("faults-openai-drop-between-events",), rewritten(ErrorWithoutDone), strict=True),
    Mutant("error-status-as-stream", "Answers an upstream 500 with 200 and an error chunk inside a stream.",
           ("FAULT-002",), ("faults-openai-http-500",), rewritten(ErrorStatusAsStream)),
    Mutant("xml-client-entities-escaped", "Writes `&lt;`, `&gt;` and `&amp;` into the XML values a Cline client reads.",
           ("VTC-003",), ("invoke-xml-multiline-value",),
           with_parts(Parts(chat_pipeline=partial(StreamPipeline, xml_writer=entity_escaped_xml))), profile=CLIENTS["xml-client"]),
    Mutant("arguments-as-object", "Gives a non-streaming answer's call arguments as a JSON object, not a string.",
           ("BODY-003",), (NATIVE,), rewritten(ArgumentsAsObject)),
    Mutant("length-becomes-stop", 'Reports an answer cut off by the token limit as `finish_reason: "stop"`.',
           ("CALLS-003",), ("plain-length-cutoff",), rewritten(LengthBecomesStop), strict=True),
    # framing
    Mutant("payload-line-without-data", "Writes the first chunk as a bare JSON line, without `data:`.",
           ("SSE-001",), (NATIVE,), rewritten(PayloadLineWithoutField)),
    Mutant("two-chunks-per-event", "Sends two chunks in one event, the blank line between them left out.",
           ("SSE-002", "CHUNK-001", "SDK-001"), (NATIVE,), rewritten(TwoChunksPerEvent)),
    Mutant("chunk-after-done", "Sends one more chunk after `data: [DONE]`.",
           ("SSE-006",), (NATIVE,), rewritten(ChunkAfterDone)),
    Mutant("invalid-utf8", "Writes a byte that is not UTF-8 into a chunk.",
           ("SSE-008", "SDK-001"), (NATIVE,), rewritten(InvalidUtf8)),
    Mutant("last-event-unterminated", "Ends the stream inside its last event: no blank line after it, no `[DONE]`.",
           ("SSE-009",), (NATIVE,), rewritten(LastChunkUnterminated)),
    # chunks
    Mutant("not-json-keep-alive", "Sends `data: keep-alive`, which is not JSON, before the first chunk.",
           ("CHUNK-001", "SDK-001"), (NATIVE,), rewritten(NotJsonKeepAlive)),
    Mutant("heartbeat-without-choices", "Sends a heartbeat chunk without `choices`.",
           ("CHUNK-002", "SDK-001"), (NATIVE,), rewritten(HeartbeatWithoutChoices)),
    Mutant("empty-tool-calls-on-text", "Adds `tool_calls: []` to every text delta.",
           ("CHUNK-003",), ("plain-text-multibyte",), rewritten(EmptyToolCallsOnText), strict=True),
    Mutant("empty-role", 'Sends `role: ""`.', ("CHUNK-005",), (NATIVE,), rewritten(EmptyRole)),
    Mutant("chunk-after-finish", "Sends one more (empty) chunk for a choice after its finish chunk.",
           ("CHUNK-009",), (NATIVE,), rewritten(EmptyChunkAfterFinish), strict=True),
    Mutant("role-on-second-chunk", "Sends the role on the second chunk of the stream, not the first.",
           ("CHUNK-010",), (NATIVE,), rewritten(RoleOnSecondChunk), strict=True),
    Mutant("no-role", "Never sends `role` in a stream.", ("CHUNK-012",), (NATIVE,), rewritten(NoRole), strict=True),
    Mutant("stop-then-tool-calls", 'Sends `finish_reason: "stop"`, then a second finish chunk with "tool_calls".',
           ("CHUNK-011",), (NATIVE,), rewritten(StopThenToolCalls)),
    Mutant("unasked-usage", "Sends a usage chunk though the client did not ask for one.",
           ("USAGE-002",), (NATIVE,), rewritten(UnaskedUsage), strict=True),
    Mutant("connection-dropped", "Breaks the connection before the stream ends.",
           ("HTTP-001",), (NATIVE,), rewritten(DropsConnectionAtTheEnd)),
    Mutant("text-dropped", "Sends no text at all.", ("TEXT-002",), ("features-loop-guard",), rewritten(DropsText)),
    # whole answers and status
    Mutant("whole-answer-as-text", "Gives a whole answer the Content-Type `text/plain`.",
           ("HTTP-004",), (NOT_STREAMED,), rewritten(WholeAnswerAsText), strict=True),
    Mutant("whole-answer-for-stream", "Answers a streaming request with one JSON body.",
           ("HTTP-005",), (NATIVE,), rewritten(WholeAnswerForStream)),
    Mutant("whole-answer-with-delta", "Writes a whole answer's message as a `delta`, as in a chunk.",
           ("BODY-001",), (NOT_STREAMED,), rewritten(DeltaInWholeAnswer)),
    Mutant("whole-answer-without-created", "Leaves `created` out of a whole answer.",
           ("BODY-002",), (NOT_STREAMED,), rewritten(CompletionWithoutCreated), strict=True),
    Mutant("server-error-for-text", "Answers a plain question with status 500.",
           ("HTTP-003",), (NOT_STREAMED,), rewritten(ServerErrorForText)),
    # errors and faults
    Mutant("string-error-in-stream", 'Reports an upstream failure inside the stream as `{"error": "a string"}`.',
           ("ERR-001",), ("faults-openai-drop-between-events",), rewritten(StringErrorInStream)),
    Mutant("detail-error-body", 'Passes an upstream error status on with a `{"detail": …}` body.',
           ("ERR-002", "FAULT-003"), ("faults-openai-http-500",), rewritten(DetailErrorBody), strict=True),
    Mutant("html-error-page", "Answers an upstream error with an HTML 502 page.",
           ("FAULT-003",), ("faults-openai-http-500",), rewritten(HtmlErrorPage)),
    Mutant("retry-after-dropped", "Drops the `Retry-After` header of an upstream 429.",
           ("FAULT-005",), ("faults-openai-http-429-retry-after",), rewritten(DropsRetryAfter), strict=True),
    Mutant("slow-on-upstream-error", "Waits six seconds before passing an upstream error on.",
           ("HTTP-006",), ("faults-openai-http-500",), rewritten(SlowOnUpstreamError), timeout=9.0),
    Mutant("stops-serving-after-a-failure", "Answers 503 to every request once its upstream has failed.",
           ("FAULT-007",), ("faults-openai-http-500",), stops_serving_after_a_failure),
    # what reaches the backend
    Mutant("tool-results-cut", "Cuts the tool results it forwards upstream to ten characters.",
           ("UP-001",), ("features-tool-results-forwarded",), rewritten(ToolResultsCut), strict=True),
    Mutant("asks-upstream-twice", "Sends every request upstream twice.",
           ("UP-002",), ("features-tool-results-forwarded",), rewritten(AsksUpstreamTwice)),
)
