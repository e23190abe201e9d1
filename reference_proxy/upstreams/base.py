"""What the client routes know of an upstream API: one ``Upstream`` object per API the
proxy can call, chosen once from the configuration (``upstreams.upstream_for``).

The routes never ask which API the upstream speaks. They hand it the client's request and
read its answer back through it:

* a request of the upstream's own API goes as it came (byte for byte); any other is said
  as the neutral chat-completions request it amounts to, which ``from_chat`` translates;
* its stream is read as chat chunks (``chunk_reader``) or as Messages events
  (``event_reader``), its whole answer as a ``chat.completion`` (``completion``) or a
  Messages ``message`` (``message``).

A subclass states its URL, its translation from the neutral request and its readers; the
defaults here carry the other client APIs through the neutral form, so a new upstream
dialect serves every client route once those are written.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import httpx
from httpx_sse import ServerSentEvent

from reference_proxy.completion import StreamAccumulator
from reference_proxy.connection import events, is_event_stream
from reference_proxy.errors import ProxyError, error_body, upstream_bad_response
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.request_shaping import ChatRequest, forward_headers
from reference_proxy.responses_streams import ChainedReader
from reference_proxy.translate.answers import completion_to_message
from reference_proxy.translate.requests import messages_to_chat
from reference_proxy.translate.streams import ChunksAsEvents, ChunkWriter, UpstreamReader
from reference_proxy.upstreams.decoded import BodyDecoder, decoded_events

if TYPE_CHECKING:
    from reference_proxy.config import ProxyConfig

Headers = Iterable[tuple[str, str]]


class ReaderSink:
    """Folds a stream that a reader turns into chat chunks (Kiro's events, Ollama's lines)
    into one ``chat.completion``, for a client that did not ask to stream; an error event
    is raised as the upstream's error."""

    def __init__(self, request_model: str, reader: UpstreamReader) -> None:
        self.reader = reader
        self.accumulator = StreamAccumulator(request_model)

    def feed(self, event: ServerSentEvent) -> None:
        if event.event == "error":
            error = json.loads(event.data)["error"]
            raise ProxyError(502, error_body(error["message"], type=error["type"], code="upstream_error"))
        self._take(self.reader.read(event.data))

    def _take(self, items: list[Any]) -> None:
        for item in items:
            if isinstance(item, str):
                self.accumulator.feed_event("", item)
            else:
                self.accumulator.feed(item)

    def result(self) -> dict[str, Any]:
        self._take(self.reader.finish())
        return self.accumulator.result()


class EventSink(Protocol):
    """What folds an upstream SSE answer into one body (``StreamAccumulator``, ``MessageAccumulator``)."""

    @property
    def done(self) -> bool: ...

    def feed_event(self, event: str, data: str) -> None: ...

    def result(self) -> dict[str, Any]: ...


class ReadAnswer(Protocol):
    """How the proxy reads an upstream's whole answer: its JSON body, or its SSE folded by
    ``sink``; it always closes the response."""

    async def __call__(self, response: httpx.Response, sink: EventSink) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ClientBody:
    """A client's request body: its JSON value and the bytes that say it (the client's own,
    or the proxy's rewrite of it), sent as they are when no translation is needed."""

    value: Mapping[str, Any]
    wire: bytes


@dataclass(frozen=True, slots=True)
class Outgoing:
    """The request the proxy sends upstream."""

    url: str
    headers: dict[str, str]
    content: bytes


def as_wire(body: Mapping[str, Any]) -> bytes:
    return to_wire(dumps(body))


def without_anthropic(headers: Mapping[str, str]) -> dict[str, str]:
    """A Messages client's headers as an upstream of another API gets them (no ``anthropic-*``)."""
    return {k: v for k, v in headers.items() if not k.startswith("anthropic-")}


