"""Messages requests built from plain data, for the tests of what a proxy sends upstream."""

from __future__ import annotations

import json
from typing import Any

REMINDER = "<system-reminder>\nDo what has been asked; nothing more, nothing less.\n</system-reminder>"


def system_message(text: str = REMINDER, *, blocks: bool = False) -> dict[str, Any]:
    """A ``system`` message inside ``messages``, as Claude Code 2.1.197 sends its reminders
    (beta ``mid-conversation-system-2026-04-07``): its content a string or text blocks."""
    return {"role": "system", "content": [{"type": "text", "text": text}] if blocks else text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def messages_request(*messages: dict[str, Any], system: str | None = None, stream: bool = False,
                     model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    """A Messages request body holding ``messages`` (and a top-level ``system`` prompt when given)."""
    body: dict[str, Any] = {"model": model, "max_tokens": 1024, "messages": list(messages)}
    if system is not None:
        body["system"] = system
    if stream:
        body["stream"] = True
    return body


def encoded(body: dict[str, Any]) -> bytes:
    return json.dumps(body).encode()
