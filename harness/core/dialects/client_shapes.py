"""Real clients' request shapes: how Copilot Chat, Claude Code, Codex CLI, OpenCode, Cline and
Roo Code really ask, laid over a case's request.

A shape is read from ``client_data/<client>.json`` (written by ``scripts/client_shapes.py`` from
the requests the runnable agents sent, ``tests/fixtures/agents/``, and from the others' public
source, each file naming its ``sources``). Laying it over a case's request keeps everything the
case says (its messages, tools, fields) and adds what the client sends besides: its system text
and the messages it sends before the prompt, its own tools (after them the case's, a client tool
of the same name as one of the case's left out), its extra fields, its headers and query string.
One layout object per wire dialect says where each piece goes in that dialect's request.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Protocol


def _names(tools: Any, name_of: Any) -> set[str]:
    return {n for n in (name_of(t) for t in tools or ()) if isinstance(n, str)}


def _merge_tools(client_tools: list[Any], case_tools: Any, name_of: Any) -> list[Any]:
    """The client's tools, then the case's; a client tool named as one of the case's is left out."""
    own = _names(case_tools, name_of)
    kept = [copy.deepcopy(t) for t in client_tools if name_of(t) not in own]
    return kept + list(case_tools or ())


def _fields(out: dict[str, Any], data: Mapping[str, Any]) -> None:
    for key in data.get("drop_fields", ()):
        out.pop(key, None)
    for key, value in data.get("fields", {}).items():
        out.setdefault(key, copy.deepcopy(value))
    if out.get("stream"):
        for key, value in data.get("stream_fields", {}).items():
            out.setdefault(key, copy.deepcopy(value))


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


