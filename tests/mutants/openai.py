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
from functools import partial
from typing import Any

from mutants.base import (
    DONE,
    ChunkRewriter,
    Mutant,
    SSEEvent,
    deltas,
    finish_reason,
    rebinding,
    rewritten,
    substituted,
    tool_calls,
)
from reference_proxy.pipeline import RescuerFactory, RescuerLike, StreamPipeline, _Choice
from reference_proxy.rescue import Event, Rescuer, Text, ToolSpec
from reference_proxy.rescue.families import FAMILIES
from reference_proxy.rescue.openers import Openers

Out = Iterable[dict[str, Any] | SSEEvent]

# --------------------------------------------------------------------------- wire: tool calls


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


class HangsOnUpstreamFailure(ChunkRewriter):
    """Waits for an upstream that is gone: sends nothing more, never ends the answer."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        self.hang = True
        return ()


class SwallowsStreamError(Envelope):
    """Ends the stream as if the answer were complete when the upstream broke off."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        return (self.finish("stop"),)


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


class ArgumentsAsObject(ChunkRewriter):
    """In a whole (non-streaming) answer, writes each call's arguments as a JSON object, not a string."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        answer = json.loads(body) if status == 200 else None
        if not isinstance(answer, dict):
            return status, content_type, body
        for choice in answer.get("choices") or ():
            for call in (choice.get("message") or {}).get("tool_calls") or ():
                call["function"]["arguments"] = json.loads(call["function"]["arguments"])
        return status, content_type, json.dumps(answer).encode()


class LengthBecomesStop(ChunkRewriter):
    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for choice in chunk.get("choices") or ():
            if choice.get("finish_reason") == "length":
                choice["finish_reason"] = "stop"
        return (chunk,)


# --------------------------------------------------------------------------- behaviour


class RescuerWithout(Rescuer):
    """The rescuer with one text format family switched off."""

    def __init__(self, family: str, tools: Sequence[ToolSpec], buffer_cap: int) -> None:
        super().__init__(tools, buffer_cap=buffer_cap)
        self._openers = Openers([f for f in FAMILIES if f.name != family])


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
    def factory(tools: Sequence[ToolSpec], buffer_cap: int) -> RescuerLike:
        return RescuerWithout(family, tools, buffer_cap)

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
    """Delivers the native calls it was buffering when the upstream fails, however far they got."""

    def _end_choice(self, choice: _Choice, out: list[str], *, complete_natives: bool) -> None:
        super()._end_choice(choice, out, complete_natives=True)


class ForgetsHeldTextOnFailure(StreamPipeline):
    """Drops the text its rescuers hold when the upstream fails."""

    def fail(self, error: Any) -> str:
        for choice in self._choices.values():
            choice.rescuer = None
        return super().fail(error)


def never_vtc(user_agent: str | None, patterns: Sequence[str]) -> bool:
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

MUTANTS: tuple[Mutant, ...] = (
    Mutant("whole-call-without-index", "Sends each tool call as one delta entry with no `index`.",
           ("TOOL-001", "SDK-001"), (NATIVE,), rewritten(WholeCallWithoutIndex)),
    Mutant("first-call-only", "Delivers only the first of parallel tool calls.",
           ("CALLS-001", "SDK-002"), (PARALLEL, "hermes-parallel"), rewritten(FirstCallOnly)),
    Mutant("hermes-rescue-off", "Does not know the Hermes `<tool_call>` format: its tags leak into the content.",
           ("TEXT-003", "TEXT-001"), ("hermes-single",), substituted(StreamPipeline=with_rescuer(without_family("hermes")))),
    Mutant("held-tag-lost-at-end", "Drops the text it held back as a possible tag when the stream ends.",
           ("TEXT-001",), ("faults-openai-unterminated-tool-call",),
           substituted(StreamPipeline=with_rescuer(ForgetsHeldTextAtEnd))),
    Mutant("stop-with-tool-calls", 'Sends `finish_reason: "stop"` after tool calls.',
           ("TOOL-009", "CALLS-002"), (NATIVE,), rewritten(StopWithToolCalls)),
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
           ("CALLS-001",), ("invoke-xml-native-duplicate",), substituted(StreamPipeline=NoDedup)),
    Mutant("text-after-finish", "Sends the last piece of text after the finish chunk.",
           ("CHUNK-008",), ("plain-text-multibyte",), rewritten(TextAfterFinish)),
    Mutant("usage-missing", "Leaves out the usage chunk the client asked for.",
           ("USAGE-001",), ("plain-include-usage",), rewritten(NoUsageChunk), strict=True),
    Mutant("vtc-gets-tool-calls", "Gives an XML-reading client (Cline) structured `tool_calls` instead of XML.",
           ("VTC-001", "VTC-002", "VTC-004"), ("cline-xml-backend-native", "hermes-single"),
           substituted(is_vtc_client=never_vtc), profile="vtc"),
    # upstream faults (issue 6)
    Mutant("hangs-on-upstream-failure", "Never ends the client's stream when the upstream connection drops.",
           ("HTTP-002",), ("faults-openai-drop-between-events",), rewritten(HangsOnUpstreamFailure), timeout=2.0),
    Mutant("swallows-stream-error", "Ends the stream as if complete when the upstream drops mid-answer.",
           ("FAULT-001",), ("faults-openai-drop-between-events",), rewritten(SwallowsStreamError)),
    Mutant("swallows-http-error", "Answers an upstream 500 with 200 and empty content.",
           ("FAULT-001",), ("faults-openai-http-500",), rewritten(SwallowsHttpError)),
    Mutant("half-call-on-drop", "Delivers the half-received native call when the upstream drops mid-call.",
           ("TOOL-006", "CALLS-001"), ("faults-openai-drop-mid-native-call",), substituted(StreamPipeline=CompletesCallsOnFailure)),
    Mutant("held-text-lost-on-failure", "Drops the text it held back (a '<') when the upstream fails.",
           ("FAULT-006", "TEXT-001"), ("faults-openai-drop-mid-event",), substituted(StreamPipeline=ForgetsHeldTextOnFailure)),
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
           ("FAULT-004",), ("faults-openai-drop-between-events",), rewritten(ErrorWithoutDone)),
    Mutant("error-status-as-stream", "Answers an upstream 500 with 200 and an error chunk inside a stream.",
           ("FAULT-002",), ("faults-openai-http-500",), rewritten(ErrorStatusAsStream)),
    Mutant("vtc-entities-escaped", "Writes `&lt;`, `&gt;` and `&amp;` into the XML values a Cline client reads.",
           ("VTC-003",), ("invoke-xml-multiline-value",),
           substituted(StreamPipeline=rebinding(StreamPipeline, call_to_xml=entity_escaped_xml)), profile="vtc"),
    Mutant("arguments-as-object", "Gives a non-streaming answer's call arguments as a JSON object, not a string.",
           ("BODY-003",), (NATIVE,), rewritten(ArgumentsAsObject)),
    Mutant("length-becomes-stop", 'Reports an answer cut off by the token limit as `finish_reason: "stop"`.',
           ("CALLS-002",), ("plain-length-cutoff",), rewritten(LengthBecomesStop)),
)
