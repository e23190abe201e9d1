"""A request of one API rewritten for an upstream of the other."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reference_proxy.errors import invalid_request

DEFAULT_MAX_TOKENS = 4096  # the Messages API requires max_tokens; a chat request may leave it out
_SAMPLING = ("temperature", "top_p")


def text_of(content: Any, sep: str = "") -> str:
    """The text of a string or a list of text parts/blocks (joined by ``sep``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return sep.join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def arguments_object(arguments: Any) -> dict[str, Any]:
    """A call's arguments as the object an upstream that takes objects wants (Ollama, Kiro): an
    object as it is, JSON text parsed, anything else kept whole under ``input``."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        value = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value if value is not None else {}, ensure_ascii=False)


def _input(arguments: Any) -> Any:
    """A chat call's arguments as a tool_use ``input`` object (unparseable text is kept under ``arguments``)."""
    if not isinstance(arguments, str):
        return arguments if isinstance(arguments, Mapping) else {}
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


# --------------------------------------------------------------------------- Messages -> chat


def _chat_tool_choice(choice: Any) -> Any:
    if not isinstance(choice, Mapping):
        return None
    kind = choice.get("type")
    if kind == "tool" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    return {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))


def _chat_messages(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str) or not isinstance(content, list):
        return [{"role": role, "content": content if isinstance(content, str) else ""}]
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append({"type": "text", "text": block.get("text", "")})
        elif kind == "tool_use":
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"), "arguments": _arguments(block.get("input"))}})
        elif kind == "tool_result":
            out.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": text_of(block.get("content"))})
        elif kind == "image" and isinstance(block.get("source"), Mapping):
            source = block["source"]
            url = source.get("url") or f"data:{source.get('media_type')};base64,{source.get('data')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    if role == "assistant":
        turn: dict[str, Any] = {"role": "assistant", "content": text_of(parts) or None}
        if calls:
            turn["tool_calls"] = calls
        out.append(turn)
    elif parts:
        only_text = all(p["type"] == "text" for p in parts)
        out.append({"role": role, "content": text_of(parts) if only_text else parts})
    return out


def messages_to_chat(body: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages request as a chat-completions request."""
    out: dict[str, Any] = {"model": body.get("model")}
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        messages.append({"role": "system", "content": text_of(system)})
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            messages.extend(_chat_messages(message))
    out["messages"] = messages
    if "max_tokens" in body:
        out["max_tokens"] = body["max_tokens"]
    for key in _SAMPLING:
        if key in body:
            out[key] = body[key]
    if body.get("stop_sequences"):
        out["stop"] = body["stop_sequences"]
    tools = [
        {"type": "function", "function": {k: v for k, v in (("name", t.get("name")), ("description", t.get("description")),
                                                                ("parameters", t.get("input_schema"))) if v is not None}}
        for t in body.get("tools") or () if isinstance(t, Mapping) and "name" in t
    ]
    if tools:
        out["tools"] = tools
    choice = _chat_tool_choice(body.get("tool_choice"))
    if choice is not None and tools:
        out["tool_choice"] = choice
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping) and isinstance(metadata.get("user_id"), str):
        out["user"] = metadata["user_id"]
    if body.get("stream"):
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    return out


# --------------------------------------------------------------------------- chat -> Messages


def _messages_tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping):
        function = choice.get("function")
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            return {"type": "tool", "name": function["name"]}
        return None
    return {"auto": {"type": "auto"}, "required": {"type": "any"}, "none": {"type": "none"}}.get(str(choice))


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str):
            blocks.append({"type": "text", "text": part["text"]})
        elif isinstance(part, Mapping) and part.get("type") == "image_url":
            url = part.get("image_url", {}).get("url", "") if isinstance(part.get("image_url"), Mapping) else ""
            blocks.append({"type": "image", "source": {"type": "url", "url": url}})
    return blocks


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Consecutive turns of one role become one turn, as the Messages API alternates them."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def chat_to_messages(body: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions request as a Messages request; ``ProxyError`` (400) for a turn
    the chat API itself would refuse, which no translation could carry faithfully."""
    for i, message in enumerate(body.get("messages") or ()):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in CHAT_ROLES:
            raise invalid_request(
                f"Invalid value for 'messages[{i}].role': expected one of {', '.join(CHAT_ROLES)}.",
                param=f"messages[{i}].role", code="invalid_value",
            )
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in body.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            system.append(text_of(content))
        elif role == "assistant":
            blocks = _blocks(content)
            for call in message.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("function"), Mapping):
                    fn = call["function"]
                    blocks.append({"type": "tool_use", "id": call.get("id"), "name": fn.get("name"),
                                   "input": _input(fn.get("arguments"))})
            _append(turns, "assistant", blocks)
        elif role in ("tool", "function"):
            _append(turns, "user", [{"type": "tool_result", "tool_use_id": message.get("tool_call_id"),
                                     "content": text_of(content)}])
        else:
            _append(turns, "user", _blocks(content) or [{"type": "text", "text": ""}])
    out: dict[str, Any] = {"model": body.get("model"), "messages": turns}
    if system:
        out["system"] = "\n\n".join(system)
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    out["max_tokens"] = limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else DEFAULT_MAX_TOKENS
    for key in _SAMPLING:
        if key in body:
            out[key] = body[key]
    stop = body.get("stop")
    if stop:
        out["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    tools = []
    for tool in body.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            spec: dict[str, Any] = {"name": fn["name"], "input_schema": fn.get("parameters") or {"type": "object"}}
            if fn.get("description"):
                spec["description"] = fn["description"]
            tools.append(spec)
    if tools:
        out["tools"] = tools
        choice = _messages_tool_choice(body.get("tool_choice"))
        if choice is not None:
            out["tool_choice"] = choice
    if isinstance(body.get("user"), str):
        out["metadata"] = {"user_id": body["user"]}
    if body.get("stream"):
        out["stream"] = True
    return out
