"""Anthropic Messages mutants: each breaks one thing a Messages proxy gets wrong, and a
Messages proxy that is correct but different.

Wire mutants rewrite the reference proxy's Messages events (``event:`` name and JSON
data); behaviour mutants swap one piece of its ``/v1/messages`` path.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from mutants import base
from mutants.base import Mutant, Out, SSEEvent, WholeAnswerRewriter, failing_after, rewritten, wire, with_parts
from mutants.different import pieces
from mutants.openai import without_family
from reference_proxy.anthropic_stream import AnthropicStreamPipeline, _NativeCall, _TextBlock
from reference_proxy.parts import Parts
from reference_proxy.request_shaping import MessagesRequest, parse_messages_request


class EventRewriter(WholeAnswerRewriter):
    """A rewriter of Messages streams, event by event; a payload returned as a dict is
    sent with an ``event:`` line naming its type, as the API does. A whole answer
    (a ``message`` object) goes to ``on_answer``."""

    def on_event(self, event: SSEEvent) -> Iterable[SSEEvent]:
        payload = event.payload
        if payload is None:
            out: Out = (event,)
        else:
            out = self.on_error(payload) if payload.get("type") == "error" else self.on_payload(payload)
        return [SSEEvent.of(item, item.get("type")) if isinstance(item, Mapping) else item for item in out]

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (payload,)

    def on_error(self, payload: dict[str, Any]) -> Out:
        """An error event goes to ``on_payload`` too, unless a rewriter handles errors."""
        return self.on_payload(payload)

    def completed(self) -> Out:
        return (
            {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
             "usage": {"output_tokens": 0}},
            {"type": "message_stop"},
        )

    def is_answer(self, status: int, answer: dict[str, Any]) -> bool:
        return answer.get("type") == "message"


def block_kind(payload: Mapping[str, Any]) -> str | None:
    """The type of the block a ``content_block_start`` opens (None for other events)."""
    block = payload.get("content_block")
    return block.get("type") if payload.get("type") == "content_block_start" and isinstance(block, dict) else None


# --------------------------------------------------------------------------- wire


class NoEventLines(EventRewriter):
    """Sends every event as ``data:`` only, with no ``event:`` line."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (SSEEvent.of(payload),)


class TextBlockLeftOpen(EventRewriter):
    """Never closes a text block: the next block opens while it is still open."""

    def __init__(self) -> None:
        self.text_blocks: set[int] = set()

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if block_kind(payload) == "text":
            self.text_blocks.add(payload["index"])
        if payload.get("type") == "content_block_stop" and payload.get("index") in self.text_blocks:
            return ()
        return (payload,)


class BlockIndicesFromOne(EventRewriter):
    """Numbers content blocks from 1."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if isinstance(payload.get("index"), int) and payload.get("type", "").startswith("content_block"):
            payload["index"] += 1
        return (payload,)


class InputInBlockStart(EventRewriter):
    """Puts a tool_use block's whole input in its ``content_block_start`` and sends no
    ``input_json_delta``."""

    as_text = False  # the input as its JSON text instead of an object

    def __init__(self) -> None:
        self.start: dict[str, Any] | None = None
        self.parts: list[str] = []

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if block_kind(payload) == "tool_use":
            self.start, self.parts = payload, []
            return ()
        if self.start is not None and payload.get("type") == "content_block_delta":
            self.parts.append(payload["delta"].get("partial_json", ""))
            return ()
        if self.start is not None and payload.get("type") == "content_block_stop":
            start, self.start = self.start, None
            text = "".join(self.parts) or "{}"
            start["content_block"]["input"] = text if self.as_text else json.loads(text)
            return (start, payload)
        return (payload,)


class InputAsStringInBlockStart(InputInBlockStart):
    """Puts a tool_use block's whole input in its ``content_block_start`` as a string of JSON."""

    as_text = True


