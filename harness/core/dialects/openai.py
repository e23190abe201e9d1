"""OpenAI Chat Completions: native calls are ``tool_calls`` deltas, addressed by index."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects.base import (
    NativeCall, NotPortable, ToolChoice, WireDialect, joined_arguments, tool_declaration,
)
from harness.core.dialects.frames import Frame, ToolCallFrame, ToolUseFrame
from harness.core.dialects.request import (
    ABSENT, ChoiceIntent, Conversation, NeutralRequest, Tool, ToolCall, ToolResult, arguments, items, mapping,
    stream_flag, string, texts, tool_name,
)


@dataclass(slots=True)
class _Gathering:
    index: int
    name: str = ""
    id: str | None = None
    fragments: list[str] = field(default_factory=list)
    delays: list[float | None] = field(default_factory=list)
    frames: int = 0

    def add(self, frame: ToolCallFrame) -> None:
        if not self.frames:
            self.delays.append(frame.delay_ms)
        self.frames += 1
        self.name += frame.name or ""
        if self.id is None:
            self.id = frame.id
        if frame.arguments:
            self.fragments.append(frame.arguments)
            self.delays.append(frame.delay_ms if self.frames > 1 else None)

    def call(self) -> NativeCall:
        return NativeCall(self.name, self.id, tuple(self.fragments), tuple(self.delays), self.frames)


class ToolCallCodec:
    """Each call: a first delta with id, type and name, then one delta per argument fragment."""

    frame_key = "tool_call"

    def write(self, calls: Sequence[tuple[int, NativeCall]]) -> list[Frame]:
        frames: list[Frame] = []
        for index, call in calls:
            delays = [*call.delays, *[None] * (len(call.fragments) + 1 - len(call.delays))]
            frames.append(ToolCallFrame(index, call.id, "function", call.name, "", delay_ms=delays[0]))
            frames.extend(
                ToolCallFrame(index, arguments=fragment, delay_ms=delays[i + 1])
                for i, fragment in enumerate(call.fragments)
            )
        return frames

    def whole(self, index: int, call: NativeCall) -> Frame:
        return ToolCallFrame(index, call.id, "function", call.name, "".join(call.fragments))

    def read(self, frames: Sequence[Frame]) -> list[Frame | NativeCall]:
        out: list[Frame | NativeCall] = []
        done: set[int] = set()
        current: _Gathering | None = None
        for frame in frames:
            if isinstance(frame, ToolUseFrame):
                raise NotPortable("a tool_use frame in an OpenAI backend")
            if isinstance(frame, ToolCallFrame) and current is not None and current.index == frame.index:
                current.add(frame)
                continue
            if current is not None:
                out.append(current.call())
                done.add(current.index)
                current = None
            if not isinstance(frame, ToolCallFrame):
                out.append(frame)
                continue
            if frame.index in done:
                raise NotPortable(f"native call {frame.index} resumes after another part of the answer")
            current = _Gathering(frame.index)
            current.add(frame)
        if current is not None:
            out.append(current.call())
        return out

    def arguments(self, frames: Sequence[Frame]) -> tuple[str, ...]:
        return joined_arguments(self.read(frames))


class OpenAIErrors:
    """``{"error": {"message", "type", "param", "code"}}``."""

    def write(self, message: str, type: str) -> dict[str, Any]:
        return {"error": {"message": message, "type": type, "param": None, "code": None}}

    def read(self, body: Any) -> str | None:
        error = body.get("error") if isinstance(body, Mapping) else None
        message = error.get("message") if isinstance(error, Mapping) else None
        return message if isinstance(message, str) and "type" not in body else None


def chat_tool(name: str, schema: Mapping[str, Any], description: str | None) -> dict[str, Any]:
    """A Chat Completions tool, ``{type: function, function: {name, description?, parameters}}``
    (Ollama's ``/api/chat`` declares its tools so too)."""
    return {"type": "function", "function": tool_declaration(name, schema, description)}


_CHOICES: Mapping[str, ChoiceIntent] = {"auto": ChoiceIntent("auto"), "none": ChoiceIntent("none"),
                                      "required": ChoiceIntent("required")}


def chat_tool_choice(choice: Any) -> ChoiceIntent:
    """``"auto"``, ``"none"``, ``"required"``, or ``{"type": "function", "function": {"name"}}``."""
    if choice is None:
        return ABSENT
    if isinstance(choice, str):
        return _CHOICES.get(choice, ChoiceIntent("other"))
    name = mapping(mapping(choice).get("function")).get("name")
    if mapping(choice).get("type") == "function" and isinstance(name, str):
        return ChoiceIntent("named", name)
    return ChoiceIntent("other")


class ChatRequests:
    """A Chat Completions request: ``user``; tools wrapped in ``{type: function, function}``.

    Read (``read``): ``system`` and ``developer`` messages are the system text; an assistant
    message's ``tool_calls`` its calls (``function.arguments`` a JSON string); a ``tool``
    message the result of its ``tool_call_id``."""

    user_id_path: tuple[str, ...] = ("user",)
    needs_max_tokens = False
    tool_form = "{type: function, function: {name, parameters}}"

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        return chat_tool(name, schema, description)

    def tool_ok(self, tool: Mapping[str, Any]) -> bool:
        return tool_name(tool) is not None and tool.get("type") == "function"

    def tool_choice(self, kind: ToolChoice, name: str | None = None) -> Any:
        if kind == "one":
            return self.named_choice(name)
        return "auto" if kind == "auto" else "required"

    def named_choice(self, name: str | None) -> Any:
        """The ``tool_choice`` that names one tool."""
        return {"type": "function", "function": {"name": name}}

    def read(self, body: Any) -> NeutralRequest:
        body = mapping(body)
        system: list[str] = []
        conversation = Conversation()
        for message in items(body.get("messages")):
            role, content = message.get("role"), message.get("content")
            if role in ("system", "developer"):
                system.extend(texts(content))
            elif role == "assistant":
                calls = [ToolCall(string(call.get("id")), name, arguments(fn.get("arguments")))
                         for call in items(message.get("tool_calls")) for fn in (mapping(call.get("function")),)
                         if isinstance(name := fn.get("name"), str)]
                conversation.add("assistant", texts(content), calls)
            elif role == "tool":
                conversation.add("user", results=[ToolResult(string(message.get("tool_call_id")), texts(content))])
            elif role == "user":
                conversation.add("user", texts(content))
        tools = tuple(
            Tool(name, fn.get("parameters") if isinstance(fn.get("parameters"), Mapping) else None,
                 string(fn.get("description")))
            for tool in items(body.get("tools")) if tool.get("type", "function") == "function"
            for fn in (mapping(tool.get("function")),) if isinstance(name := fn.get("name"), str)
        )
        choice = chat_tool_choice(body.get("tool_choice"))
        return NeutralRequest(tuple(system), tuple(conversation.turns), tools, choice, stream_flag(body))



OPENAI = WireDialect(
    name="openai",
    title="OpenAI Chat Completions",
    endpoint="/chat/completions",
    default_finish="stop",
    finish_names={"stop": "end", "tool_calls": "tool", "length": "length"},
    error_types={401: "authentication_error", 403: "permission_error", 429: "rate_limit_error"},
    client_error_type="invalid_request_error",
    server_error_type="server_error",
    # openai-python 3.57.0 (``_make_status_error``): every 5xx is InternalServerError, and retried.
    sdk_errors={400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError", 429: "RateLimitError"},
    sdk_server_error="InternalServerError",
    calls=ToolCallCodec(),
    errors=OpenAIErrors(),
    requests=ChatRequests(),
    finish_field="finish_reason",
    stream_end="'data: [DONE]'",
    answer_name="chat.completion",
    short_name="chat-completions",
    usage_names={"input": "prompt_tokens", "output": "completion_tokens"},
    finish_aliases={"stop-sequence": "stop"},
    sampling=frozenset({"temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop",
                        "presence_penalty", "frequency_penalty", "logit_bias", "n"}),
)
