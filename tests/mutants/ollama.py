"""Ollama gateway mutants: the reference proxy calling Ollama's native ``/api/chat``
(``Mutant.upstream`` ``ollama``), with one thing gateways get wrong about its NDJSON answer,
each after a habit of Ollama's (the scenarios of ``scenarios/ollama`` and
``scenarios/faults/ollama-*`` cite where each was seen). Each is the reference's Ollama
upstream with one piece swapped (``Parts.upstreams``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
from httpx_sse import ServerSentEvent
from mutants.base import EventsReader, Mutant, upstream_with, with_parts
from reference_proxy.connection import body_reads
from reference_proxy.parts import Parts
from reference_proxy.upstreams.ollama import OllamaUpstream
from reference_proxy.upstreams.decoded import decoded_events
from reference_proxy.upstreams.ollama_stream import LineDecoder, OllamaAsChunks

DONE_STOP = "ollama-call-then-done-stop"
DONE_STOP_MESSAGES = "ollama-call-then-done-stop-anthropic"
INDEX_ZERO = "ollama-parallel-calls-index-zero"
ONE_LINE = "ollama-parallel-calls-one-line"
IN_DONE = "ollama-calls-in-done-line"
THINKING = "ollama-thinking-before-call"
CUT_LINES = "ollama-line-cut-mid-json"
REQUEST = "ollama-request-conversation"
WHOLE = "ollama-whole-answer"
ERROR_LINE = "faults-ollama-error-line"


def ollama_with(reader: type[OllamaAsChunks] | None = None, events: EventsReader | None = None,
                request: Callable[[dict[str, Any]], None] | None = None) -> Parts:
    """The reference with its Ollama upstream changed (``upstream_with``)."""
    return upstream_with(OllamaUpstream, reader, events, request)


def _line(data: str) -> dict[str, Any]:
    value = json.loads(data)
    return value if isinstance(value, dict) else {}


class EndsAtToolChunk(OllamaAsChunks):
    """Takes the first line with calls for the end of the answer, as if calls always came last."""

    def read(self, data: str) -> list[Any]:
        out = super().read(data)
        if self.calls and not self.ended:
            out.extend(self.finish())
        return out


class TrustsDoneReason(OllamaAsChunks):
    """Holds the calls until the done line and sends them only if done_reason says the answer
    called tools; Ollama says "stop", so they are never sent."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model)
        self.held: list[Any] = []

    def read(self, data: str) -> list[Any]:
        out = super().read(data)
        kept = []
        for item in out:
            if isinstance(item, dict) and "tool_calls" in item["choices"][0]["delta"]:
                self.held.append(item)
            else:
                kept.append(item)
        return kept

    def finish(self) -> list[Any]:
        if self.ended:
            return []
        self.calls = 0  # done_reason "stop": no calls, as far as this gateway knows
        return super().finish()


class UsesOllamaIndex(OllamaAsChunks):
    """Numbers each call by Ollama's ``function.index``, which is 0 for every call of most parsers."""

    def read(self, data: str) -> list[Any]:
        out = super().read(data)
        line = _line(data)
        indexes = [c.get("function", {}).get("index", 0) for c in line.get("message", {}).get("tool_calls") or ()]
        for item in out:
            if isinstance(item, dict):
                for call, index in zip(item["choices"][0]["delta"].get("tool_calls", ()), indexes):
                    call["index"] = index
        return out


class FirstCallOfALine(OllamaAsChunks):
    """Reads only ``tool_calls[0]`` of a line."""

    def read(self, data: str) -> list[Any]:
        line = _line(data)
        message = line.get("message")
        if isinstance(message, dict) and isinstance(message.get("tool_calls"), list):
            message["tool_calls"] = message["tool_calls"][:1]
        return super().read(json.dumps(line))


class DoneLineIsOnlyTheEnd(OllamaAsChunks):
    """Reads the done line for its finish and counters only, never its message."""

    def read(self, data: str) -> list[Any]:
        line = _line(data)
        if line.get("done") is True:
            line["message"] = {"role": "assistant", "content": ""}
        return super().read(json.dumps(line))