class PartialJsonCutShort(EventRewriter):
    """Drops the last character of every tool_use input (its closing brace)."""

    def __init__(self) -> None:
        self.last: dict[str, Any] | None = None

    def on_payload(self, payload: dict[str, Any]) -> Out:
        delta = payload.get("delta")
        if payload.get("type") == "content_block_delta" and isinstance(delta, dict) and "partial_json" in delta:
            held, self.last = self.last, payload
            return (held,) if held is not None else ()
        if self.last is not None and payload.get("type") == "content_block_stop":
            last, self.last = self.last, None
            last["delta"]["partial_json"] = last["delta"]["partial_json"][:-1]
            return (last, payload)
        return (payload,)


class EndTurnWithToolUse(EventRewriter):
    """Reports ``stop_reason: "end_turn"`` after tool_use blocks."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_delta" and payload["delta"].get("stop_reason") == "tool_use":
            payload["delta"]["stop_reason"] = "end_turn"
        return (payload,)


class ErrorAsDataOnly(EventRewriter):
    """Sends an error in a started stream without its ``event: error`` line."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (SSEEvent.of(payload),) if payload.get("type") == "error" else (payload,)


class ErrorInChatCompletionsShape(EventRewriter):
    """Sends a started stream's error as ``event: error`` with the Chat Completions error object for data
    (``{"error": {"message": …, "type": …}}``), as a translator does that relays its upstream's error."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        error = payload.get("error") if isinstance(payload.get("error"), dict) else {}
        return (SSEEvent.of({"error": {"message": error.get("message"), "type": "server_error"}}, "error"),)


class SharedToolUseId(EventRewriter):
    """Gives every tool_use block the same id."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if block_kind(payload) == "tool_use":
            payload["content_block"]["id"] = "toolu_01SameForEveryBlock"
        return (payload,)


class ToolUseIdsPerAnswer(EventRewriter):
    """Numbers the tool_use blocks of every answer from ``toolu_0``, so each request reuses the same ids."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if block_kind(payload) == "tool_use":
            payload["content_block"]["id"] = f"toolu_{payload['index']}"
        return (payload,)

    def on_answer(self, answer: dict[str, Any]) -> None:
        for i, block in enumerate(answer.get("content") or ()):
            if block.get("type") == "tool_use":
                block["id"] = f"toolu_{i}"


class NoMessageStop(EventRewriter):
    """Ends the stream after ``message_delta``, without ``message_stop``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return () if payload.get("type") == "message_stop" else (payload,)


class MessageStopTwice(EventRewriter):
    """Sends ``message_stop`` twice."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (payload, payload) if payload.get("type") == "message_stop" else (payload,)


class InputAsString(EventRewriter):
    """Gives a whole answer's tool_use ``input`` as a string of JSON."""

    def on_answer(self, answer: dict[str, Any]) -> None:
        for block in answer.get("content") or ():
            if block.get("type") == "tool_use":
                block["input"] = json.dumps(block["input"])


class HangsOnUpstreamFailure(base.HangsOnUpstreamFailure, EventRewriter):
    """Sends nothing more, and never ends the stream, once the upstream failed."""


class MessageStartTwice(EventRewriter):
    """Sends ``message_start`` twice, as a gateway does that splices a retried upstream stream onto the first."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (payload, payload) if payload.get("type") == "message_start" else (payload,)


class MinimalMessageStart(EventRewriter):
    """Leaves ``stop_reason`` and ``stop_sequence`` (null until the end) out of ``message_start``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_start":
            for key in ("stop_reason", "stop_sequence"):
                payload["message"].pop(key, None)
        return (payload,)


class NoUsageInMessageStart(EventRewriter):
    """Leaves ``usage`` out of ``message_start``: the SDK has no usage to update at ``message_delta``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_start":
            payload["message"].pop("usage", None)
        return (payload,)


class NoUsageInMessageDelta(EventRewriter):
    """Leaves ``usage`` out of ``message_delta``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_delta":
            payload.pop("usage", None)
        return (payload,)


