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

from harness.core.dialects.request import texts

# Request fields the two APIs share under the same name.
_SAME = ("model", "stream", "temperature", "top_p", "user", "parallel_tool_calls", "metadata", "store")


def _text(content: Any) -> str:
    return "".join(texts(content))


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


# --------------------------------------------------------------------------- and back


def _chat_content(content: Any) -> Any:
    """String content stays a string; input_text/output_text parts become text parts."""
    if not isinstance(content, list):
        return content if content is not None else ""
    return [{"type": "text", "text": p.get("text", "")}
            if isinstance(p, Mapping) and p.get("type") in ("input_text", "output_text") else p for p in content]


def _chat_messages(body: Mapping[str, Any]) -> list[Any]:
    messages: list[Any] = []
    if isinstance(body.get("instructions"), str) and body["instructions"]:
        messages.append({"role": "system", "content": body["instructions"]})
    given = body.get("input")
    if isinstance(given, str):
        return [*messages, {"role": "user", "content": given}]
    for item in given if isinstance(given, list) else ():
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type", "message")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments", "")}}
            last = messages[-1] if messages else None
            if isinstance(last, dict) and last.get("role") == "assistant" and "tool_calls" in last:
                last["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": _text(item.get("output"))
                             if not isinstance(item.get("output"), str) else item["output"]})
        elif kind == "message":
            messages.append({"role": item.get("role"), "content": _chat_content(item.get("content"))})
    return messages


def responses_to_chat(body: Mapping[str, Any]) -> dict[str, Any]:
    """The Chat Completions request that asks what the Responses ``body`` asks: the inverse of
    ``chat_to_responses``, for a recorded Responses request written as a case (cases are
    written in Chat Completions words and a ``responses`` client says them in its own)."""
    out: dict[str, Any] = {key: body[key] for key in _SAME if key in body}
    out["messages"] = _chat_messages(body)
    if "tools" in body:
        out["tools"] = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
                        if isinstance(t, Mapping) and t.get("type") == "function" else t for t in body["tools"] or ()]
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    elif "tool_choice" in body:
        out["tool_choice"] = choice
    if body.get("max_output_tokens") is not None:
        out["max_tokens"] = body["max_output_tokens"]
    return out
