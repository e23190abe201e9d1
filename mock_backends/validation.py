"""The request checks a real backend makes before it generates anything: pure, no I/O.

A pass-through proxy relays a backend's 400 to its client, and the bad-input
scenarios count on that, so the mock refuses what the real APIs refuse: a request
without messages, a message role the API does not know, a tool result that answers
no earlier tool call, and (Anthropic) a missing ``max_tokens``. Each check is one
pass over the messages: the mock is a benchmark baseline.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
ANTHROPIC_ROLES = frozenset({"user", "assistant"})
# Besides these turns, a ``system`` message may stand inside ``messages`` (text only, a string or
# text blocks): Claude Code 2.1.197 sends its <system-reminder> text so, after user and assistant
# turns (beta header ``anthropic-beta: mid-conversation-system-2026-04-07``).

_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


@dataclass(frozen=True, slots=True)
class RequestProblem:
    """Why a request is refused. ``code`` and ``param`` fill OpenAI's error fields;
    the Anthropic shape carries the message only."""

    message: str
    code: str | None = None
    param: str | None = None


def _kind(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _id_text(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"{_kind(value)} {value!r}"


# --------------------------------------------------------------------------- OpenAI chat completions


def check_openai(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason an OpenAI-compatible backend refuses ``body``, or None."""
    messages = body.get("messages")
    if messages is None:
        return RequestProblem("Missing required parameter: 'messages'.", "missing_required_parameter", "messages")
    if not isinstance(messages, list):
        return RequestProblem(f"Invalid type for 'messages': expected an array, but got {_kind(messages)} instead.",
                              "invalid_type", "messages")
    if not messages:
        return RequestProblem("Invalid 'messages': empty array. Expected an array with at least one message.",
                              "empty_array", "messages")
    call_ids: set[str] = set()  # ids of the tool calls made by the assistant messages so far
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return RequestProblem(
                f"Invalid type for 'messages[{i}]': expected an object, but got {_kind(message)} instead.",
                "invalid_type", "messages")
        role = message.get("role")
        if role is None:
            return RequestProblem(f"Missing required parameter: 'messages[{i}].role'.", "missing_required_parameter",
                                  "messages")
        if role not in OPENAI_ROLES:
            return RequestProblem(
                f"Invalid value for 'messages[{i}].role': {_id_text(role)}. Supported values are: 'system', "
                "'developer', 'user', 'assistant', 'tool' and 'function'.", "invalid_value", "messages")
        if role == "assistant":
            calls = message.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict) and isinstance(call.get("id"), str):
                        call_ids.add(call["id"])
        elif role == "tool":
            answered = message.get("tool_call_id")
            if answered is None:
                return RequestProblem(f"Missing required parameter: 'messages[{i}].tool_call_id'.",
                                      "missing_required_parameter", "messages")
            if not isinstance(answered, str) or answered not in call_ids:
                where = ("no preceding assistant message has a tool call with that id" if call_ids
                         else "no preceding assistant message has 'tool_calls'")
                return RequestProblem(
                    f"Invalid parameter: messages[{i}] has role 'tool' and answers tool_call_id "
                    f"{_id_text(answered)}, but {where}. A 'tool' message must be the response to a tool call "
                    "of an earlier assistant message.", "invalid_tool_message", "messages")
    return None


# --------------------------------------------------------------------------- Anthropic Messages


def check_anthropic(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason the Messages API refuses ``body``, or None."""
    messages = body.get("messages")
    if messages is None:
        return RequestProblem("messages: Field required", param="messages")
    if not isinstance(messages, list):
        return RequestProblem(f"messages: Input should be a valid list, not {_kind(messages)}", param="messages")
    if not messages:
        return RequestProblem("messages: at least one message is required", param="messages")
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return RequestProblem("max_tokens: Field required", param="max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return RequestProblem(f"max_tokens: Input should be a valid integer, not {_kind(max_tokens)}",
                              param="max_tokens")
    if max_tokens < 1:
        return RequestProblem("max_tokens: Input should be greater than or equal to 1", param="max_tokens")
    use_ids: set[str] = set()  # ids of the tool_use blocks of the assistant messages so far
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            return RequestProblem(f"messages.{i}: Input should be a valid dictionary, not {_kind(message)}",
                                  param="messages")
        role = message.get("role")
        if role is None:
            return RequestProblem(f"messages.{i}.role: Field required", param="messages")
        if role == "system":  # a system message inside the conversation: its content is text only
            problem = _system_message_problem(i, message.get("content"))
            if problem is not None:
                return problem
            continue
        if role not in ANTHROPIC_ROLES:
            return RequestProblem(f"messages.{i}.role: Input should be 'user', 'assistant' or 'system', not "
                                  f"{_id_text(role)}", param="messages")
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "tool_use" and role == "assistant" and isinstance(block.get("id"), str):
                use_ids.add(block["id"])
            elif kind == "tool_result":
                answered = block.get("tool_use_id")
                if answered is None:
                    return RequestProblem(f"messages.{i}.content.{j}.tool_use_id: Field required", param="messages")
                if not isinstance(answered, str) or answered not in use_ids:
                    return RequestProblem(
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` block: "
                        f"{_id_text(answered)}. Each `tool_result` block must answer a `tool_use` block of an "
                        "earlier assistant message.", param="messages")
    return None


def _system_message_problem(i: int, content: Any) -> RequestProblem | None:
    """Why the content of the system message ``messages.{i}`` is refused: it is a string or text blocks."""
    if isinstance(content, str):
        return None
    if not isinstance(content, list):
        return RequestProblem(f"messages.{i}.content: Input should be a valid string or list of text blocks, not "
                              f"{_kind(content)}", param="messages")
    for j, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            kind = block.get("type") if isinstance(block, dict) else None
            return RequestProblem(f"messages.{i}.content.{j}: a system message holds text blocks only, not "
                                  f"{_id_text(kind) if kind is not None else _kind(block)}", param="messages")
    return None
