"""A Kiro (CodeWhisperer) upstream: the neutral chat request said as a
``conversationState`` posted to ``…/generateAssistantResponse``, and its event stream
(``kiro_stream``) read as chat chunks, for a streaming client or folded into one answer.

How the request is said, as the open gateways say it
(https://github.com/hank9999/kiro.rs ``src/anthropic/converter.rs``,
https://github.com/jwadow/kiro-gateway ``kiro/converters_core.py``):

* Kiro has no system role: the system text opens the history as a user message answered
  by the assistant (kiro.rs ``build_history``);
* the history alternates ``userInputMessage`` and ``assistantResponseMessage``; an
  assistant's calls are ``toolUses[{toolUseId, name, input}]`` with ``input`` an object,
  never narrated as text; tool results ride on the next user message
  (``userInputMessageContext.toolResults[{toolUseId, content[{text}], status}]``), each
  answering its call once (a repeated result is left out; one answering no call is sent as
  it came, and Kiro's 400 passed on, as the client's own API would answer it);
* the last user turn is ``currentMessage``, carrying the tools
  (``toolSpecification{name, description, inputSchema.json}``), with a placeholder for
  a tool the history calls that the client no longer offers (Kiro refuses the request
  otherwise: https://github.com/decolua/9router/pull/1582);
* ``chatTriggerType`` is ``MANUAL`` (kiro.rs: ``AUTO`` draws 400s), ``origin`` ``AI_EDITOR``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from reference_proxy.errors import invalid_request
from reference_proxy.translate.requests import arguments_object, text_of
from reference_proxy.upstreams.base import DecodedUpstream, Headers, ReadAnswer
from reference_proxy.upstreams.kiro_stream import FrameDecoder, KiroAsChunks

SYSTEM_ANSWER = "I will follow these instructions."
ORIGIN = "AI_EDITOR"
EMPTY_SCHEMA = {"type": "object", "properties": {}}


class _History:
    """Entries of the conversation, merged so that user and assistant alternate."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.entries: list[dict[str, Any]] = []
        self.calls: set[str] = set()
        self.answered: set[str] = set()
        self.called: dict[str, None] = {}

    def user(self, text: str, results: list[dict[str, Any]] = ()) -> None:  # type: ignore[assignment]
        if self.entries and "userInputMessage" in self.entries[-1]:
            last = self.entries[-1]["userInputMessage"]
            last["content"] = "\n".join(t for t in (last["content"], text) if t)
            if results:
                last.setdefault("userInputMessageContext", {}).setdefault("toolResults", []).extend(results)
            return
        message: dict[str, Any] = {"content": text, "modelId": self.model, "origin": ORIGIN}
        if results:
            message["userInputMessageContext"] = {"toolResults": list(results)}
        self.entries.append({"userInputMessage": message})

    def assistant(self, text: str, uses: list[dict[str, Any]]) -> None:
        if not self.entries:
            self.user(".")  # the history opens with a user message
        if "assistantResponseMessage" in self.entries[-1]:
            last = self.entries[-1]["assistantResponseMessage"]
            last["content"] = "\n".join(t for t in (last["content"], text) if t)
            last.setdefault("toolUses", []).extend(uses)
            return
        message: dict[str, Any] = {"content": text}
        if uses:
            message["toolUses"] = uses
        self.entries.append({"assistantResponseMessage": message})

    def call(self, tool_call: Mapping[str, Any]) -> dict[str, Any] | None:
        given = tool_call.get("function")
        fn: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        name, ident = fn.get("name"), tool_call.get("id")
        if not isinstance(name, str) or not isinstance(ident, str) or ident in self.calls:
            return None
        self.calls.add(ident)
        self.called[name] = None
        return {"toolUseId": ident, "name": name, "input": arguments_object(fn.get("arguments"))}

    def result(self, ident: Any, text: str) -> dict[str, Any] | None:
        """A tool result for the next user message; None for a second answer to a call already
        answered (Kiro takes one). One that answers no call goes as it came, for Kiro to refuse."""
        if isinstance(ident, str) and ident in self.answered:
            return None
        self.answered.add(str(ident))
        return {"toolUseId": ident, "content": [{"text": text}], "status": "success"}


def chat_to_kiro(chat: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions request as a Kiro ``generateAssistantResponse`` body."""
    model = chat["model"] if isinstance(chat.get("model"), str) else "auto"
    history = _History(model)
    messages = [m for m in chat.get("messages") or () if isinstance(m, Mapping)]
    system = [text_of(m.get("content"), "\n") for m in messages if m.get("role") in ("system", "developer")]
    system_text = "\n\n".join(t for t in system if t)
    if system_text:
        history.user(system_text)
        history.assistant(SYSTEM_ANSWER, [])
    for message in messages:
        role = message.get("role")
        if role == "user":
            history.user(text_of(message.get("content"), "\n"))
        elif role == "assistant":
            uses = [u for c in message.get("tool_calls") or () if isinstance(c, Mapping)
                    if (u := history.call(c)) is not None]
            history.assistant(text_of(message.get("content"), "\n"), uses)
        elif role == "tool":
            result = history.result(message.get("tool_call_id"), text_of(message.get("content"), "\n"))
            history.user("", [result] if result is not None else [])
        elif role not in ("system", "developer"):  # Kiro has no other turn: refused, as the client's own API would
            raise invalid_request(f"Invalid value: {role!r}. Supported roles are system, developer, user, assistant "
                                  "and tool.", param="messages")
    entries = history.entries
    while entries and "assistantResponseMessage" in entries[-1]:
        entries.pop()  # Kiro continues no assistant prefill: the conversation ends with the user
    current: dict[str, Any] = (entries.pop()["userInputMessage"] if entries
                               else {"content": "", "modelId": model, "origin": ORIGIN})
    if not current["content"]:
        current["content"] = "Continue." if not current.get("userInputMessageContext") else "Tool results provided."
    tools = []
    offered: set[str] = set()
    for tool in chat.get("tools") or ():
        fn = tool.get("function") if isinstance(tool, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            offered.add(fn["name"].lower())
            schema = fn.get("parameters") if isinstance(fn.get("parameters"), Mapping) else EMPTY_SCHEMA
            tools.append({"toolSpecification": {"name": fn["name"], "description": fn.get("description") or fn["name"],
                                                "inputSchema": {"json": schema}}})
    for name in history.called:
        if name.lower() not in offered:
            tools.append({"toolSpecification": {"name": name, "description": "A tool the conversation used.",
                                                "inputSchema": {"json": EMPTY_SCHEMA}}})
    if tools:
        current.setdefault("userInputMessageContext", {})["tools"] = tools
    return {"conversationState": {"chatTriggerType": "MANUAL", "conversationId": str(uuid.uuid4()),
                                  "currentMessage": {"userInputMessage": current}, "history": entries}}


class KiroUpstream(DecodedUpstream):
    name = "kiro"
    path = "/generateAssistantResponse"
    decoder = FrameDecoder
    reader = KiroAsChunks

    def headers(self, client: Headers) -> dict[str, str]:
        return {**super().headers(client), "accept": "application/vnd.amazon.eventstream"}

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return chat_to_kiro(chat)

    def streams(self, response: httpx.Response) -> bool:
        return True  # Kiro answers every request with an event stream

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        return await self.fold(response, model)