class Upstream(ABC):
    """One upstream API: its URL, its headers, the translation of a neutral request into its
    request, and the reading of its answers. ``name`` is the configuration's name for it."""

    name: ClassVar[str]
    # Where a request of this API is sent, below the configured upstream URL.
    path: ClassVar[str]
    # Whether it runs the tools a Responses server runs itself (``web_search`` …), as sent.
    runs_hosted_tools: ClassVar[bool] = False

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config

    # ------------------------------------------------------------------ requests

    @property
    def url(self) -> str:
        return f"{self.config.upstream}{self.path}"

    def headers(self, client: Headers) -> dict[str, str]:
        """The client's headers as this upstream takes them (the configured key in its header)."""
        return forward_headers(client, self.config.api_key)

    @abstractmethod
    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        """The neutral (chat-completions) request said in this API."""

    def chat_request(self, client: Headers, body: ClientBody, stream: bool) -> Outgoing:
        """What a chat-completions client's request becomes."""
        return Outgoing(self.url, self.headers(client), as_wire(self.from_chat(body.value, stream)))

    def messages_request(self, client: Headers, body: ClientBody, stream: bool) -> Outgoing:
        """What a Messages client's request becomes: by default said as chat, then in this API."""
        sent = self.from_chat(messages_to_chat(body.value), stream)
        return Outgoing(self.url, without_anthropic(self.headers(client)), as_wire(sent))

    def responses_request(self, client: Headers, body: ClientBody, chat: ChatRequest) -> Outgoing:
        """What a Responses client's request (``body``; ``chat`` is the chat request it amounts to) becomes."""
        return Outgoing(self.url, self.headers(client), as_wire(self.from_chat(chat.body, chat.stream)))

    def after_refusal(self, outgoing: Outgoing, refusal: str) -> Outgoing | None:
        """The request to send instead of ``outgoing`` after the upstream refused it with 400 and
        the error message ``refusal``, or None (the refusal goes to the client)."""
        return None

    # ------------------------------------------------------------------ answers

    def streams(self, response: httpx.Response) -> bool:
        """Whether its answer to a request is a stream to relay (rather than one JSON body)."""
        return is_event_stream(response)

    def read_events(self, default: Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]]
                    ) -> Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]]:
        """How its stream's body is read as events, a list per network read (SSE: ``default``)."""
        return default

    @abstractmethod
    def chunk_reader(self, model: str) -> UpstreamReader | None:
        """Its stream read as chat chunks; None when it streams chat chunks already."""

    def event_reader(self, model: str) -> UpstreamReader | None:
        """Its stream read as Messages events (through chat chunks); None when it streams Messages events."""
        chunks = self.chunk_reader(model)
        return ChunksAsEvents(model) if chunks is None else ChainedReader(chunks, ChunksAsEvents(model))

    @abstractmethod
    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        """Its whole answer (a JSON body, or a stream the client did not ask for) as a
        ``chat.completion`` before rescue; the response is closed."""

    async def message(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        """Its whole answer as a Messages ``message`` before rescue; the response is closed."""
        return completion_to_message(await self.completion(response, model, read), model)


class DecodedUpstream(Upstream):
    """An upstream whose stream is not SSE (Kiro's event stream, Ollama's NDJSON): its body is
    read as events by its ``decoder``, and they are read as chat chunks by its ``reader``.
    Such an API takes no ``anthropic-*`` header, whatever client the request came from."""

    decoder: ClassVar[type[BodyDecoder]]
    reader: ClassVar[type[ChunkWriter]]

    def headers(self, client: Headers) -> dict[str, str]:
        return without_anthropic(super().headers(client))

    def read_events(self, default: Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]]
                    ) -> Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]]:
        return self.body_events

    def body_events(self, response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
        return decoded_events(response, self.decoder())

    def chunk_reader(self, model: str) -> UpstreamReader | None:
        return self.reader(model)

    async def fold(self, response: httpx.Response, model: str) -> dict[str, Any]:
        """Its stream folded into one ``chat.completion``, for a client that did not ask to
        stream; the response is closed."""
        reader = self.chunk_reader(model)
        sink = ReaderSink(model, self.reader(model) if reader is None else reader)
        try:
            async for batch in self.read_events(events)(response):
                for event in batch:
                    sink.feed(event)
        except httpx.HTTPError as exc:
            raise upstream_bad_response(f"the stream broke off: {type(exc).__name__}") from None
        finally:
            await response.aclose()
        return sink.result()
