"""OpenAI Responses (``POST /responses``): a native call is one ``function_call`` output
item whose arguments stream as ``response.function_call_arguments.delta`` events.

A call is an item of its own, as an Anthropic ``tool_use`` block is, so a backend
script writes it as the same one-call-whole frame; errors are OpenAI's shape. The
API has no finish reason: an answer is ``completed`` (with calls or without) or
``incomplete`` for ``max_output_tokens``; a script names which with the words below.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.core.dialects.anthropic import ToolUseCodec
from harness.core.dialects.base import WireDialect, tool_declaration
from harness.core.dialects.openai import OPENAI, ChatRequests, chat_tool_choice
from harness.core.dialects.request import (
    ChoiceIntent, Conversation, NeutralRequest, Tool, ToolCall, ToolResult, arguments, items, mapping, stream_flag,
    string, texts,
)

# The finish words of a Responses backend script, and the status each ends with on the wire.
STATUS = {"completed": "completed", "function_calls": "completed", "max_output_tokens": "incomplete"}

class ResponsesRequests(ChatRequests):
    """A Responses request: OpenAI's ``user`` and function tools, as in Chat Completions, but
    a tool is ``{type: function, name, parameters}`` and so is a named tool choice.

    Read (``read``): ``instructions`` and ``system``/``developer`` messages are the system
    text; ``input`` a string (one user turn) or items: messages (content a string or
    ``input_text``/``output_text`` parts), ``function_call`` items (an assistant's calls,
    ``arguments`` a JSON string, linked by ``call_id``) and ``function_call_output`` items
    (their results); a named tool is ``{"type": "function", "name"}``."""

    tool_form = "{type: function, name, parameters}"

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        return tool_declaration(name, schema, description, type="function")

    def named_choice(self, name: str | None) -> Any:
        return {"type": "function", "name": name}

    def read(self, body: Any) -> NeutralRequest:
        body = mapping(body)
        system = list(texts(body.get("instructions")))
        conversation = Conversation()
        given = body.get("input")
        if isinstance(given, str):
            conversation.add("user", texts(given))
        for item in items(given):
            kind = item.get("type", "message")
            role = item.get("role")
            if kind == "message" and role in ("system", "developer"):
                system.extend(texts(item.get("content")))
            elif kind == "message" and role in ("user", "assistant"):
                conversation.add("user" if role == "user" else "assistant", texts(item.get("content")))
            elif kind == "function_call" and isinstance(name := item.get("name"), str):
                call = ToolCall(string(item.get("call_id")), name, arguments(item.get("arguments")))
                conversation.add("assistant", calls=[call])
            elif kind == "custom_tool_call" and isinstance(name := item.get("name"), str):
                # A custom (free-form) tool's call: its input is text, not JSON (Codex CLI's code mode sends these).
                conversation.add("assistant", calls=[ToolCall(string(item.get("call_id")), name, item.get("input"))])
            elif kind in ("function_call_output", "custom_tool_call_output"):
                conversation.add("user", results=[ToolResult(string(item.get("call_id")), texts(item.get("output")))])
        tools = tuple(
            Tool(name, params if isinstance(params := tool.get("parameters"), Mapping) else None,
                 string(tool.get("description")))
            for tool in _functions(body.get("tools")) if isinstance(name := tool.get("name"), str)
        )
        return NeutralRequest(tuple(system), tuple(conversation.turns), tools, _tool_choice(body.get("tool_choice")),
                              stream_flag(body))



def _functions(tools: Any) -> Iterator[Mapping[str, Any]]:
    """The function tools offered, a ``namespace`` tool's functions among them: the model calls
    those as it calls any other (Codex CLI 0.171.0 groups its sub-agent and MCP functions so,
    https://developers.openai.com/api/docs/guides/tools-tool-search)."""
    for tool in items(tools):
        if tool.get("type") == "function":
            yield tool
        elif tool.get("type") == "namespace":
            yield from (inner for inner in items(tool.get("tools")) if inner.get("type") == "function")


def _tool_choice(choice: Any) -> ChoiceIntent:
    named = mapping(choice)
    if named.get("type") == "function" and isinstance(name := named.get("name"), str):
        return ChoiceIntent("named", name)
    return chat_tool_choice(choice) if not named else ChoiceIntent("other")



RESPONSES = WireDialect(
    name="responses",
    title="OpenAI Responses",
    endpoint="/responses",
    default_finish="completed",
    finish_names={"completed": "end", "function_calls": "tool", "max_output_tokens": "length"},
    error_types=OPENAI.error_types,
    client_error_type=OPENAI.client_error_type,
    server_error_type=OPENAI.server_error_type,
    sdk_errors=OPENAI.sdk_errors,  # the same SDK reads both
    sdk_server_error=OPENAI.sdk_server_error,
    calls=ToolUseCodec("OpenAI Responses"),
    errors=OPENAI.errors,
    requests=ResponsesRequests(),
    # The API has no finish reason: an answer's status, read in chat-completions words.
    finish_field="finish_reason",
    stream_end="response.completed",
    answer_name="Responses",
    short_name="Responses",
    usage_names={"input": "input_tokens", "output": "output_tokens"},
    finish_aliases={"stop-sequence": "completed"},
    splits_text=True,
)