class EmptyObjectKeepAlive(EventRewriter):
    """Sends a keep-alive after ``message_start`` whose data is ``{}``, with no ``type``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_start":
            return (payload, SSEEvent("{}", "ping"))
        return (payload,)


class KeepAliveNotJson(EventRewriter):
    """Sends a keep-alive after ``message_start`` as an event of its own name whose data is plain text, not
    the API's ``ping`` (the SDKs parse every named event but ``ping`` and ``error``)."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "message_start":
            return (payload, SSEEvent("keep-alive", "keepalive"))
        return (payload,)


class EventsNamedMessage(EventRewriter):
    """Names every event ``message``, the SSE default, whatever its ``type``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (SSEEvent.of(payload, "message"),)


class TextAlwaysIndexZero(EventRewriter):
    """Sends every ``text_delta`` with index 0, whatever block is open."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        delta = payload.get("delta")
        if payload.get("type") == "content_block_delta" and isinstance(delta, dict) and delta.get("type") == "text_delta":
            payload["index"] = 0
        return (payload,)


class NamespacedToolNames(EventRewriter):
    """Names every tool_use ``functions.<name>``: a namespace the client never declared."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if block_kind(payload) == "tool_use":
            payload["content_block"]["name"] = "functions." + payload["content_block"]["name"]
        return (payload,)

    def on_answer(self, answer: dict[str, Any]) -> None:
        for block in answer.get("content") or ():
            if block.get("type") == "tool_use":
                block["name"] = "functions." + block["name"]


class NoUsageInWholeMessage(EventRewriter):
    """Leaves ``usage`` out of a whole answer."""

    def on_answer(self, answer: dict[str, Any]) -> None:
        answer.pop("usage", None)


# --------------------------------------------------------------------------- wire: upstream faults


class SwallowsStreamError(base.SwallowsStreamError, EventRewriter):
    """Ends the message as if complete (``message_delta``, ``message_stop``) when the upstream failed."""


class CutsConnectionOnStreamError(base.CutsConnectionOnError, EventRewriter):
    """Cuts the connection when the upstream fails mid-answer, as claude-code-router 2.0.0 does."""


class ErrorWithStatus200(EventRewriter):
    """Answers an upstream error status with 200, the error body unchanged."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        return (200 if status >= 400 else status), content_type, body