class ThinkingAsContent(OllamaAsChunks):
    """Shows ``message.thinking`` as the answer's text."""

    def read(self, data: str) -> list[Any]:
        line = _line(data)
        message = line.get("message")
        if isinstance(message, dict) and message.get("thinking"):
            message["content"] = message.pop("thinking") + message.get("content", "")
        return super().read(json.dumps(line))


async def _lines_per_read(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
    """Parses each network read as whole lines, skipping what does not parse."""
    async for piece in body_reads(response):
        batch = []
        for line in piece.split(b"\n"):
            try:
                json.loads(line)
            except ValueError:
                continue
            batch.append(ServerSentEvent(event="message", data=line.decode("utf-8", "replace")))
        if batch:
            yield batch


async def _without_error_lines(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
    async for batch in decoded_events(response, LineDecoder()):
        kept = [event for event in batch if event.event != "error"]
        if kept:
            yield kept


def _string_arguments(body: dict[str, Any]) -> None:
    for message in body["messages"]:
        for call in message.get("tool_calls", ()):
            call["function"]["arguments"] = json.dumps(call["function"]["arguments"])


def _no_stream_flag(body: dict[str, Any]) -> None:
    body.pop("stream", None)


MUTANTS: tuple[Mutant, ...] = (
    Mutant("ollama-ends-at-tool-chunk", "Takes the first line with a call for the end of the answer, so a second "
           "call in a later line is lost.",
           ("CALLS-001",), (INDEX_ZERO,), with_parts(ollama_with(EndsAtToolChunk)), upstream="ollama"),
    Mutant("ollama-trusts-done-reason", "Sends the calls only when done_reason says the answer called tools; Ollama "
           "says \"stop\", so the calls are lost.",
           ("CALLS-001",), (DONE_STOP, DONE_STOP_MESSAGES), with_parts(ollama_with(TrustsDoneReason)),
           upstream="ollama"),
    Mutant("ollama-uses-ollama-index", "Numbers each call by Ollama's function.index, 0 for every call of most "
           "parsers, so parallel calls merge into one.",
           ("CALLS-001",), (INDEX_ZERO,), with_parts(ollama_with(UsesOllamaIndex)), upstream="ollama"),
    Mutant("ollama-first-call-of-a-line", "Reads only tool_calls[0] of a line.",
           ("CALLS-001",), (ONE_LINE,), with_parts(ollama_with(FirstCallOfALine)), upstream="ollama"),
    Mutant("ollama-done-line-is-only-the-end", "Reads the done line for its finish and counters, never its message, "
           "so a call in it is lost.",
           ("CALLS-001",), (IN_DONE,), with_parts(ollama_with(DoneLineIsOnlyTheEnd)), upstream="ollama"),
    Mutant("ollama-thinking-as-content", "Shows message.thinking as the answer's text.",
           ("TEXT-001",), (THINKING,), with_parts(ollama_with(ThinkingAsContent)), upstream="ollama"),
    Mutant("ollama-lines-per-read", "Parses each network read as whole lines, so a line cut between two reads is "
           "lost.",
           ("TEXT-001",), (CUT_LINES,), with_parts(ollama_with(events=_lines_per_read)), upstream="ollama"),
    Mutant("ollama-ignores-error-line", "Skips an {\"error\"} line, so an answer Ollama broke off looks complete.",
           ("FAULT-001",), (ERROR_LINE,), with_parts(ollama_with(events=_without_error_lines)), upstream="ollama"),
    Mutant("ollama-string-arguments-upstream", "Sends the history's call arguments to Ollama as the JSON string the "
           "client holds, which Ollama refuses.",
           ("UP-001",), (REQUEST,), with_parts(ollama_with(request=_string_arguments)), upstream="ollama",
           strict=True),
    Mutant("ollama-no-stream-flag", "Leaves out the stream flag, so Ollama streams to a client that did not ask to.",
           ("UP-001",), (WHOLE,), with_parts(ollama_with(request=_no_stream_flag)), upstream="ollama",
           strict=True),
)
