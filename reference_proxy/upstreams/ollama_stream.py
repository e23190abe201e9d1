"""Ollama's answer: NDJSON lines read off the socket, then read as chat chunks.

``LineDecoder`` splits the body into lines however the network cuts it (a line may arrive
in many reads, several lines in one; a UTF-8 character cut between reads is joined before it
is decoded), scanning each new read once, so the work is linear in the body. Every line is one
SSE-like event whose data is the line's JSON text, so the relay and the pipelines run on them
unchanged; a ``{"error": "..."}`` line (Ollama's error once it has answered 200:
``server/routes.go`` ``streamResponse``), a line that is not a JSON object, or a body that ends
inside a line is an ``error`` event and ends the stream.

``OllamaAsChunks`` turns the lines into chat chunks. What Ollama does that the readers must
survive (each cited by the scenarios ``ollama-*`` and ``faults-ollama-*``): a call arrives
whole in a line that is not the last, and the ``done: true`` line after it says
``done_reason: "stop"``; a line may carry several calls, each with ``function.index`` (which
counts calls from 0, or is 0 for every one); ``arguments`` is an object; ``message.thinking``
is the model's reasoning, not its answer. Each call is sent to the client with its own index
and its arguments as a JSON string, and an answer that called tools finishes with
``tool_calls`` (https://github.com/BerriAI/litellm/pull/37792 fixes the same three in a
gateway that missed them).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import Any

from httpx_sse import ServerSentEvent

from reference_proxy.translate.streams import ChunkWriter, Item
from reference_proxy.upstreams.decoded import error_event

MAX_LINE = 16 * 1024 * 1024


def _event(line: bytes) -> ServerSentEvent:
    text = line.decode("utf-8", "replace")
    try:
        value: Any = json.loads(text)
    except ValueError:
        return error_event(f"the upstream sent a line that is not JSON: {text[:200]!r}")
    if not isinstance(value, Mapping):
        return error_event(f"the upstream sent a line that is not a JSON object: {text[:200]!r}")
    if "error" in value:
        message = value["error"] if isinstance(value["error"], str) else json.dumps(value["error"])
        return error_event(f"the upstream reported an error: {message}")
    return ServerSentEvent(event="message", data=text)


class LineReader:
    """Complete lines out of bytes in any cuts; each read is scanned once."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        start = len(self.buffer)
        self.buffer += data
        out: list[bytes] = []
        at = 0
        end = self.buffer.find(b"\n", start)
        while end >= 0:
            line = bytes(self.buffer[at:end]).strip()
            if line:
                out.append(line)
            at = end + 1
            end = self.buffer.find(b"\n", at)
        del self.buffer[:at]
        return out


class LineDecoder:
    """An Ollama body's lines as events (a ``BodyDecoder``)."""

    def __init__(self) -> None:
        self.lines = LineReader()

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        batch = [_event(line) for line in self.lines.feed(data)]
        if len(self.lines.buffer) > MAX_LINE:
            batch.append(error_event(f"the upstream sent a line longer than {MAX_LINE} bytes"))
        return batch

    def finish(self) -> list[ServerSentEvent]:
        rest = bytes(self.lines.buffer).strip()
        if not rest:
            return []
        try:  # a last line without its line break counts when it is whole
            json.loads(rest)
        except ValueError:
            return [error_event(f"the upstream's stream ended inside a line ({len(rest)} bytes of it)")]
        return [_event(rest)]


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON string chat clients parse (Ollama sends an object)."""
    if isinstance(arguments, str):
        return arguments or "{}"
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


def finish_reason(done_reason: Any, called: bool) -> str:
    """The chat finish of an Ollama answer: calls make it ``tool_calls`` whatever ``done_reason``
    says (Ollama says ``stop``), unless it was cut at ``length``."""
    if done_reason == "length":
        return "length"
    return "tool_calls" if called else "stop"


def usage_of(done: Mapping[str, Any]) -> dict[str, int]:
    """The chat usage of an Ollama answer, from the counters of its ``done`` line (or whole body)."""
    counts = {k: v for k, v in done.items() if isinstance(v, int) and not isinstance(v, bool)}
    prompt, completion = counts.get("prompt_eval_count", 0), counts.get("eval_count", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class OllamaAsChunks(ChunkWriter):
    """Ollama lines (``LineDecoder``'s data) read as chat-completions chunks."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model, created=int(time.time()))
        self.calls = 0
        self.done_reason: str | None = None
        self.usage: dict[str, int] | None = None

    def _calls(self, message: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Every call of a line, each at the next index of the answer (never Ollama's own ``index``,
        which is 0 for every call of some parsers): calls come whole, one after another."""
        given = message.get("tool_calls")
        if isinstance(given, Mapping):
            given = [given]
        out = []
        for call in given if isinstance(given, list) else []:
            function = call.get("function") if isinstance(call, Mapping) else None
            if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
                continue
            ident = call.get("id")
            out.append({"index": self.calls, "id": ident if isinstance(ident, str) and ident else
                        "call_" + secrets.token_hex(12), "type": "function",
                        "function": {"name": function["name"], "arguments": arguments_text(function.get("arguments"))}})
            self.calls += 1
        return out

    def read_object(self, line: dict[str, Any]) -> list[Item]:
        out: list[Item] = []
        self.start(out)
        given = line.get("message")
        message: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            out.append(self.chunk({"reasoning_content": thinking}))
        text = message.get("content")
        if isinstance(text, str) and text:
            out.append(self.chunk({"content": text}))
        calls = self._calls(message)
        if calls:
            out.append(self.chunk({"tool_calls": calls}))
        if line.get("done") is True:
            reason = line.get("done_reason")
            self.done_reason = reason if isinstance(reason, str) else None
            self.usage = usage_of(line)
            out.extend(self.finish())
        return out

    def end(self) -> list[Item]:
        """The ``done`` line came, or the body ended without it: finish the answer."""
        out: list[Item] = []
        self.start(out)
        return [*out, *self.last(finish_reason(self.done_reason, self.calls > 0), self.usage)]
