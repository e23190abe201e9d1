"""A Kiro event stream read as the answer it says: text from ``assistantResponseEvent``s,
calls gathered from ``toolUseEvent``s by ``toolUseId`` (an event without one continues
the open call), the stop reason and usage of the ``metadataEvent``, and the first
exception or damaged frame as the error. Pure.

No client reads Kiro itself; this is how the harness reads what the mock sent upstream
(a recorded answer), as a Kiro gateway should have understood it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.eventstream import Decoder
from harness.judge.readers.assemble import Answer, AssembledCall


@dataclass
class _Call:
    id: str | None
    name: str
    input: list[str] = field(default_factory=list)


def _payload(raw: bytes, event_type: str | None) -> Mapping[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(value, Mapping):
        return {}
    nested = value.get(event_type) if event_type else None  # a payload may sit under its own event's name
    return nested if isinstance(nested, Mapping) else value


def read_kiro_stream(raw: bytes) -> Answer:
    decoder = Decoder()
    messages = decoder.feed(raw)
    decoder.finish()
    text: list[str] = []
    calls: list[_Call] = []
    finish: str | None = None
    usage: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    for message in messages:
        payload = _payload(message.payload, message.event_type)
        if message.message_type != "event":
            error = {"type": message.event_type or message.message_type, "message": str(payload.get("message", ""))}
            break
        kind = message.event_type
        if kind == "assistantResponseEvent" and isinstance(payload.get("content"), str):
            text.append(payload["content"])
        elif kind == "toolUseEvent":
            ident = payload["toolUseId"] if isinstance(payload.get("toolUseId"), str) else None
            name = payload["name"] if isinstance(payload.get("name"), str) else ""
            open_call = calls[-1] if calls else None
            if open_call is None or (ident is not None and open_call.id is not None and ident != open_call.id):
                open_call = _Call(ident, name)
                calls.append(open_call)
            open_call.id = open_call.id or ident
            open_call.name = open_call.name or name
            given = payload.get("input")
            if isinstance(given, str):
                open_call.input.append(given)
            elif isinstance(given, Mapping):
                open_call.input = [json.dumps(given)]
        elif kind == "metadataEvent":
            reason = payload.get("stopReason")
            finish = reason if isinstance(reason, str) else finish
            found = payload.get("tokenUsage")
            usage = found if isinstance(found, Mapping) else usage
    if error is None and decoder.failed is not None:
        error = {"type": "event_stream_error", "message": str(decoder.failed)}
    return Answer("".join(text), tuple(AssembledCall(i, c.id, c.name, "".join(c.input)) for i, c in enumerate(calls)),
                  finish, usage, error)
