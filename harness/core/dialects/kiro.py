"""Kiro (CodeWhisperer / Amazon Q) ``generateAssistantResponse``: a JSON
``conversationState`` in, AWS event-stream frames out (``harness.core.eventstream``).

A native call arrives as ``toolUseEvent`` messages (``toolUseId``, ``name``, an ``input``
fragment each, then ``stop: true``), one call after another as Anthropic ``tool_use``
blocks do, so a backend script writes it as the same one-call-whole frame. The API has
no system role, no ``tool_choice`` and no non-streamed answer. Errors are AWS JSON
(``{"__type", "message"}``). The wire, as the open gateways read and write it:
https://github.com/jwadow/kiro-gateway (``kiro/converters_core.py``, ``kiro/parsers.py``),
https://github.com/hank9999/kiro.rs (``src/kiro/model``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.dialects.anthropic import ToolUseCodec
from harness.core.dialects.base import ToolChoice, WireDialect
from harness.core.dialects.frames import EventFrame, Frame
from harness.core.dialects.request import (
    ABSENT, Conversation, NeutralRequest, Tool, ToolCall, ToolResult, arguments, items, mapping, string, texts,
)

TARGET = "AmazonCodeWhispererStreamingService.GenerateAssistantResponse"  # X-Amz-Target of a POST to /


class KiroCalls(ToolUseCodec):
    """Anthropic-like whole calls, and also the ``toolUseEvent`` events a script writes as they
    come (a cut input, a late ``toolUseId``): their ``input`` fragments, joined per call. An
    event continues the open call unless it names another id; ``stop`` closes the call."""

    def arguments(self, frames: Sequence[Frame]) -> tuple[str, ...]:
        joined: list[list[str]] = []
        open_id: str | None = None
        is_open = False
        for frame in frames:
            payload = frame.payload if isinstance(frame, EventFrame) and frame.event == "toolUseEvent" else None
            if not isinstance(payload, Mapping):
                continue
            uid = payload.get("toolUseId") if isinstance(payload.get("toolUseId"), str) else None
            if not is_open or (uid is not None and open_id is not None and uid != open_id):
                joined.append([])
                open_id, is_open = None, True
            open_id = open_id or uid
            part = payload.get("input")
            joined[-1].append(part if isinstance(part, str) else "")
            if payload.get("stop") is True:
                is_open = False
        return (*super().arguments(frames), *("".join(parts) for parts in joined))


class KiroErrors:
    """AWS JSON errors: ``{"__type": "...#ThrottlingException", "message"}``."""

    def write(self, message: str, type: str) -> dict[str, Any]:
        return {"__type": f"com.amazon.aws.codewhisperer#{type}", "message": message}

    def read(self, body: Any) -> str | None:
        if not (isinstance(body, Mapping) and isinstance(body.get("__type"), str)):
            return None
        message = body.get("message")
        return message if isinstance(message, str) else None


def _message(entry: Mapping[str, Any], conversation: Conversation) -> None:
    """One ``userInputMessage`` or ``assistantResponseMessage`` into the conversation."""
    user = mapping(entry.get("userInputMessage"))
    if user:
        context = mapping(user.get("userInputMessageContext"))
        results = [ToolResult(string(r.get("toolUseId")), texts(r.get("content")))
                   for r in items(context.get("toolResults"))]
        conversation.add("user", texts(user.get("content")), results=results)
    said = mapping(entry.get("assistantResponseMessage"))
    if said:
        calls = [ToolCall(string(u.get("toolUseId")), name, arguments(u.get("input")))
                 for u in items(said.get("toolUses")) if isinstance(name := u.get("name"), str)]
        conversation.add("assistant", texts(said.get("content")), calls)


class KiroRequests:
    """A ``generateAssistantResponse`` body. Read (``read``): ``conversationState.history``
    then ``currentMessage``, each a ``userInputMessage`` (``content``, with tool results in
    ``userInputMessageContext.toolResults[{toolUseId, content[{text}], status}]``) or an
    ``assistantResponseMessage`` (``content``, ``toolUses[{toolUseId, name, input}]``); the
    tools are the current message's ``userInputMessageContext.tools[].toolSpecification
    {name, description, inputSchema.json}``. No system text and no tool choice exist on
    the wire: a gateway carries system text inside a user message."""

    user_id_path: tuple[str, ...] = ("conversationState", "conversationId")
    needs_max_tokens = False
    tool_form = "{toolSpecification: {name, description, inputSchema: {json}}}"

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        return {"toolSpecification": {"name": name, "description": description or name,
                                      "inputSchema": {"json": dict(schema)}}}

    def tool_ok(self, tool: Mapping[str, Any]) -> bool:
        return isinstance(mapping(tool.get("toolSpecification")).get("name"), str)

    def tool_choice(self, kind: ToolChoice, name: str | None = None) -> Any:
        return None  # the API has none

    def read(self, body: Any) -> NeutralRequest:
        state = mapping(mapping(body).get("conversationState"))
        conversation = Conversation()
        for entry in items(state.get("history")):
            _message(entry, conversation)
        current = mapping(state.get("currentMessage"))
        _message(current, conversation)
        context = mapping(mapping(current.get("userInputMessage")).get("userInputMessageContext"))
        tools = tuple(
            Tool(name, schema if isinstance(schema := mapping(spec.get("inputSchema")).get("json"), Mapping) else None,
                 string(spec.get("description")))
            for spec in (mapping(t.get("toolSpecification")) for t in items(context.get("tools")))
            if isinstance(name := spec.get("name"), str)
        )
        return NeutralRequest((), tuple(conversation.turns), tools, ABSENT, True)


KIRO = WireDialect(
    name="kiro",
    title="Kiro event stream",
    endpoint="/generateAssistantResponse",
    default_finish="end_turn",
    # The stop reasons a ``metadataEvent`` may carry; without one a gateway infers the end.
    finish_names={"end_turn": "end", "tool_use": "tool", "max_tokens": "length"},
    error_types={400: "ValidationException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
                 429: "ThrottlingException", 500: "InternalServerException", 503: "ServiceUnavailableException"},
    client_error_type="ValidationException",
    server_error_type="InternalServerException",
    calls=KiroCalls("Kiro"),
    errors=KiroErrors(),
    requests=KiroRequests(),
    finish_field="stopReason",
    stream_end="metadataEvent",
    answer_name="event stream",
    short_name="Kiro",
    usage_names={"input": "inputTokens", "output": "outputTokens"},
    finish_aliases={"stop-sequence": "end_turn"},
    request_id_header="x-amzn-requestid",
    call_id_prefix="tooluse_",
    root_target=TARGET,
    streams_always=True,
    media_type="application/vnd.amazon.eventstream",
    system_role=False,
)
