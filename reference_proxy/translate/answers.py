"""Whole answers of one API rewritten as the other's, and the finish vocabulary of each."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

STOP_FROM_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
                    "content_filter": "refusal"}
FINISH_FROM_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop",
                    "refusal": "content_filter", "pause_turn": "stop"}


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as the JSON object it should be; None when it is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else None


def as_object(arguments: Any) -> dict[str, Any] | None:
    """A call's arguments as the JSON object a tool_use ``input`` must be; None when they are not one."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        return None
    return json_object(arguments) if arguments.strip() else {}


def messages_usage(usage: Any) -> dict[str, int]:
    usage = _map(usage)
    return {"input_tokens": _count(usage.get("prompt_tokens")), "output_tokens": _count(usage.get("completion_tokens"))}


def chat_usage(usage: Any) -> dict[str, int]:
    usage = _map(usage)
    prompt = _count(usage.get("input_tokens"))
    completion = _count(usage.get("output_tokens"))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def completion_to_message(body: Mapping[str, Any], request_model: str) -> dict[str, Any]:
    """A ``chat.completion`` as a Messages ``message`` (choice 0). A native call whose
    arguments are no JSON object cannot be a tool_use block: its text is kept as text."""
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else {}
    message = _map(choice.get("message"))
    content: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            continue
        arguments = as_object(fn.get("arguments"))
        if arguments is None:
            content.append({"type": "text", "text": str(fn.get("arguments"))})
            continue
        ident = call.get("id") if isinstance(call.get("id"), str) else f"toolu_{secrets.token_hex(12)}"
        content.append({"type": "tool_use", "id": ident, "name": fn.get("name"), "input": arguments})
    finish = choice.get("finish_reason")
    model = body.get("model")
    return {
        "id": f"msg_{secrets.token_hex(12)}",
        "type": "message",
        "role": "assistant",
        "model": model if isinstance(model, str) and model else request_model,
        "content": content,
        "stop_reason": STOP_FROM_FINISH.get(finish, "end_turn") if isinstance(finish, str) else None,
        "stop_sequence": None,
        "usage": messages_usage(body.get("usage")),
    }


def message_to_completion(body: Mapping[str, Any], request_model: str) -> dict[str, Any]:
    """A Messages ``message`` as a ``chat.completion``."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in body.get("content") or ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            value = block.get("input")
            arguments = value if isinstance(value, str) else json.dumps(value if value is not None else {},
                                                                        ensure_ascii=False)
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"), "arguments": arguments}})
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    stop = body.get("stop_reason")
    model = body.get("model")
    return {
        "id": f"chatcmpl-{secrets.token_hex(12)}",
        "object": "chat.completion",
        "created": 0,
        "model": model if isinstance(model, str) and model else request_model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": FINISH_FROM_STOP.get(stop, "stop") if isinstance(stop, str) else "stop"}],
        "usage": chat_usage(body.get("usage")),
    }
