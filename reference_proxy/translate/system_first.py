"""System text first, for a Chat Completions upstream.

Many self-hosted chat servers render the conversation with the model's chat template, and the
Qwen, Llama and Gemma templates refuse a system message anywhere but first: 400 "System message
must be at the beginning." (https://github.com/raullenchai/Rapid-MLX/issues/1543,
https://github.com/BerriAI/litellm/pull/39852). Real clients send such messages: VS Code Copilot
Chat a second system message after the user's (https://github.com/microsoft/vscode/issues/324335),
Claude Code its <system-reminder> text as a ``system`` message inside Messages ``messages``, Codex
developer items. A chat upstream first gets such a message where the client put it (its place is
part of its meaning, and most servers take it); when the upstream refuses it with the template's
error, the proxy sends the request again with one leading system message, as Rapid-MLX itself
retries (https://github.com/raullenchai/Rapid-MLX/pull/1742): a later system or developer
message's text joins it, in order, and keeps its authority (it never becomes a user's words); the
conversation's turns stay as they were.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_proxy.translate.requests import text_of

_SYSTEM = ("system", "developer")
#: What such a server's refusal says (the templates' own words).
TEMPLATE_REFUSAL = "System message must be at the beginning"


def late_system(messages: Any) -> bool:
    """Whether a system or developer message follows another turn."""
    seen_turn = False
    for message in messages if isinstance(messages, list) else ():
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in _SYSTEM and seen_turn:
            return True
        seen_turn = seen_turn or role not in _SYSTEM
    return False


def system_first(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with every system and developer text in one leading system message, in order
    (itself when no system message follows a turn)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not late_system(messages):
        return dict(body)
    texts = [text_of(m.get("content")) for m in messages if isinstance(m, Mapping) and m.get("role") in _SYSTEM]
    turns = [m for m in messages if not (isinstance(m, Mapping) and m.get("role") in _SYSTEM)]
    return {**body, "messages": [{"role": "system", "content": "\n\n".join(t for t in texts if t)}, *turns]}
