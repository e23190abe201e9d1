"""An Ollama upstream (its native ``POST /api/chat``): the neutral chat request said as an
Ollama chat request, its NDJSON stream (``ollama_stream``) read as chat chunks, its whole
answer (``stream: false``) as a ``chat.completion``.

How the request is said (https://github.com/ollama/ollama/blob/main/docs/api.md, ``/api/chat``;
``api/types.go`` ``ChatRequest``, ``Message``, ``ToolCall``):

* ``system`` and ``developer`` messages are ``system`` messages; every ``content`` is a string
  (Ollama refuses a list of parts: https://github.com/BerriAI/litellm/issues/11273);
* an assistant's calls go back as ``tool_calls[{id, function{name, arguments}}]`` with
  ``arguments`` an object (Ollama refuses the JSON string a chat client holds:
  https://github.com/ollama/ollama/issues/12794); text that is not a JSON object is kept
  under ``input``;
* a tool's result is ``role: "tool"`` with ``tool_name`` (the name of the call it answers)
  and ``tool_call_id``; one that answers no earlier call is refused here, as the client's own
  API refuses it (Ollama pairs nothing and would answer it);
* tools are declared as in Chat Completions; the sampling parameters go in ``options``
  (``max_tokens`` as ``num_predict``); ``stream`` is always said (Ollama streams by default).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

import httpx

from reference_proxy.connection import read_json
from reference_proxy.errors import ProxyError, error_body, invalid_request
from reference_proxy.translate.requests import arguments_object, text_of
from reference_proxy.upstreams.base import DecodedUpstream, ReadAnswer
from reference_proxy.upstreams.ollama_stream import LineDecoder, OllamaAsChunks, arguments_text, finish_reason, usage_of

# Chat sampling parameters and the ``options`` key Ollama reads each from.
OPTIONS = {"temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "seed": "seed", "stop": "stop",
           "presence_penalty": "presence_penalty", "frequency_penalty": "frequency_penalty",
           "max_tokens": "num_predict", "max_completion_tokens": "num_predict"}


def chat_to_ollama(chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
    """A chat-completions request as an Ollama ``/api/chat`` body."""
    names: dict[str, str] = {}  # call id -> the tool it called
    messages: list[dict[str, Any]] = []
    for message in chat.get("messages") or ():
        if not isinstance(message, Mapping):
            continue
        role = message.get("role")
        content = text_of(message.get("content"), "\n")
        if role in ("system", "developer"):
            messages.append({"role": "system", "content": content})
        elif role == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": content}
            calls = []
            for call in message.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, Mapping) else None
                if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
                    continue
                said: dict[str, Any] = {"function": {"name": fn["name"], "arguments": arguments_object(fn.get("arguments"))}}
                if isinstance(call.get("id"), str):
                    said = {"id": call["id"], **said}
                    names[call["id"]] = fn["name"]
                calls.append(said)
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
        elif role == "tool":
            ident = message.get("tool_call_id")
            if not isinstance(ident, str) or ident not in names:
                # Ollama pairs nothing (a result is named by its tool), so it would answer as if the
                # call had been made: refused here, as the client's own API refuses it.
                raise invalid_request(f"messages with role 'tool' must be a response to a preceding message with "
                                      f"'tool_calls' (tool_call_id {ident!r} answers none)", param="messages")
            messages.append({"role": "tool", "content": content, "tool_name": names[ident], "tool_call_id": ident})
        else:  # user, and any role Ollama should judge itself
            messages.append({"role": role, "content": content})
    body: dict[str, Any] = {"model": chat.get("model"), "messages": messages, "stream": stream}
    tools = [t for t in chat.get("tools") or () if isinstance(t, Mapping) and isinstance(t.get("function"), Mapping)]
    if tools:
        body["tools"] = tools
    options = {OPTIONS[k]: v for k, v in chat.items() if k in OPTIONS and v is not None}
    if options:
        body["options"] = options
    fmt = chat.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_object":
        body["format"] = "json"
    elif isinstance(fmt, Mapping) and isinstance((schema := fmt.get("json_schema")), Mapping):
        body["format"] = schema.get("schema", {})
    return body


def ollama_completion(body: Mapping[str, Any], model: str) -> dict[str, Any]:
    """Ollama's whole answer (one object) as a ``chat.completion``."""
    given = body.get("message")
    message: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    calls = []
    for call in message.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            ident = call.get("id")
            calls.append({"id": ident if isinstance(ident, str) and ident else "call_" + secrets.token_hex(12),
                          "type": "function",
                          "function": {"name": fn["name"], "arguments": arguments_text(fn.get("arguments"))}})
    content = message.get("content") if isinstance(message.get("content"), str) else ""
    said: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
    if calls:
        said["tool_calls"] = calls
    finish = finish_reason(body.get("done_reason"), bool(calls))
    return {"id": "chatcmpl-" + secrets.token_hex(12), "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": said, "finish_reason": finish}], "usage": usage_of(body)}


class OllamaUpstream(DecodedUpstream):
    name = "ollama"
    path = "/api/chat"
    decoder = LineDecoder
    reader = OllamaAsChunks

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return chat_to_ollama(chat, stream)

    def streams(self, response: httpx.Response) -> bool:
        return "application/x-ndjson" in response.headers.get("content-type", "")

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        if self.streams(response):
            return await self.fold(response, model)
        try:  # ``stream: false``: one object
            body = await read_json(response)
        finally:
            await response.aclose()
        if isinstance(body.get("error"), str):
            raise ProxyError(502, error_body(f"the upstream reported an error: {body['error']}",
                                             type="upstream_error", code="upstream_error"))
        return ollama_completion(body, model)
