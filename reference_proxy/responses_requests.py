"""A Responses request said as a Chat Completions request, and the reverse: pure, no I/O.

The proxy serves ``/v1/responses`` by running the chat pipeline on the answer, so a
Responses request becomes the chat request it amounts to (``responses_to_chat``); in
front of a Responses upstream, a chat client's request is said as a Responses request
(``chat_to_responses_request``). Field names:
https://platform.openai.com/docs/api-reference/responses/create
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_proxy.openai_stream import dumps
from reference_proxy.translate.requests import text_of


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _function_tool(tool: Any) -> dict[str, Any] | None:
    tool = _map(tool)
    if tool.get("type") != "function" or not isinstance(tool.get("name"), str):
        return None
    function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": function}


def namespaced(body: Mapping[str, Any]) -> dict[str, str]:
    """Each function a ``namespace`` tool of ``body`` groups, by name, with its namespace's name.

    Codex CLI 0.171.0 sends its sub-agent functions as one ``{"type": "namespace", "name":
    "multi_agent_v1", "tools": [...]}`` tool (the Responses API's namespace tool:
    https://developers.openai.com/api/docs/guides/tools-tool-search), and its MCP servers'
    functions the same way. A chat or Messages upstream has no namespaces: its functions are
    offered there by their own names (a top-level function of the same name keeps it), and a call
    of one is answered with its namespace again, as a Responses server names it."""
    top = {_map(t).get("name") for t in body.get("tools") or () if _map(t).get("type") == "function"}
    found: dict[str, str] = {}
    for tool in body.get("tools") or ():
        tool = _map(tool)
        if tool.get("type") != "namespace" or not isinstance(tool.get("name"), str):
            continue
        for inner in tool.get("tools") or ():
            name = _map(inner).get("name")
            if _map(inner).get("type") == "function" and isinstance(name, str) and name not in top:
                found.setdefault(name, tool["name"])
    return found


def function_tools(body: Mapping[str, Any]) -> list[Any]:
    """The function tools of a Responses request, a namespace's functions among them."""
    out: list[Any] = []
    inside = namespaced(body)
    for tool in body.get("tools") or ():
        if _map(tool).get("type") == "namespace":
            out.extend(t for t in _map(tool).get("tools") or () if _map(t).get("name") in inside
                       and inside[_map(t)["name"]] == _map(tool).get("name"))
        else:
            out.append(tool)
    return out


def hosted_tools(body: Mapping[str, Any]) -> list[str]:
    """The types of the tools of ``body`` no chat or Messages upstream can call: the tools a
    Responses server runs itself (Codex CLI 0.171.0 sends ``{"type": "web_search"}``). They are not
    offered there (the model could not call them as functions, and a strict server refuses an
    unknown tool type); the proxy says so in its log rather than losing them without a word."""
    kinds = (_map(t).get("type") for t in body.get("tools") or ())
    return sorted({k for k in kinds if isinstance(k, str) and k not in ("function", "namespace")})


def unoffered_note(body: Mapping[str, Any], upstream: str, runs_hosted_tools: bool) -> str | None:
    """What the proxy logs of ``body``'s tools that the upstream named ``upstream`` cannot run
    (None when there are none, or it runs them itself: a Responses one takes them as sent)."""
    hosted = [] if runs_hosted_tools else hosted_tools(body)
    if not hosted:
        return None
    return f"the client's {', '.join(hosted)} tool(s) are not offered to the {upstream} upstream, which cannot run them"


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def input_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conversation of a Responses request as chat messages: an assistant's
    ``function_call`` items join one assistant message's ``tool_calls``."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        item = _map(item)
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": text_of(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}}
            last = messages[-1] if messages else None
            if last is not None and last.get("role") == "assistant":
                last.setdefault("tool_calls", []).append(call)
                if not last.get("content"):
                    last["content"] = None
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, str) else text_of(output) or dumps(output)})
        # reasoning and other item kinds have no chat form; they are left out
    return messages


def responses_to_chat(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat request that asks what the Responses request ``body`` asks."""
    chat: dict[str, Any] = {k: body[k] for k in ("model", "temperature", "top_p", "user", "parallel_tool_calls")
                            if k in body and body[k] is not None}
    chat["messages"] = input_messages(body)
    tools = [t for t in (_function_tool(t) for t in function_tools(body)) if t is not None]
    if tools:
        chat["tools"] = tools
    if "tool_choice" in body and tools:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    if isinstance(body.get("max_output_tokens"), int):
        chat["max_tokens"] = body["max_output_tokens"]
    chat["stream"] = body.get("stream") is True
    if chat["stream"]:
        chat["stream_options"] = {"include_usage": True}
    return chat


def chat_to_responses_request(chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
    """A chat request as a Responses upstream takes it (the proxy's own request, after shaping)."""
    out: dict[str, Any] = {k: chat[k] for k in ("model", "temperature", "top_p", "user", "parallel_tool_calls")
                           if k in chat}
    items: list[dict[str, Any]] = []
    for message in chat.get("messages") or ():
        message = _map(message)
        role = message.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": text_of(message.get("content"))})
            continue
        if text_of(message.get("content")) or not message.get("tool_calls"):
            items.append({"type": "message", "role": role, "content": text_of(message.get("content"))})
        for call in message.get("tool_calls") or ():
            fn = _map(_map(call).get("function"))
            items.append({"type": "function_call", "call_id": _map(call).get("id"), "name": fn.get("name"),
                          "arguments": fn.get("arguments") or ""})
    out["input"] = items
    tools = [{"type": "function", **_map(t).get("function", {})} for t in chat.get("tools") or ()
             if isinstance(_map(t).get("function"), Mapping)]
    if tools:
        out["tools"] = tools
    choice = chat.get("tool_choice")
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        out["tool_choice"] = {"type": "function", "name": choice["function"].get("name")}
    elif choice is not None:
        out["tool_choice"] = choice
    if isinstance(chat.get("max_tokens"), int):
        out["max_output_tokens"] = chat["max_tokens"]
    out["stream"] = stream
    return out
