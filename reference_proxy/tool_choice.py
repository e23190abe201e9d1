"""``tool_choice`` of a Messages request, emulated for backends that do not honour it.

- ``none``: the backend is offered no tools at all, so it cannot call one;
- ``any``: the tools stay, and a directive requiring at least one tool call is
  appended to the last user turn;
- ``{"type": "tool", "name": X}``: the same, with a directive that names X.

``tool_choice`` itself is then removed from the upstream request (the proxy has taken
over its meaning); ``auto``, or no ``tool_choice``, leaves the request as it is. Pure:
a body in, the rewritten body (or None when nothing changes) out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_proxy.errors import invalid_request

DIRECTIVE_ANY = (
    "[Tool use required] Answer this message by calling at least one of the available tools; "
    "do not reply with text only."
)
DIRECTIVE_TOOL = "[Tool use required] Answer this message by calling the tool `{name}`; do not reply with text only."
ONE_CALL = " Make exactly one tool call."


def directive(kind: str, name: str | None = None, *, single: bool = False) -> str:
    """The text appended to the last user turn for ``any`` or ``tool`` (``single``: parallel use disabled)."""
    text = DIRECTIVE_TOOL.format(name=name) if kind == "tool" else DIRECTIVE_ANY
    return text + ONE_CALL if single else text


def _declared(body: Mapping[str, Any]) -> list[str]:
    return [t["name"] for t in body.get("tools") or () if isinstance(t, Mapping) and isinstance(t.get("name"), str)]


def _with_directive(messages: list[Any], text: str) -> list[Any] | None:
    """``messages`` with ``text`` appended to the last user turn; None without a user turn."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            new_content: Any = [*content, {"type": "text", "text": text}]
        elif isinstance(content, str) and content:
            new_content = f"{content}\n\n{text}"
        else:
            new_content = text
        return [*messages[:i], {**message, "content": new_content}, *messages[i + 1 :]]
    return None


def emulate_tool_choice(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The body to send upstream for the client's ``tool_choice``; None when it is sent as is.

    ``ProxyError`` (400) for a ``{"type": "tool"}`` choice without a name or naming a tool
    the request does not declare, as the Messages API answers."""
    choice = body.get("tool_choice")
    if not isinstance(choice, Mapping):
        return None
    kind = choice.get("type")
    rest = {k: v for k, v in body.items() if k != "tool_choice"}
    if kind == "none":
        rest.pop("tools", None)
        return rest
    if kind not in ("any", "tool"):
        return None  # auto, or a kind this proxy does not know: the upstream decides
    name = choice.get("name")
    if kind == "tool":
        if not isinstance(name, str) or not name:
            raise invalid_request("tool_choice.name: Field required for type 'tool'.", param="tool_choice")
        if name not in _declared(body):
            raise invalid_request(
                f"tool_choice names the tool {name!r}, which is not among the request's tools.", param="tool_choice"
            )
    text = directive(kind, name if isinstance(name, str) else None, single=choice.get("disable_parallel_tool_use") is True)
    messages = body.get("messages")
    updated = _with_directive(messages, text) if isinstance(messages, list) else None
    if updated is not None:
        rest["messages"] = updated
    return rest
