"""What a strict upstream refuses besides what its API refuses: pure, no I/O.

Armed with ``backend.strict`` (``--strict-upstream``), the mock answers as a self-hosted server
whose model's chat template is strict, so a proxy that relays a real client's request unchanged
is judged by what such a server would do:

- a system (or developer) message after a user or assistant message: 400 "System message must be
  at the beginning." The Qwen, Llama and Gemma chat templates raise it (``raise_exception`` in
  the template), and servers relay it as a 400: Rapid-MLX
  (https://github.com/raullenchai/Rapid-MLX/issues/1543: ``{"error": {"message": "Chat template
  error: System message must be at the beginning.", "type": "invalid_request_error"}}``), vLLM
  and Fireworks behind LiteLLM (https://github.com/BerriAI/litellm/pull/39852,
  https://github.com/BerriAI/litellm/pull/39282). VS Code Copilot Chat sends such a second
  system message to custom endpoints (https://github.com/microsoft/vscode/issues/324335).
- more tools than OpenAI's documented maximum of 128 (``tools``: "A max of 128 functions are
  supported", https://platform.openai.com/docs/api-reference/chat/create): 400 with OpenAI's
  words for an array too long.

Unknown fields are not refused: vLLM takes them and logs them (``extra="allow"`` since
https://github.com/vllm-project/vllm/pull/10463), as llama.cpp's server does.

Only the Chat Completions route is strict this way: the template error is what a chat template
raises, and the servers cited above already fold system text of their Messages and Responses
routes into one leading system message (Rapid-MLX #1543).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mock_backends.validation import RequestProblem

MAX_TOOLS = 128
TEMPLATE_ERROR = "Chat template error: System message must be at the beginning."
_SYSTEM_ROLES = frozenset({"system", "developer"})


def check_chat_strict(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason a strict chat-template server refuses ``body`` (already valid Chat
    Completions), or None."""
    tools = body.get("tools")
    if isinstance(tools, list) and len(tools) > MAX_TOOLS:
        return RequestProblem(f"Invalid 'tools': array too long. Expected an array with maximum length {MAX_TOOLS}, "
                              f"but got an array with length {len(tools)} instead.", "array_above_max_length", "tools")
    seen_turn = False
    for message in body.get("messages") or ():
        role = message.get("role") if isinstance(message, Mapping) else None
        if role in _SYSTEM_ROLES:
            if seen_turn:
                return RequestProblem(TEMPLATE_ERROR, "invalid_request_error", "messages")
        else:
            seen_turn = True
    return None


def check_none(body: Mapping[str, Any]) -> RequestProblem | None:
    """A route that is no stricter than its API."""
    return None