class Layout(Protocol):
    """Where a shape's pieces go in one dialect's request."""

    def apply(self, data: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        ...


def _chat_tool_name(tool: Any) -> Any:
    fn = tool.get("function") if isinstance(tool, Mapping) else None
    return fn.get("name") if isinstance(fn, Mapping) else None


def _wrap(content: Any, before: str, after: str) -> Any:
    if isinstance(content, str):
        return before + content + after
    if isinstance(content, list):
        return [_text_part(before), *content, _text_part(after)]
    return content


class ChatLayout:
    """Chat Completions: the client's system text leads the first system message (the case's own
    system text follows in it, as one client sends one); its context messages come next, then the
    case's conversation; marks (``copilot_cache_control``) go on the first and last messages it
    marks; the last user message may be wrapped (Copilot's ``<userRequest>``)."""

    def apply(self, data: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(body)
        messages = [dict(m) if isinstance(m, Mapping) else m for m in body.get("messages") or ()]
        system: dict[str, Any] = {"role": "system", "content": data["system"]}
        if messages and isinstance(messages[0], dict) and messages[0].get("role") in ("system", "developer"):
            first = messages.pop(0)
            own = first.get("content")
            system = {**first, "role": "system", "content": (
                data["system"] + "\n\n" + own if isinstance(own, str) else
                [_text_part(data["system"]), *own] if isinstance(own, list) else data["system"])}
        wrap = data.get("wrap_last_user")
        if wrap is not None:
            last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
            if last is not None:
                last["content"] = _wrap(last.get("content"), wrap["before"], wrap["after"])
        marks = data.get("marks", {})
        for message in (system, *[m for m in messages[-1:] if isinstance(m, dict) and m.get("role") == "user"]):
            message.update(copy.deepcopy(marks))
        out["messages"] = [system, *copy.deepcopy(data.get("context", [])), *messages]
        if data.get("tools") or "tools" in body:
            out["tools"] = _merge_tools(data.get("tools", []), body.get("tools"), _chat_tool_name)
        _fields(out, data)
        if not out.get("tools"):
            out.pop("tools", None)
            if "tool_choice" not in body:
                out.pop("tool_choice", None)
        return out


def _block_name(tool: Any) -> Any:
    return tool.get("name") if isinstance(tool, Mapping) else None


class MessagesLayout:
    """Anthropic Messages: the client's system blocks, then the case's; its reminder blocks open
    the first user message; its mid-conversation ``system`` message follows that user message;
    ``metadata.user_id`` is a JSON string as Claude Code writes it (the case's own id, the run's
    nonce, kept inside it as the session id)."""

    def apply(self, data: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(body)
        own = body.get("system")
        own_blocks = [_text_part(own)] if isinstance(own, str) else list(own) if isinstance(own, list) else []
        out["system"] = [*copy.deepcopy(data["system"]), *own_blocks]
        messages = [dict(m) if isinstance(m, Mapping) else m for m in body.get("messages") or ()]
        first = next((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), None)
        if first is not None:
            content = messages[first].get("content")
            blocks = [_text_part(content)] if isinstance(content, str) else list(content or ())
            messages[first]["content"] = [*copy.deepcopy(data.get("reminder", [])), *blocks]
            messages.insert(first + 1, copy.deepcopy(data["mid_system"]))
        out["messages"] = messages
        out["tools"] = _merge_tools(data.get("tools", []), body.get("tools"), _block_name)
        metadata = dict(body.get("metadata") or {})
        user_id = data.get("user_id")
        if user_id is not None:
            session = metadata.get("user_id")
            metadata["user_id"] = json.dumps({**user_id, **({"session_id": session} if isinstance(session, str)
                                                              else {})}, separators=(",", ":"))
            out["metadata"] = metadata
        _fields(out, data)
        return out


class ResponsesLayout:
    """Responses: the client's head items (Codex's developer messages, Copilot's system item),
    then the case's own leading system or developer items, then the client's context items, then
    the rest of the case's input."""

    def apply(self, data: Mapping[str, Any], body: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(body)
        items = list(body.get("input") or ()) if isinstance(body.get("input"), list) else (
            [{"type": "message", "role": "user", "content": body["input"]}] if isinstance(body.get("input"), str)
            else [])
        lead = 0
        while lead < len(items) and isinstance(items[lead], Mapping) and items[lead].get("role") in ("system",
                                                                                                   "developer"):
            lead += 1
        out["input"] = [*copy.deepcopy(data.get("head", [])), *items[:lead], *copy.deepcopy(data.get("context", [])),
                        *items[lead:]]
        out["tools"] = _merge_tools(data.get("tools", []), body.get("tools"), _block_name)
        _fields(out, data)
        return out


CHAT_LAYOUT = ChatLayout()
MESSAGES_LAYOUT = MessagesLayout()
RESPONSES_LAYOUT = ResponsesLayout()


@dataclass(frozen=True, eq=False)
class ClientShape:
    """One real client's request shape: its data and the layout of its dialect."""

    name: str  # the file it is read from, client_data/<name>.json
    layout: Layout
    data: Mapping[str, Any]

    @property
    def client(self) -> str:
        """The client and its version, as a message names it ("Claude Code 2.1.197")."""
        return f"{self.data['client']} {self.data['version']}"

    @property
    def headers(self) -> Mapping[str, str]:
        return MappingProxyType(dict(self.data["headers"]))

    @property
    def query(self) -> str:
        return str(self.data.get("query", ""))

    @property
    def tools(self) -> tuple[Any, ...]:
        """The client's own tools."""
        return tuple(self.data.get("tools", ()))

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(self.data["sources"])

    def apply(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` (a request in the shape's dialect) as this client sends it."""
        return self.layout.apply(self.data, body)


def load_shape(name: str, layout: Layout) -> ClientShape:
    """The shape written in ``client_data/<name>.json`` (package data, like the scenario schema)."""
    text = resources.files("harness.core.dialects").joinpath(f"client_data/{name}.json").read_text("utf-8")
    return ClientShape(name, layout, MappingProxyType(json.loads(text)))
