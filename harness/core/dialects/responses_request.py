"""A scenario's Chat Completions request as a Responses client sends it.

The cases are written as Chat Completions requests; a client of the ``responses``
profile says the same in the Responses API's words (https://platform.openai.com/docs/api-reference/responses/create):
messages become ``input`` items, an assistant's ``tool_calls`` become ``function_call``
items, a ``tool`` message a ``function_call_output`` item, and tools lose their
``function`` wrapper. Pure: the runner calls it on the body it is about to send.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Request fields the two APIs share under the same name.
_SAME = ("model", "stream", "temperature", "top_p", "user", "parallel_tool_calls", "metadata", "store")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _content(role: str, content: Any) -> Any:
    """String content stays a string; parts become input_text (output_text for the assistant)."""
    if not isinstance(content, list):
        return content if content is not None else ""
    kind = "output_text" if role == "assistant" else "input_text"
    return [{"type": kind, "text": p.get("text", "")} if isinstance(p, dict) and p.get("type") == "text" else p
            for p in content]


def _tool(tool: Any) -> Any:
    if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
        return tool
    return {"type": "function", **tool["function"]}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        return {"type": "function", "name": choice["function"].get("name")}
    return choice


def input_items(messages: Any) -> list[Any]:
    items: list[Any] = []
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, Mapping):
            items.append(message)
            continue
        role = message.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _text(message.get("content"))})
            continue
        if role == "assistant" and message.get("tool_calls"):
            if _text(message.get("content")):
                items.append({"type": "message", "role": "assistant",
                              "content": _content("assistant", message.get("content"))})
            for call in message["tool_calls"]:
                fn = call.get("function") if isinstance(call, Mapping) else None
                if isinstance(fn, Mapping):
                    items.append({"type": "function_call", "call_id": call.get("id"), "name": fn.get("name"),
                                  "arguments": fn.get("arguments", "")})
            continue
        items.append({"type": "message", "role": role, "content": _content(str(role), message.get("content"))})
    return items


def chat_to_responses(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Responses request that asks what the Chat Completions ``body`` asks."""
    out: dict[str, Any] = {key: body[key] for key in _SAME if key in body}
    out["input"] = input_items(body.get("messages"))
    if "tools" in body:
        out["tools"] = [_tool(t) for t in body["tools"] or ()]
    if "tool_choice" in body:
        out["tool_choice"] = _tool_choice(body["tool_choice"])
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    if limit is not None:
        out["max_output_tokens"] = limit
    return out
