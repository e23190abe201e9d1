"""An Ollama ``/api/chat`` answer read as what it says: the NDJSON lines of a stream (text
from each ``message.content``, calls from each ``message.tool_calls`` in the order they came,
``done_reason`` and the counters of the ``done: true`` line, the first ``{"error"}`` line as
the error), or the one object of a whole answer. Pure.

No client reads Ollama itself; this is how the harness reads what the mock sent upstream
(a recorded answer), as a gateway calling Ollama should have understood it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from harness.judge.readers.assemble import Answer, AssembledCall

NOTHING = Answer("", (), None, None, None)


def _calls(message: Mapping[str, Any], start: int) -> list[AssembledCall]:
    out: list[AssembledCall] = []
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        name = function["name"] if isinstance(function.get("name"), str) else ""
        given = function.get("arguments")
        arguments = given if isinstance(given, str) else json.dumps(given if given is not None else {})
        ident = call.get("id") if isinstance(call.get("id"), str) else None
        out.append(AssembledCall(start + len(out), ident, name, arguments))
    return out


def read_ollama_lines(raw: bytes) -> Answer:
    text: list[str] = []
    calls: list[AssembledCall] = []
    finish: str | None = None
    usage: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            error = {"type": "ndjson_error", "message": f"a line that is not JSON: {line[:80]!r}"}
            break
        if not isinstance(value, Mapping):
            continue
        if "error" in value:
            error = {"type": "error", "message": str(value.get("error"))}
            break
        message = value.get("message")
        message = message if isinstance(message, Mapping) else {}
        if isinstance(message.get("content"), str):
            text.append(message["content"])
        calls.extend(_calls(message, len(calls)))
        if value.get("done") is True:
            reason = value.get("done_reason")
            finish = reason if isinstance(reason, str) else finish
            usage = {k: value[k] for k in ("prompt_eval_count", "eval_count") if k in value}
    return Answer("".join(text), tuple(calls), finish, usage, error)


def read_ollama_whole(body: Any) -> Answer:
    if not isinstance(body, Mapping):
        return NOTHING
    if isinstance(body.get("error"), str):
        return Answer("", (), None, None, {"type": "error", "message": body["error"]})
    return read_ollama_lines(json.dumps(body).encode())
