"""Ollama's native chat API (``POST /api/chat``): JSON in, NDJSON out (one JSON object a
line, ``application/x-ndjson``), or one JSON object when the request says ``stream: false``.

A native call arrives whole in one chunk, ``message.tool_calls[{id?, function{index, name,
arguments}}]`` with ``arguments`` a JSON *object*, in a chunk that is not the last; the last
chunk (``done: true``) carries ``done_reason`` (``stop`` even after calls, or ``length``) and
the counters (``total_duration``, ``prompt_eval_count``, ``eval_count`` ...). History sends an
assistant's calls back with ``arguments`` objects, and a tool's result as ``role: "tool"``
with ``tool_name``. There is no ``tool_choice``. Errors are ``{"error": "message"}``, also as
one line of a stream that already answered 200. Facts:
https://github.com/ollama/ollama/blob/main/docs/api.md (``/api/chat``, "Chat request
(Streaming with tools)", "With history, with tools"), ``api/types.go`` (``ToolCall``,
``ToolCallFunction``, ``ChatResponse``), ``server/routes.go`` (``ChatHandler``,
``streamResponse``, ``writeChatResponse``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.dialects.anthropic import ToolUseCodec
from harness.core.dialects.base import NativeCall, NotPortable, ToolChoice, WireDialect
from harness.core.dialects.frames import Frame
from harness.core.dialects.openai import chat_tool
from harness.core.dialects.request import (
    ABSENT,
    Conversation,
    NeutralRequest,
    Tool,
    ToolCall,
    ToolResult,
    arguments,
    items,
    mapping,
    string,
    texts,
)

ENDPOINT = "/api/chat"
MEDIA_TYPE = "application/x-ndjson"


def call_arguments(call: NativeCall) -> dict[str, Any]:
    """A call's fragments as the object Ollama sends; ``NotPortable`` when they are not one
    (Ollama parses a call before it sends it: it never streams a broken or partial one)."""
    text = "".join(call.fragments)
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        raise NotPortable(f"call {call.name!r} has arguments that are not JSON, which Ollama never sends") from None
    if not isinstance(value, dict):
        raise NotPortable(f"call {call.name!r} has arguments that are not a JSON object, which Ollama never sends")
    return value


class OllamaCalls(ToolUseCodec):
    """Each call one ``tool_use`` frame, written whole in one chunk (its fragments joined and
    parsed: Ollama's arguments are an object)."""

    def write(self, calls: Sequence[tuple[int, NativeCall]]) -> list[Frame]:
        for _, call in calls:
            call_arguments(call)
        return super().write(calls)


class OllamaErrors:
    """``{"error": "message"}`` (``server/routes.go``: ``gin.H{"error": ...}``)."""

    def write(self, message: str, type: str) -> dict[str, Any]:
        return {"error": message}

    def read(self, body: Any) -> str | None:
        if not isinstance(body, Mapping) or len(body) != 1:
            return None
        message = body.get("error")
        return message if isinstance(message, str) else None


class OllamaRequests:
    """An ``/api/chat`` body. Read (``read``): ``system`` messages are the system text; an
    assistant's ``tool_calls[{function{name, arguments}}]`` its calls (``arguments`` an
    object); a ``tool`` message is the result of the call its ``tool_call_id`` names, or else
    of the first unanswered call of its ``tool_name`` (as Ollama's docs name it); tools are ``{type: function, function}`` as in
    Chat Completions. No tool choice exists on the wire."""

    user_id_path: tuple[str, ...] = ("user",)  # the API has none; no client speaks it
    needs_max_tokens = False
    tool_form = "{type: function, function: {name, parameters}}"

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        return chat_tool(name, schema, description)

    def tool_ok(self, tool: Mapping[str, Any]) -> bool:
        return isinstance(mapping(tool.get("function")).get("name"), str)

    def tool_choice(self, kind: ToolChoice, name: str | None = None) -> Any:
        return None  # the API has none

    def read(self, body: Any) -> NeutralRequest:
        body = mapping(body)
        system: list[str] = []
        conversation = Conversation()
        waiting: list[ToolCall] = []  # calls not answered yet, for a result named only by its tool
        for message in items(body.get("messages")):
            role, content = message.get("role"), message.get("content")
            if role == "system":
                system.extend(texts(content))
            elif role == "assistant":
                calls = [ToolCall(string(call.get("id")), name, arguments(fn.get("arguments")))
                         for call in items(message.get("tool_calls")) for fn in (mapping(call.get("function")),)
                         if isinstance(name := fn.get("name"), str)]
                waiting.extend(calls)
                conversation.add("assistant", texts(content), calls)
            elif role == "tool":
                ident = string(message.get("tool_call_id"))
                answered = next((c for c in waiting if (c.id == ident if ident is not None
                                                        else c.name == message.get("tool_name"))), None)
                if answered is not None:
                    waiting.remove(answered)
                    ident = answered.id
                conversation.add("user", results=[ToolResult(ident, texts(content))])
            elif role == "user":
                conversation.add("user", texts(content))
        tools = tuple(
            Tool(name, fn.get("parameters") if isinstance(fn.get("parameters"), Mapping) else None,
                 string(fn.get("description")))
            for tool in items(body.get("tools")) for fn in (mapping(tool.get("function")),)
            if isinstance(name := fn.get("name"), str)
        )
        return NeutralRequest(tuple(system), tuple(conversation.turns), tools, ABSENT, body.get("stream") is not False)


OLLAMA = WireDialect(
    name="ollama",
    title="Ollama chat",
    endpoint=ENDPOINT,
    default_finish="stop",
    # ``done_reason``: Ollama says ``stop`` after calls too (llm/server.go ``DoneReason.String``).
    finish_names={"stop": "end", "length": "length"},
    error_types={400: "bad_request", 404: "not_found", 500: "internal_error"},
    client_error_type="bad_request",
    server_error_type="internal_error",
    calls=OllamaCalls("Ollama"),
    errors=OllamaErrors(),
    requests=OllamaRequests(),
    finish_field="done_reason",
    stream_end='the "done": true line',
    answer_name="chat response",
    short_name="Ollama",
    usage_names={"input": "prompt_eval_count", "output": "eval_count"},
    finish_aliases={"tool": "stop", "stop-sequence": "stop"},
    media_type=MEDIA_TYPE,
)
