"""The request checks Ollama's ``/api/chat`` makes before it generates anything: pure, no I/O.
Each refusal is a 400 with ``{"error": "..."}`` worded as Ollama words it (its JSON decoding
errors come from Go's ``encoding/json``):

* ``model`` is required ("model is required": ``server/routes.go`` ``ChatHandler``);
* a message's ``content`` is a string: a list of parts is refused
  (https://github.com/BerriAI/litellm/issues/11273: "cannot unmarshal array into Go struct
  field ChatRequest.messages.content of type string");
* an assistant call's ``function.arguments`` is an object: a JSON string is refused
  (https://github.com/ollama/ollama/issues/12794, https://github.com/aliasrobotics/cai/issues/76:
  "cannot unmarshal string into Go struct field
  ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments");
* ``think`` is a boolean or one of its levels (``api/types.go`` ``ThinkValue.UnmarshalJSON``);
* a role other than ``system``, ``user``, ``assistant`` and ``tool`` is one no chat template
  renders (docs/api.md: "either system, user, assistant, or tool").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mock_backends.validation import RequestProblem

ROLES = frozenset({"system", "user", "assistant", "tool"})
THINK_LEVELS = frozenset({"high", "medium", "low", "max"})
_GO_TYPES = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number",
             type(None): "null"}


def _unmarshal(value: Any, field: str, into: str) -> RequestProblem:
    kind = _GO_TYPES.get(type(value), "value")
    return RequestProblem(f"json: cannot unmarshal {kind} into Go struct field ChatRequest.{field} of type {into}",
                          "invalid_request", field)


def check_ollama(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason Ollama refuses ``body``, or None."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return RequestProblem("model is required", "invalid_request", "model")
    think = body.get("think")
    if think is not None and not isinstance(think, bool) and think not in THINK_LEVELS:
        return RequestProblem(f'invalid think value: {think!r} (must be "high", "medium", "low", "max", true, or '
                              "false)", "invalid_request", "think")
    messages = body.get("messages", [])
    if not isinstance(messages, list):
        return _unmarshal(messages, "messages", "[]api.Message")
    for message in messages:
        if not isinstance(message, Mapping):
            return _unmarshal(message, "messages", "api.Message")
        content = message.get("content", "")
        if not isinstance(content, str):
            return _unmarshal(content, "messages.content", "string")
        role = message.get("role")
        if not isinstance(role, str) or role.lower() not in ROLES:
            return RequestProblem(f"invalid role: {role!r} (must be system, user, assistant or tool)",
                                  "invalid_request", "messages")
        calls = message.get("tool_calls", [])
        for call in calls if isinstance(calls, list) else [calls]:
            function = call.get("function") if isinstance(call, Mapping) else None
            arguments = function.get("arguments", {}) if isinstance(function, Mapping) else {}
            if not isinstance(arguments, Mapping):
                return _unmarshal(arguments, "messages.tool_calls.function.arguments",
                                  "api.ToolCallFunctionArguments")
    return None