class OpenAIShapedErrors(EventRewriter):
    """Answers a Messages client's errors in the chat-completions shape ``{"error": {"message", "type"}}``."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        if status < 400:
            return status, content_type, body
        error = json.loads(body).get("error") or {}
        shaped = {"error": {"message": error.get("message", "error"), "type": error.get("type", "api_error"),
                            "param": None, "code": None}}
        return status, content_type, json.dumps(shaped).encode()


# --------------------------------------------------------------------------- behaviour


def tool_choice_ignored(raw: bytes) -> tuple[MessagesRequest, dict[str, Any] | None]:
    """Reads the request and forwards it as it came: ``tool_choice`` reaches a backend that ignores it."""
    return parse_messages_request(raw), None


def rescuing_without(family: str) -> Any:
    return partial(AnthropicStreamPipeline, rescuer_factory=without_family(family))


class CompletesToolUseOnFailure(AnthropicStreamPipeline):
    """Repairs the native tool_use blocks it was assembling when the upstream fails into
    input that parses, and delivers them whole."""

    def fail(self, error: Mapping[str, Any]) -> str:
        out: list[str] = []
        for index, block in list(self._blocks.items()):
            if isinstance(block, _NativeCall):
                del self._blocks[index]
                block.parts = [base.closed_json("".join(block.parts))] if block.parts else block.parts
                self._native(block, out)
        return "".join(out) + super().fail(error)


class RelaysHalfToolUseOnFailure(AnthropicStreamPipeline):
    """Sends the input it had of a native tool_use, unclosed, before the ``event: error``
    when the upstream fails. The SDKs raise at the error; no client runs the block."""

    def fail(self, error: Mapping[str, Any]) -> str:
        out: list[str] = []
        for index, block in list(self._blocks.items()):
            if isinstance(block, _NativeCall) and block.name:
                del self._blocks[index]
                self._end_text(out)
                at = self._open({"type": "tool_use", "id": block.id, "name": block.name, "input": {}}, out)
                out.extend(self._delta(at, {"type": "input_json_delta", "partial_json": p}) for p in block.parts)
        return "".join(out) + super().fail(error)


def forget_held_text(pipeline: AnthropicStreamPipeline) -> None:
    """Drops the text its rescuers hold (a possible tag's start) when the upstream fails."""
    for index, block in list(pipeline._blocks.items()):
        if isinstance(block, _TextBlock):
            del pipeline._blocks[index]


ForgetsHeldTextOnFailure = failing_after(AnthropicStreamPipeline, forget_held_text)


# --------------------------------------------------------------------------- correct but different


class DifferentMessages(EventRewriter):
    """Differs from the reference only in ways Messages clients accept: other id formats,
    unknown fields, ``ping`` events between blocks, input and text in fragments of 1, 2
    and 3 characters (``different.pieces``), CRLF line endings, and network writes cut
    anywhere."""

    def __init__(self) -> None:
        self.events = 0

    def on_payload(self, payload: dict[str, Any]) -> Out:
        payload["x_gateway"] = {"seq": self.events}
        kind = payload.get("type")
        if kind == "message_start":
            payload["message"]["id"] = f"msg_gw_{uuid.uuid4().hex}"
            return (payload, {"type": "ping"})
        if block_kind(payload) == "tool_use":
            payload["content_block"]["id"] = f"call-{uuid.uuid4()}"
        if kind == "content_block_stop":
            return (payload, {"type": "ping"})
        delta = payload.get("delta")
        if kind == "content_block_delta" and isinstance(delta, dict):
            key = "text" if delta.get("type") == "text_delta" else "partial_json"
            text = delta.get(key, "")
            return [{**payload, "delta": {**delta, key: part}} for part in pieces(text)]
        return (payload,)

    def encode(self, event: SSEEvent) -> bytes:
        self.events += 1
        head = f"event: {event.event}\r\n" if event.event is not None else ""
        return wire(head + "".join(f"data: {line}\r\n" for line in event.data.split("\n")) + "\r\n")

    def writes(self, body: bytes) -> Iterable[bytes]:
        cut = len(body) // 3 + 1
        return [part for part in (body[:cut], body[cut:]) if part]

    def on_answer(self, answer: dict[str, Any]) -> None:
        answer["id"] = f"msg_gw_{uuid.uuid4().hex}"
        answer["x_gateway"] = {"region": "test"}
        for block in answer.get("content") or ():
            if block.get("type") == "tool_use":
                block["id"] = f"call-{uuid.uuid4()}"


# Correct, though unlike the reference: the half tool_use it sends before the error is never run.
RELAYS_HALF_TOOL_USE = Mutant(
    "anthropic-relays-half-tool-use-before-error",
    "Nothing: it sends the unfinished tool_use it had before the `event: error`, which the SDKs raise at.",
    (),
    ("faults-anthropic-drop-mid-native-call",),
    with_parts(Parts(messages_pipeline=RelaysHalfToolUseOnFailure)),
)

CORRECT_BUT_DIFFERENT_MESSAGES = Mutant(
    "correct-but-different-messages",
    "Nothing: its Messages answers differ from the reference only in ways clients accept.",
    (),
    (),
    rewritten(DifferentMessages),
)


# --------------------------------------------------------------------------- the catalogue

LEAK = "anthropic-leaked-invoke-split"
NATIVE = "anthropic-native-tool-use"
AROUND = "anthropic-text-around"
WHOLE = "anthropic-non-stream"
UPSTREAM_ERROR = "faults-anthropic-upstream-error-event"

MUTANTS: tuple[Mutant, ...] = (
    Mutant("anthropic-no-event-lines", "Sends Messages events without their `event:` lines.",
           ("AEV-001", "ASDK-002"), (NATIVE, AROUND), rewritten(NoEventLines)),
    Mutant("anthropic-text-block-left-open", "Opens the tool_use block while the text block is still open.",
           ("AEV-006",), (AROUND,), rewritten(TextBlockLeftOpen)),
    Mutant("anthropic-indices-from-one", "Numbers content blocks from 1.",
           ("AEV-005",), (NATIVE, AROUND), rewritten(BlockIndicesFromOne)),
    Mutant("anthropic-input-in-block-start", "Puts the whole tool input in `content_block_start`, with no `input_json_delta`.",
           ("AEV-012",), (NATIVE, LEAK), rewritten(InputInBlockStart), strict=True),
    Mutant("anthropic-input-as-string-in-block-start",
           "Puts the whole tool input in `content_block_start` as a string of JSON, with no `input_json_delta`.",
           ("AEV-011",), (NATIVE, LEAK), rewritten(InputAsStringInBlockStart)),
    Mutant("anthropic-partial-json-cut", "Cuts the closing brace off every tool input.",
           ("AEV-010", "CALLS-001"), (NATIVE, LEAK), rewritten(PartialJsonCutShort)),
    Mutant("anthropic-end-turn-with-tool-use", 'Reports `stop_reason: "end_turn"` after tool_use blocks.',
           ("ATOOL-003", "ATOOL-004"), (NATIVE, LEAK), rewritten(EndTurnWithToolUse), strict=True),
    Mutant("anthropic-shared-tool-use-id", "Gives every tool_use block the same id.",
           ("ATOOL-001",), ("anthropic-two-invokes",), rewritten(SharedToolUseId)),
    Mutant("anthropic-tool-use-ids-per-answer",
           "Numbers the tool_use blocks of every answer from `toolu_0`, so the ids repeat across requests.",
           ("TOOL-010",), (NATIVE,), rewritten(ToolUseIdsPerAnswer)),
    Mutant("anthropic-error-as-data-only", "Sends an error in a started stream without `event: error`.",
           ("AERR-001",), ("faults-anthropic-drop-between-events",), rewritten(ErrorAsDataOnly)),
    Mutant("anthropic-error-in-chat-completions-shape",
           "Sends a started stream's `event: error` with the Chat Completions error object for data.",
           ("AERR-003",), ("faults-anthropic-drop-between-events",), rewritten(ErrorInChatCompletionsShape),
           strict=True),
    Mutant("anthropic-no-message-stop", "Ends the stream without `message_stop`.",
           ("AEV-013",), (NATIVE,), rewritten(NoMessageStop)),
    Mutant("anthropic-message-stop-twice", "Sends `message_stop` twice.",
           ("AEV-009",), (NATIVE,), rewritten(MessageStopTwice), strict=True),
    Mutant("anthropic-input-as-string", "Gives a whole answer's tool_use input as a string of JSON.",
           ("ABODY-003",), ("anthropic-non-stream",), rewritten(InputAsString)),
    Mutant("anthropic-hangs-on-upstream-failure", "Never ends the client's stream when the upstream fails.",
           ("HTTP-002",), ("faults-anthropic-drop-between-events", UPSTREAM_ERROR),
           rewritten(HangsOnUpstreamFailure), timeout=2.0),
    Mutant("anthropic-invoke-rescue-off", "Does not rescue leaked invoke XML: it reaches the text blocks.",
           ("TEXT-003", "CALLS-001"), (LEAK, "anthropic-count-wrapper"),
           with_parts(Parts(messages_pipeline=rescuing_without("invoke-xml")))),
    Mutant("anthropic-tool-choice-ignored", "Forwards `tool_choice` to a backend that ignores it instead of emulating it.",
           ("UP-009",), ("anthropic-tool-choice-none", "anthropic-tool-choice-any", "anthropic-tool-choice-tool"),
           with_parts(Parts(parse_messages=tool_choice_ignored))),
    Mutant("anthropic-message-start-twice", "Sends `message_start` twice.",
           ("AEV-004",), (NATIVE,), rewritten(MessageStartTwice)),
    Mutant("anthropic-minimal-message-start", "Leaves `stop_reason` and `stop_sequence` out of `message_start`.",
           ("AEV-003",), (NATIVE,), rewritten(MinimalMessageStart), strict=True),
    Mutant("anthropic-no-usage-in-message-start", "Leaves `usage` out of `message_start`.",
           ("ASDK-001",), (NATIVE, AROUND), rewritten(NoUsageInMessageStart)),
    Mutant("anthropic-no-usage-in-message-delta", "Leaves `usage` out of `message_delta`.",
           ("AEV-008", "ASDK-001"), (NATIVE,), rewritten(NoUsageInMessageDelta)),
    Mutant("anthropic-empty-keep-alive", "Sends a keep-alive event whose data is `{}`, with no `type`.",
           ("AEV-015",), (NATIVE,), rewritten(EmptyObjectKeepAlive), strict=True),
    Mutant("anthropic-keep-alive-not-json", "Sends a keep-alive event of its own name whose data is plain text.",
           ("AEV-002", "ASDK-001"), (NATIVE,), rewritten(KeepAliveNotJson)),
    Mutant("anthropic-events-named-message", "Names every event `message`, whatever its `type`.",
           ("AEV-014",), (NATIVE,), rewritten(EventsNamedMessage), strict=True),
    Mutant("anthropic-text-index-zero", "Sends every `text_delta` with index 0, whatever block is open.",
           ("AEV-007",), (AROUND,), rewritten(TextAlwaysIndexZero)),
    Mutant("anthropic-namespaced-tool-names", "Names tool_use blocks `functions.<name>`, a tool the client never declared.",
           ("ATOOL-002", "CALLS-001"), (NATIVE, LEAK, WHOLE), rewritten(NamespacedToolNames)),
    Mutant("anthropic-whole-answer-without-usage", "Leaves `usage` out of a whole answer.",
           ("ABODY-002",), (WHOLE,), rewritten(NoUsageInWholeMessage), strict=True),
    # upstream faults
    Mutant("anthropic-swallows-stream-error", "Ends the message as if complete when the upstream fails mid-answer.",
           ("FAULT-001", "AEV-006"), (UPSTREAM_ERROR, "faults-anthropic-drop-between-events"),
           rewritten(SwallowsStreamError)),
    Mutant("anthropic-cuts-connection-on-upstream-failure", "Cuts the connection instead of sending `event: error` when the upstream fails mid-answer.",
           ("FAULT-008",), ("faults-anthropic-drop-between-events",), rewritten(CutsConnectionOnStreamError), strict=True),
    Mutant("anthropic-repaired-tool-use-on-drop", "Repairs the half-received native tool_use and delivers it when the upstream drops mid-input.",
           ("CALLS-001", "ASDK-002"), ("faults-anthropic-drop-mid-native-call",),
           with_parts(Parts(messages_pipeline=CompletesToolUseOnFailure))),
    Mutant("anthropic-held-text-lost-on-failure", "Drops the text it held back (a '<') when the upstream fails.",
           ("FAULT-006", "TEXT-001", "ASDK-002"), ("faults-anthropic-drop-mid-event",),
           with_parts(Parts(messages_pipeline=ForgetsHeldTextOnFailure))),
    Mutant("anthropic-error-with-status-200", "Answers an upstream error status with 200 and the error body.",
           ("FAULT-001", "ABODY-001", "HTTP-005"), ("faults-anthropic-http-500",), rewritten(ErrorWithStatus200)),
    Mutant("anthropic-openai-shaped-errors", "Gives Messages clients errors in the chat-completions shape.",
           ("AERR-002",), ("faults-anthropic-http-529-overloaded",), rewritten(OpenAIShapedErrors),
           strict=True),
)
