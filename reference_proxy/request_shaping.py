"""What the proxy checks and changes on the way in: body validation, headers, and the
optional request rewrites (system text moved into the first user message).

Pure: bytes and mappings in, mappings out, ``ProxyError`` for a bad request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from reference_proxy.errors import invalid_request
from reference_proxy.rescue import ToolSpec, tools_from_request

#: Never forwarded: they describe one hop, not the request (RFC 9110 7.6.1), or the
#: proxy sets them itself. Accept-Encoding is dropped so the upstream's SSE is not
#: compressed, which would hold tokens back in the compressor. ``Expect: 100-continue``
#: is the client's handshake with this server, which has already read the body; passed
#: on, it would make the upstream wait for a continuation that never comes, or refuse.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "expect",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
    }
)

#: Headers that carry the client's credentials on either API.
CREDENTIALS = frozenset({"authorization", "x-api-key"})


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated chat-completions request and what the proxy needs to know about it."""

    body: dict[str, Any]
    stream: bool
    include_usage: bool
    model: str
    tools: tuple[ToolSpec, ...]


def load_body(raw: bytes) -> dict[str, Any]:
    """The client's body as a JSON object with a ``messages`` list; ``ProxyError`` (400) otherwise."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise invalid_request(
            "We could not parse the JSON body of your request: it is not valid JSON.", code="invalid_json"
        ) from None
    if not isinstance(body, dict):
        raise invalid_request(
            f"The request body must be a JSON object, got {type(body).__name__}.", code="invalid_body"
        )
    if "messages" not in body:
        raise invalid_request("Missing required parameter: 'messages'.", param="messages", code="missing_required_parameter")
    if not isinstance(body["messages"], list):
        raise invalid_request(
            "Invalid type for 'messages': expected an array.", param="messages", code="invalid_type"
        )
    stream = body.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise invalid_request("Invalid type for 'stream': expected a boolean.", param="stream", code="invalid_type")
    return body


def _model(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    return model if isinstance(model, str) else ""


def parse_chat_request(raw: bytes) -> ChatRequest:
    """Validate the client's body; ``ProxyError`` (400) names what is wrong."""
    body = load_body(raw)
    stream = bool(body.get("stream"))
    options = body.get("stream_options")
    include_usage = stream and isinstance(options, Mapping) and options.get("include_usage") is True
    return ChatRequest(
        body=body,
        stream=stream,
        include_usage=include_usage,
        model=_model(body),
        tools=tuple(tools_from_request(body)),
    )


@dataclass(frozen=True, slots=True)
class MessagesRequest:
    """A validated Anthropic Messages request."""

    body: dict[str, Any]
    stream: bool
    model: str
    tools: tuple[ToolSpec, ...]


#: The turns the Messages API knows. Top-level ``system`` is the system prompt; a ``system``
#: message may also stand inside ``messages`` (text only), as Claude Code 2.1.197 sends its
#: <system-reminder> text after user and assistant turns (beta header ``anthropic-beta:
#: mid-conversation-system-2026-04-07``): it is kept where it stands, in every upstream API.
MESSAGE_ROLES = ("user", "assistant", "system")


def parse_messages_request(raw: bytes) -> MessagesRequest:
    """Validate a Messages body (JSON object, ``messages`` a list of user/assistant turns and
    text-only system messages, ``stream`` a boolean); ``ProxyError`` (400) names what is wrong."""
    body = load_body(raw)
    for i, message in enumerate(body["messages"]):
        if not isinstance(message, Mapping):
            raise invalid_request(f"messages.{i}: expected an object.", param="messages", code="invalid_type")
        role = message.get("role")
        if role not in MESSAGE_ROLES:
            what = "is missing" if role is None else f"is {json.dumps(role, ensure_ascii=False)[:80]}"
            raise invalid_request(f"messages.{i}.role {what}: expected 'user', 'assistant' or 'system'.",
                                  param="messages", code="invalid_value")
        if role == "system" and not _is_text(message.get("content")):
            raise invalid_request(f"messages.{i}.content: a system message holds a string or text blocks only.",
                                  param="messages", code="invalid_value")
    return MessagesRequest(body=body, stream=bool(body.get("stream")), model=_model(body), tools=anthropic_tools(body))


def _is_text(content: Any) -> bool:
    """Whether ``content`` is a string or a list of text blocks."""
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(b, Mapping) and b.get("type") == "text" and isinstance(b.get("text"), str) for b in content
    )


def anthropic_tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    """The client tools a Messages request declares (``name`` and ``input_schema``); server
    tools (a ``type`` other than ``custom``) and malformed entries are skipped."""
    out: list[ToolSpec] = []
    for tool in body.get("tools") or ():
        if not isinstance(tool, Mapping) or tool.get("type", "custom") not in ("custom", None):
            continue
        name = tool.get("name")
        if isinstance(name, str) and name:
            schema = tool.get("input_schema")
            out.append(ToolSpec(name, schema if isinstance(schema, Mapping) else None))
    return tuple(out)


def count_tool_messages(body: Mapping[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or () if isinstance(m, Mapping) and m.get("role") == "tool")


def forward_headers(
    headers: Iterable[tuple[str, str]], api_key: str | None, *, with_body: bool = True, key_header: str = "authorization"
) -> dict[str, str]:
    """The client's headers minus hop-by-hop ones. A configured key replaces the client's
    credentials, whichever header carried them: it is sent as ``Authorization: Bearer``
    (``key_header="authorization"``) or ``x-api-key`` (``key_header="x-api-key"``, for a
    Messages upstream), and neither of the client's own goes upstream."""
    pairs = list(headers)
    named_by_connection = {
        token.strip().lower() for name, value in pairs if name.lower() == "connection" for token in value.split(",")
    }
    out: dict[str, str] = {}
    for name, value in pairs:
        lower = name.lower()
        if lower in HOP_BY_HOP or lower in named_by_connection:
            continue
        if lower in CREDENTIALS and api_key is not None:
            continue
        out[lower] = value
    if api_key is not None:
        out[key_header] = api_key if key_header == "x-api-key" else f"Bearer {api_key}"
    if with_body:
        out["content-type"] = "application/json"
    else:
        out.pop("content-type", None)
    out["accept-encoding"] = "identity"
    return out


def _system_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)
        )
    return ""


def system_to_user(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The body with system messages removed and their text prepended to the first user
    message inside ``<system_context>``; None when there is nothing to move.

    Done on every turn, not only the first: a stateless backend that ignores system
    prompts would otherwise lose the instructions from the second turn on.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return None
    systems = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "system"]
    first_user = next((m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"), None)
    if not systems or first_user is None:
        return None  # with no user message to carry it, the system text stays where it is
    texts = [t for t in (_system_text(m.get("content")) for m in systems) if t.strip()]
    block = "<system_context>\n" + "\n\n".join(texts) + "\n</system_context>\n\n" if texts else ""
    system_ids = {id(m) for m in systems}
    new_messages: list[Any] = []
    for message in messages:
        if id(message) in system_ids:
            continue
        if message is first_user and block:
            content = message.get("content")
            if isinstance(content, list):
                new_content: Any = [{"type": "text", "text": block}, *content]
            elif content is None:
                new_content = block.rstrip("\n")
            else:
                new_content = block + str(content)
            message = {**message, "content": new_content}
        new_messages.append(message)
    return {**body, "messages": new_messages}
