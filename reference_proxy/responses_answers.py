"""Whole Responses answers said as chat completions and back: pure, no I/O.

A ``chat.completion`` (after rescue) becomes the ``response`` object a non-streaming
Responses client reads (``completion_to_response``); a Responses upstream's ``response``
becomes the ``chat.completion`` the pipeline rescues from (``response_to_completion``).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from reference_proxy.responses_requests import namespaced


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def new_response_id() -> str:
    return "resp_" + secrets.token_hex(24)


def _count(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def responses_usage(chat_usage: Any) -> dict[str, Any]:
    usage = _map(chat_usage)
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion}


def chat_usage(usage: Any) -> dict[str, int]:
    given = _map(usage)
    prompt, completion = _count(given, "input_tokens"), _count(given, "output_tokens")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def response_shell(request: Mapping[str, Any], response_id: str, model: str, status: str,
                   output: list[dict[str, Any]], usage: dict[str, Any] | None,
                   incomplete: bool = False, error: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``response`` object, echoing what the request set."""
    tools = request.get("tools")
    return {
        "id": response_id, "object": "response", "created_at": int(time.time()), "status": status,
        "error": dict(error) if error is not None else None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
        "model": model, "output": output, "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"), "reasoning": {"effort": None, "summary": None},
        "store": request.get("store", True), "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}}, "tool_choice": request.get("tool_choice", "auto"),
        "tools": tools if isinstance(tools, list) else [], "top_p": request.get("top_p", 1.0),
        "truncation": "disabled", "usage": usage, "user": request.get("user"), "metadata": {},
    }


def message_item(ident: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": ident, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call_item(ident: str, call_id: str, name: str, arguments: str, status: str = "completed",
              request: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``function_call`` item; a call of a function a ``namespace`` tool of ``request`` groups
    carries that namespace, as a Responses server names it."""
    item = {"id": ident, "type": "function_call", "status": status, "call_id": call_id, "name": name,
            "arguments": arguments}
    namespace = namespaced(request).get(name) if request is not None else None
    if namespace is not None:
        item["namespace"] = namespace
    return item


def completion_to_response(completion: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """A whole ``chat.completion`` (after rescue) as a ``response``."""
    choices = completion.get("choices")
    choice = _map(choices[0]) if isinstance(choices, list) and choices else {}
    message = _map(choice.get("message"))
    response_id = new_response_id()
    output: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(message_item(f"msg_{secrets.token_hex(16)}", text))
    for call in message.get("tool_calls") or ():
        fn = _map(_map(call).get("function"))
        ident = _map(call).get("id")
        call_id = ident if isinstance(ident, str) and ident else f"call_{secrets.token_hex(12)}"
        output.append(call_item(f"fc_{secrets.token_hex(16)}", call_id, str(fn.get("name") or ""),
                                 str(fn.get("arguments") or ""), request=request))
    model = completion.get("model")
    length = choice.get("finish_reason") == "length"
    return response_shell(request, response_id, model if isinstance(model, str) else str(request.get("model", "")),
                          "incomplete" if length else "completed", output, responses_usage(completion.get("usage")),
                          incomplete=length)


def response_to_completion(response: Mapping[str, Any], request_model: str) -> dict[str, Any]:
    """A whole ``response`` from a Responses upstream as a ``chat.completion`` (before rescue)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or ():
        item = _map(item)
        if item.get("type") == "message":
            texts.append("".join(p.get("text", "") for p in item.get("content") or ()
                                 if isinstance(p, Mapping) and p.get("type") == "output_text"))
        elif item.get("type") == "function_call":
            calls.append({"id": item.get("call_id"), "type": "function",
                          "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}})
    status = response.get("status")
    finish = "length" if status == "incomplete" else "tool_calls" if calls else "stop"
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    model = response.get("model")
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
            "model": model if isinstance(model, str) and model else request_model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": chat_usage(response.get("usage"))}
