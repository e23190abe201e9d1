"""Anthropic Messages: a native call is one ``tool_use`` content block."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.dialects.base import (
    NativeCall, NotPortable, ToolChoice, WireDialect, joined_arguments, tool_declaration,
)
from harness.core.dialects.frames import Frame, ToolCallFrame, ToolUseFrame
from harness.core.dialects.request import (
    ABSENT, ChoiceIntent, Conversation, NeutralRequest, Role, Tool, ToolCall, ToolResult, arguments, items, mapping,
    stream_flag, string, texts, tool_name,
)


class ToolUseCodec:
    """Each call: one tool_use frame whose input arrives as the call's fragments: a call
    that is one item of its own (an Anthropic ``tool_use`` block, a Responses
    ``function_call`` item), never interleaved with another."""

    frame_key = "tool_use"

    def __init__(self, title: str = "Anthropic") -> None:
        self.title = title

    def write(self, calls: Sequence[tuple[int, NativeCall]]) -> list[Frame]:
        return [ToolUseFrame(call.name, call.id, call.fragments, call.delays[0] if call.delays else None)
                for _, call in calls]

    def whole(self, index: int, call: NativeCall) -> Frame:
        return ToolUseFrame(call.name, call.id, call.fragments)

    def read(self, frames: Sequence[Frame]) -> list[Frame | NativeCall]:
        out: list[Frame | NativeCall] = []
        for frame in frames:
            if isinstance(frame, ToolCallFrame):
                raise NotPortable(f"a tool_call frame in an {self.title} backend")
            if isinstance(frame, ToolUseFrame):
                out.append(NativeCall(frame.name, frame.id, frame.input_json, (frame.delay_ms,), 1))
            else:
                out.append(frame)
        return out

    def arguments(self, frames: Sequence[Frame]) -> tuple[str, ...]:
        return joined_arguments(self.read(frames))


class AnthropicErrors:
    """``{"type": "error", "error": {"type", "message"}}``."""

    def write(self, message: str, type: str) -> dict[str, Any]:
        return {"type": "error", "error": {"type": type, "message": message}}

    def read(self, body: Any) -> str | None:
        error = body.get("error") if isinstance(body, Mapping) and body.get("type") == "error" else None
        message = error.get("message") if isinstance(error, Mapping) else None
        return message if isinstance(message, str) else None


_ROLES: Mapping[str, Role] = {"user": "user", "assistant": "assistant"}
_INTENTS: Mapping[str, ChoiceIntent] = {"auto": ChoiceIntent("auto"), "any": ChoiceIntent("required"),
                                      "none": ChoiceIntent("none")}


class MessagesRequests:
    """A Messages request: ``metadata.user_id``, ``max_tokens`` required, ``{name, input_schema}`` tools.

    Read (``read``): ``system`` a string or text blocks, and so is a ``system`` message inside
    ``messages`` (system text too, after the top-level one); a message's content a string or
    blocks, ``tool_use`` blocks an assistant's calls (``input`` an object) and ``tool_result``
    blocks the results of their ``tool_use_id`` (content a string or blocks); server tools,
    which have a ``type`` of their own and no schema, are not function tools;
    ``tool_choice`` ``{"type": "auto" | "any" | "none" | "tool", "name"}``."""

    user_id_path: tuple[str, ...] = ("metadata", "user_id")
    needs_max_tokens = True
    tool_form = "{name, input_schema}"

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        return tool_declaration(name, schema, description, "input_schema")

    def tool_ok(self, tool: Mapping[str, Any]) -> bool:
        return tool_name(tool) is not None and ("input_schema" in tool or "function" not in tool)

    def tool_choice(self, kind: ToolChoice, name: str | None = None) -> Any:
        return {"type": "tool", "name": name} if kind == "one" else {"type": kind}

    def read(self, body: Any) -> NeutralRequest:
        body = mapping(body)
        conversation = Conversation()
        system = list(texts(body.get("system")))
        for message in items(body.get("messages")):
            role = _ROLES.get(str(message.get("role")))
            content = message.get("content")
            if message.get("role") == "system":  # a system message inside the conversation: system text too
                system.extend(texts(content))
                continue
            if role is None:
                continue
            blocks = items(content)
            calls = [ToolCall(string(b.get("id")), name, arguments(b.get("input")))
                     for b in blocks if b.get("type") == "tool_use" and isinstance(name := b.get("name"), str)]
            results = [ToolResult(string(b.get("tool_use_id")), texts(b.get("content")))
                       for b in blocks if b.get("type") == "tool_result"]
            said = texts(content) if isinstance(content, str) else texts([b for b in blocks if b.get("type") == "text"])
            conversation.add(role, said, calls, results)
        tools = tuple(
            Tool(name, schema if isinstance(schema := tool.get("input_schema"), Mapping) else None,
                 string(tool.get("description")))
            for tool in items(body.get("tools")) if tool.get("type", "custom") == "custom"
            if isinstance(name := tool.get("name"), str)
        )
        return NeutralRequest(tuple(system), tuple(conversation.turns), tools,
                              _tool_choice(body.get("tool_choice")), stream_flag(body))



def _tool_choice(choice: Any) -> ChoiceIntent:
    if choice is None:
        return ABSENT
    kind = mapping(choice).get("type")
    if kind == "tool" and isinstance(name := mapping(choice).get("name"), str):
        return ChoiceIntent("named", name)
    return _INTENTS.get(str(kind), ChoiceIntent("other"))



ANTHROPIC = WireDialect(
    name="anthropic",
    title="Anthropic Messages",
    endpoint="/messages",
    default_finish="end_turn",
    finish_names={"end_turn": "end", "tool_use": "tool", "max_tokens": "length", "stop_sequence": "stop-sequence"},
    error_types={
        400: "invalid_request_error",
        401: "authentication_error",
        402: "billing_error",
        403: "permission_error",
        404: "not_found_error",
        413: "request_too_large",
        429: "rate_limit_error",
        500: "api_error",
        504: "timeout_error",
        529: "overloaded_error",
    },
    client_error_type="invalid_request_error",
    server_error_type="api_error",
    # anthropic-sdk-python 2.14.0 (``_make_status_error``): 501, 503, 504 and 529 have classes of their own.
    sdk_errors={400: "BadRequestError", 401: "AuthenticationError", 402: "PaymentRequiredError",
                403: "PermissionDeniedError", 404: "NotFoundError", 408: "RequestTimeoutError", 409: "ConflictError",
                413: "ContentTooLargeError", 422: "UnprocessableEntityError", 429: "RateLimitError",
                501: "HTTPNotImplementedError", 503: "ServiceUnavailableError", 504: "GatewayTimeoutError",
                529: "OverloadedError"},
    sdk_server_error="InternalServerError",
    calls=ToolUseCodec(),
    errors=AnthropicErrors(),
    requests=MessagesRequests(),
    finish_field="stop_reason",
    stream_end="message_stop",
    answer_name="Messages",
    short_name="Messages",
    usage_names={"input": "input_tokens", "output": "output_tokens"},
    pings=True,
    request_id_header="request-id",
    call_id_prefix="toolu_",
    client_header="anthropic-version",
    splits_text=True,
    sampling=frozenset({"temperature", "top_p", "top_k", "max_tokens", "stop_sequences"}),
)
