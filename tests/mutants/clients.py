"""Mutants that real clients' requests expose: played under a real client's profile
(``--client-profile copilot-chat``, ``claude-code``), some against a strict upstream."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from harness.core.dialects.clients import CLIENTS
from mutants.anthropic import NATIVE as MESSAGES_NATIVE
from mutants.base import Mutant, reference, with_parts
from mutants.openai import NATIVE as CHAT_NATIVE
from reference_proxy.config import ProxyConfig
from mutants.translation import refuses_system_messages
from reference_proxy.parts import Parts
from reference_proxy.upstreams.base import Outgoing, Upstream

STRICT_TEMPLATE = "translation-copilot-second-system-strict-template"


def relays_refusal(upstream: Upstream, outgoing: Outgoing, refusal: str) -> Outgoing | None:
    """A proxy that passes a system message after a user message through unchanged and relays
    the strict template's refusal instead of putting the system text first."""
    return None


TOOL_CAP = 32


class ToolsCut:
    """The reference proxy behind a cut of the client's tool list (``cut`` says what is kept)."""

    def __init__(self, app: ASGIApp, cut: Callable[[list[Any]], list[Any]]) -> None:
        self.app = app
        self.cut = cut

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = bool(message.get("more_body", False))
        try:
            data = json.loads(body)
            if isinstance(data, dict) and isinstance(data.get("tools"), list):
                data["tools"] = self.cut(data["tools"])
                body = json.dumps(data).encode()
        except ValueError:
            pass
        given = False

        async def replay() -> Message:
            nonlocal given
            if given:
                return await receive()
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
        await self.app({**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}, replay, send)


def caps_tools(config: ProxyConfig) -> ASGIApp:
    """Its first ``TOOL_CAP`` tools only, as a proxy with a fixed tool budget would cut Copilot
    Chat's (63 tools and the case's)."""
    return ToolsCut(reference(config), lambda tools: tools[:TOOL_CAP])


def drops_namespaces(config: ProxyConfig) -> ASGIApp:
    """No ``namespace`` tool: what a proxy that reads only ``type: function`` tools offers a
    chat upstream of Codex CLI's request (its sub-agent and MCP functions never reach the model)."""
    return ToolsCut(reference(config), lambda tools: [t for t in tools
                                                      if not (isinstance(t, dict) and t.get("type") == "namespace")])


MUTANTS: tuple[Mutant, ...] = (
    Mutant("passes-second-system-through",
           "Relays Copilot Chat's second system message (after a user message) to a chat upstream unchanged, so a "
           "Qwen, Llama or Gemma chat template refuses the request with 400 and Copilot shows no answer.",
           ("HTTP-003",), (STRICT_TEMPLATE,), with_parts(Parts(after_refusal=relays_refusal)),
           profile=CLIENTS["copilot-chat"]),
    Mutant("refuses-claude-code-system-reminder",
           "Refuses Claude Code 2.1.197's requests, which always carry a `system` message inside `messages` (its "
           "<system-reminder> text), with 400.",
           ("HTTP-003",), (MESSAGES_NATIVE,), with_parts(Parts(parse_messages=refuses_system_messages)),
           profile=CLIENTS["claude-code"]),
    Mutant("caps-tool-list",
           f"Offers the upstream only the first {TOOL_CAP} tools of a request, so the case's own tool after Copilot "
           "Chat's 63 never reaches the model.",
           ("UP-004",), (CHAT_NATIVE,), caps_tools, profile=CLIENTS["copilot-chat"]),
    Mutant("drops-codex-namespace-tools",
           "Offers a chat upstream only the `type: function` tools of Codex CLI 0.171.0's request, so the functions "
           "of its `namespace` tool (its sub-agent and MCP functions) never reach the model.",
           ("UP-004",), (CHAT_NATIVE,), drops_namespaces, profile=CLIENTS["codex"], upstream="openai"),
)
