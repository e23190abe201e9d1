"""The request checks Kiro's ``generateAssistantResponse`` makes before it generates
anything: pure, no I/O. Every refusal is the API's one message, "Improperly formed request."
(with the mock's reason after it), as the gateways report it:

* ``conversationState.currentMessage.userInputMessage`` is required, with string ``content``;
* ``history`` alternates ``userInputMessage`` and ``assistantResponseMessage`` entries
  (https://github.com/hank9999/kiro.rs, ``src/anthropic/converter.rs``, ``build_history``);
* a ``toolUseId`` is used by one call only, and a tool result answers a call made
  earlier, once (kiro.rs ``validate_tool_pairing``; AIClient-2-API dedupes toolResults for the
  same reason: https://github.com/justlovemaki/AIClient2API/pull/94);
* a tool called in the history is declared in the current message's tools
  (https://github.com/decolua/9router/pull/1582).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mock_backends.validation import RequestProblem

MESSAGE = "Improperly formed request."


def _problem(reason: str, param: str) -> RequestProblem:
    return RequestProblem(f"{MESSAGE} ({reason})", "improperly_formed_request", param)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def check_kiro(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason the API refuses ``body``, or None."""
    state = body.get("conversationState")
    if not isinstance(state, Mapping):
        return _problem("conversationState is required", "conversationState")
    current = _map(_map(state.get("currentMessage")).get("userInputMessage"))
    if not current or not isinstance(current.get("content"), str):
        return _problem("currentMessage.userInputMessage.content is required", "conversationState.currentMessage")
    calls: set[str] = set()
    answered: set[str] = set()
    called_names: set[str] = set()
    history = state.get("history", [])
    if not isinstance(history, list):
        return _problem("history must be a list", "conversationState.history")
    expected = "userInputMessage"
    for i, entry in enumerate([*history, {"userInputMessage": current}]):
        if not isinstance(entry, Mapping) or expected not in entry:
            return _problem(f"history[{i}] must be a {expected} (the history alternates user and assistant)",
                            "conversationState.history")
        if expected == "assistantResponseMessage":
            for use in _list(_map(entry[expected]).get("toolUses")):
                ident = use.get("toolUseId")
                if not isinstance(ident, str) or ident in calls:
                    return _problem(f"toolUseId {ident!r} is missing or used twice", "conversationState.history")
                calls.add(ident)
                if isinstance(use.get("name"), str):
                    called_names.add(use["name"].lower())
        else:
            context = _map(_map(entry[expected]).get("userInputMessageContext"))
            for result in _list(context.get("toolResults")):
                ident = result.get("toolUseId")
                if ident not in calls or ident in answered:
                    return _problem(f"toolResult for {ident!r} answers no call of the history, or answers it twice",
                                    "conversationState")
                answered.add(str(ident))
        expected = "userInputMessage" if expected == "assistantResponseMessage" else "assistantResponseMessage"
    tools = _list(_map(current.get("userInputMessageContext")).get("tools"))
    declared = {str(_map(t.get("toolSpecification")).get("name", "")).lower() for t in tools}
    missing = sorted(called_names - declared)
    if missing:
        return _problem(f"tools called in the history are not declared: {', '.join(missing)}",
                        "conversationState.currentMessage.userInputMessage.userInputMessageContext.tools")
    return None
