"""Ollama's answer: NDJSON lines read off the socket, then read as chat chunks.

``ollama_events`` splits the body into lines however the network cuts it (a line may arrive
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
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from reference_proxy.connection import body_reads

FINISH = {"stop": "stop", "length": "length"}
MAX_LINE = 16 * 1024 * 1024


def _error(message: str, kind: str = "upstream_error") -> ServerSentEvent:
    return ServerSentEvent(event="error", data=json.dumps({"error": {"message": message, "type": kind}}))


def _event(line: bytes) -> ServerSentEvent:
    text = line.decode("utf-8", "replace")
    try:
        value: Any = json.loads(text)
    except ValueError:
        return _error(f"the upstream sent a line that is not JSON: {text[:200]!r}")
    if not isinstance(value, Mapping):
        return _error(f"the upstream sent a line that is not a JSON object: {text[:200]!r}")
    if "error" in value:
        message = value["error"] if isinstance(value["error"], str) else json.dumps(value["error"])
        return _error(f"the upstream reported an error: {message}")
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


async def ollama_events(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
    """The lines of an Ollama body as events, a list per network read; ends at the first error event."""
    reader = LineReader()
    async for piece in body_reads(response):
        batch = [_event(line) for line in reader.feed(piece)]
        if len(reader.buffer) > MAX_LINE:
            batch.append(_error(f"the upstream sent a line longer than {MAX_LINE} bytes"))
        cut = next((i for i, e in enumerate(batch) if e.event == "error"), None)
        if cut is not None:
            yield batch[: cut + 1]
            return
        if batch:
            yield batch
    rest = bytes(reader.buffer).strip()
    if rest:  # a last line without its line break counts when it is whole
        try:
            json.loads(rest)
        except ValueError:
            yield [_error(f"the upstream's stream ended inside a line ({len(rest)} bytes of it)")]
            return
        yield [_event(rest)]


def arguments_text(arguments: Any) -> str:
    """A call's arguments as the JSON string chat clients parse (Ollama sends an object)."""
    if isinstance(arguments, str):
        return arguments or "{}"
    return json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)


class OllamaAsChunks:
    """Ollama lines (``ollama_events``' data) read as chat-completions chunks."""

    def __init__(self, request_model: str) -> None:
        self.model = request_model
        self.id = "chatcmpl-" + secrets.token_hex(12)
        self.created = int(time.time())
        self.started = False
        self.ended = False
        self.calls = 0
        self.done_reason: str | None = None
        self.usage: dict[str, int] | None = None

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

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

    def read(self, data: str) -> list[Any]:
        if self.ended:
            return []
        try:
            line = json.loads(data)
        except ValueError:
            return [data]
        if not isinstance(line, Mapping):
            return [data]
        out: list[Any] = []
        if not self.started:
            self.started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))
        given = line.get("message")
        message: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            out.append(self._chunk({"reasoning_content": thinking}))
        text = message.get("content")
        if isinstance(text, str) and text:
            out.append(self._chunk({"content": text}))
        calls = self._calls(message)
        if calls:
            out.append(self._chunk({"tool_calls": calls}))
        if line.get("done") is True:
            reason = line.get("done_reason")
            self.done_reason = reason if isinstance(reason, str) else None
            counts = {k: v for k, v in line.items() if isinstance(v, int) and not isinstance(v, bool)}
            prompt, completion = counts.get("prompt_eval_count", 0), counts.get("eval_count", 0)
            self.usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            out.extend(self.finish())
        return out

    def finish(self) -> list[Any]:
        """The ``done`` line came, or the body ended without it: finish the answer. Calls make it
        ``tool_calls`` whatever ``done_reason`` says (Ollama says ``stop``), unless it was cut at ``length``."""
        if self.ended:
            return []
        out: list[Any] = []
        if not self.started:
            self.started = True
            out.append(self._chunk({"role": "assistant", "content": ""}))
        self.ended = True
        if self.done_reason == "length":
            reason = "length"
        elif self.calls:
            reason = "tool_calls"
        else:
            reason = FINISH.get(self.done_reason or "", "stop")
        last = self._chunk({}, reason)
        if self.usage is not None:
            last["usage"] = self.usage
        return [*out, last, "[DONE]"]
