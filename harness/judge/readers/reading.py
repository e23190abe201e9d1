"""How a client of each wire dialect reads one exchange: one reader per dialect.

An exchange is parsed once (``Reading`` keeps its stream's events, their chunks or typed
events, and its body, each read on first use); the reader of the client's dialect folds
them into the shared ``Answer`` and says which events of a stream report an error.
Adding a dialect is one reader here over its own events module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, Protocol

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.core.exchange import Exchange
from harness.judge.readers.anthropic_events import (
    AnthropicEvent,
    answer_from_message,
    assemble_anthropic_stream,
    read_events,
)
from harness.judge.readers.assemble import (
    Answer,
    Payload,
    ResponseKind,
    answer_from_body,
    assemble_stream,
    parse_body,
    response_kind,
    stream_payloads,
)
from harness.judge.readers.kiro_events import read_kiro_stream
from harness.judge.readers.ollama_events import read_ollama_lines, read_ollama_whole
from harness.judge.readers.responses_events import ResponsesEvent, answer_from_response, assemble_responses_stream
from harness.judge.readers.responses_events import read_events as read_responses_events
from harness.judge.readers.sdk_compat import SdkReading, read_anthropic_stream, read_responses_stream, read_stream
from harness.judge.readers.sse import SSEEvent, SSEStream, parse_events

NOTHING = Answer("", (), None, None, None)


class Reading:
    """One exchange read in ``dialect``, each part parsed once, on demand."""

    def __init__(self, exchange: Exchange, dialect: WireDialect) -> None:
        self.exchange = exchange
        self.reader = READERS[dialect]

    @cached_property
    def kind(self) -> ResponseKind:
        return response_kind(self.exchange)

    @cached_property
    def stream(self) -> SSEStream:
        return parse_events(self.exchange.raw)

    @cached_property
    def payloads(self) -> tuple[Payload, ...]:
        """A chat-completions stream's payloads."""
        return stream_payloads(self.stream.events)

    @cached_property
    def events(self) -> tuple[AnthropicEvent, ...]:
        """A Messages stream's events, every one of them (a Messages stream has no terminator)."""
        return read_events(self.stream.events)

    @cached_property
    def responses_events(self) -> tuple[ResponsesEvent, ...]:
        """A Responses stream's events, every one of them."""
        return read_responses_events(self.stream.events)

    @cached_property
    def body(self) -> tuple[Any, str | None]:
        return parse_body(self.exchange.raw)

    @cached_property
    def answer(self) -> Answer:
        """What the client holds: folded from the stream, read from the body, or nothing."""
        if self.kind == "sse":
            return self.reader.streamed(self)
        return self.reader.whole(self.body[0]) if self.kind == "json" else NOTHING

    @cached_property
    def stream_errors(self) -> tuple[SSEEvent, ...]:
        """The events of the stream that report an error, in the dialect's shape."""
        return self.reader.errors(self)


class Reader(Protocol):
    """How a client of one dialect reads an answer."""

    def streamed(self, reading: Reading) -> Answer: ...

    def whole(self, body: Any) -> Answer: ...

    def errors(self, reading: Reading) -> tuple[SSEEvent, ...]: ...

    def sdk(self, raw: bytes, headers: Mapping[str, str]) -> SdkReading:
        """The stream as the dialect's official SDK reads it."""
        ...


class ChatReader:
    """Chat Completions: chunks folded as the openai SDK folds them; an error is a payload."""

    whole = staticmethod(answer_from_body)  # a body read whole
    sdk = staticmethod(read_stream)  # the stream as the official SDK reads it

    def streamed(self, reading: Reading) -> Answer:
        return assemble_stream(reading.payloads)

    def errors(self, reading: Reading) -> tuple[SSEEvent, ...]:
        return tuple(p.event for p in reading.payloads if p.error is not None)


class MessagesReader:
    """Anthropic Messages: typed events folded into content blocks; an error is ``event: error``."""

    whole = staticmethod(answer_from_message)  # a body read whole
    sdk = staticmethod(read_anthropic_stream)  # the stream as the official SDK reads it

    def streamed(self, reading: Reading) -> Answer:
        # Both Anthropic SDKs raise at ``event: error`` (Claude Code reads through the TypeScript
        # one): what a stream relays after it never reaches the client's answer.
        events = reading.events
        cut = next((i for i, event in enumerate(events) if event.is_error), None)
        return assemble_anthropic_stream(events if cut is None else events[: cut + 1])

    def errors(self, reading: Reading) -> tuple[SSEEvent, ...]:
        return tuple(e.event for e in reading.events if e.is_error)


class ResponsesReader:
    """OpenAI Responses: output items folded from their events; an error is an ``error`` or failure event."""

    whole = staticmethod(answer_from_response)  # a body read whole
    sdk = staticmethod(read_responses_stream)  # the stream as the official SDK reads it

    def streamed(self, reading: Reading) -> Answer:
        return assemble_responses_stream(reading.responses_events)

    def errors(self, reading: Reading) -> tuple[SSEEvent, ...]:
        return tuple(e.event for e in reading.responses_events if e.is_error)


class UpstreamOnlyReader:
    """A dialect no client speaks (its stream is not SSE), so its reader reads what a backend
    of it sent: the raw stream by ``read_raw``, an error being part of the answer; with no SDK
    of its own, the SDK's reading is that same answer."""

    read_raw: Callable[[bytes], Answer]

    def streamed(self, reading: Reading) -> Answer:
        return self.read_raw(reading.exchange.raw)

    def errors(self, reading: Reading) -> tuple[SSEEvent, ...]:
        return ()

    def sdk(self, raw: bytes, headers: Mapping[str, str]) -> SdkReading:
        answer = self.read_raw(raw)
        return SdkReading(answer.content, answer.tool_calls, answer.finish_reason,
                          None if answer.error is None else str(answer.error.get("message")), answer.error is not None)


class KiroReader(UpstreamOnlyReader):
    """Kiro: binary event-stream messages; it has no non-streamed answer."""

    read_raw = staticmethod(read_kiro_stream)

    def whole(self, body: Any) -> Answer:
        return NOTHING


class OllamaReader(UpstreamOnlyReader):
    """Ollama: NDJSON lines, or one object."""

    read_raw = staticmethod(read_ollama_lines)
    whole = staticmethod(read_ollama_whole)  # a body read whole


READERS: Mapping[WireDialect, Reader] = {OPENAI: ChatReader(), ANTHROPIC: MessagesReader(), RESPONSES: ResponsesReader(),
                                         KIRO: KiroReader(), OLLAMA: OllamaReader()}


def read_answer(exchange: Exchange) -> Answer:
    """The answer the client of ``exchange``'s profile reads from it (for the xml-client
    profile the caller parses the content with ``harness.judge.readers.xml_calls``)."""
    return Reading(exchange, exchange.profile.answers).answer
