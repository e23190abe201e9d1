"""The proxy's HTTP shell: routes, forwarding, and the choice of answer path.

Everything that decides *what* to send lives in the pure modules (request_shaping,
pipeline, completion, loop_guard, tool_choice, anthropic_stream, anthropic_message);
streamed answers are written by ``relay``. This module only moves bytes and turns
every failure into an error in the client's API shape (OpenAI, or Messages on the
``/messages`` routes), so no traceback ever reaches a client.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypedDict, TypeVar

import httpx
from httpx_sse import ServerSentEvent
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from reference_proxy.anthropic_errors import render_error
from reference_proxy.anthropic_message import MessageAccumulator, finish_message, message_as_events
from reference_proxy.anthropic_stream import AnthropicStreamPipeline
from reference_proxy.completion import StreamAccumulator, completion_as_chunks, finish_completion
from reference_proxy.config import ProxyConfig
from reference_proxy.errors import (
    INVALID_REQUEST,
    ProxyError,
    error_body,
    internal_error,
    request_timeout,
    upstream_bad_response,
    upstream_timeout,
)
from reference_proxy.loop_guard import stop_completion, stop_message, stop_stream
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.pipeline import RescuerFactory, ResponseStats, StreamPipeline, rescuer_for
from reference_proxy.relay import SSE_HEADERS, RelayPipeline, RelayResponse
from reference_proxy.rescue import ToolSpec
from reference_proxy.request_shaping import (
    ChatRequest,
    MessagesRequest,
    anthropic_tools,
    count_tool_messages,
    forward_headers,
    parse_chat_request,
    parse_messages_request,
    system_to_user,
)
from reference_proxy.responses_route import responses, upstream_completion
from reference_proxy.responses_requests import chat_to_responses_request
from reference_proxy.responses_streams import ChainedReader, ResponsesAsChunks
from reference_proxy.tool_choice import emulate_tool_choice
from reference_proxy.translate.answers import completion_to_message
from reference_proxy.translate.requests import chat_to_messages, messages_to_chat
from reference_proxy.translate.streams import ChunksAsEvents, EventsAsChunks, TranslatedPipeline, UpstreamReader
from reference_proxy.upstream import Upstream, describe, events, is_event_stream, read_json
from reference_proxy.xml_client import is_xml_client

log = logging.getLogger("reference_proxy")
ANTHROPIC_VERSION = "2023-06-01"  # sent to a Messages upstream when the client (of the other API) sent none

# How a streamed upstream answer of another API is read as chat chunks (for a chat client) or as
# Messages events (for a Messages client), by the upstream's API.
CHUNK_READERS: Mapping[str, Callable[[str], UpstreamReader]] = {"anthropic": EventsAsChunks,
                                                                "responses": ResponsesAsChunks}
EVENT_READERS: Mapping[str, Callable[[str], UpstreamReader]] = {
    "openai": ChunksAsEvents,
    "responses": lambda model: ChainedReader(ResponsesAsChunks(model), ChunksAsEvents(model)),
}

def error_response(error: ProxyError) -> JSONResponse:
    return JSONResponse(dict(error.body), status_code=error.status, headers=dict(error.headers))


def anthropic_error_response(error: ProxyError) -> JSONResponse:
    """``error`` as a Messages client expects it: ``{"type": "error", "error": {...}}``."""
    return JSONResponse(render_error(error), status_code=error.status, headers=dict(error.headers))


def _is_messages_path(path: str) -> bool:
    return path.rstrip("/").endswith("/messages")


class EventSink(Protocol):
    """What folds an upstream SSE answer into one body (``StreamAccumulator``, ``MessageAccumulator``)."""

    @property
    def done(self) -> bool: ...

    def feed_event(self, event: str, data: str) -> None: ...

    def result(self) -> dict[str, Any]: ...


class AnswerPipeline(RelayPipeline, Protocol):
    """A streamed answer's pipeline as the handlers use it (``StreamPipeline``, ``AnthropicStreamPipeline``)."""

    @property
    def stats(self) -> ResponseStats: ...

    @property
    def model(self) -> str: ...

    def feed(self, payload: Mapping[str, Any]) -> str: ...


def _parse_messages(raw: bytes) -> tuple[MessagesRequest, dict[str, Any] | None]:
    """A Messages request and the body to send upstream instead of the client's (tool_choice emulated)."""
    req = parse_messages_request(raw)
    return req, emulate_tool_choice(req.body)


@dataclass(frozen=True)
class Parts:
    """The pieces of the proxy another variant of it may replace, each behind the interface
    the handlers use; the defaults are the reference proxy itself. The test suite's broken
    proxies are built this way (``create_app(config, parts=Parts(chat_pipeline=...))``), so
    one app instance can differ while the proxy served next to it stays correct."""

    # A streamed chat answer: called like ``StreamPipeline``, with keyword arguments.
    chat_pipeline: Callable[..., StreamPipeline] = StreamPipeline
    # A streamed Messages answer: called like ``AnthropicStreamPipeline``.
    messages_pipeline: Callable[..., AnthropicStreamPipeline] = AnthropicStreamPipeline
    # Whether a User-Agent names a client that reads tool calls as XML in the text.
    xml_client: Callable[[str | None, Sequence[str]], bool] = is_xml_client
    # A Messages request body: the parsed request, and the body to send instead (None: as it came).
    parse_messages: Callable[[bytes], tuple[MessagesRequest, dict[str, Any] | None]] = _parse_messages
    # The upstream's SSE body as events, a list per network read.
    upstream_events: Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]] = events


_T = TypeVar("_T")


def _log_request(
    method: str, path: str, status: int, started: float, *, stream: bool | None = None, xml_client: bool = False,
    model: str = "", stats: ResponseStats | None = None, note: str = "",
) -> None:
    parts = [f"{method} {path} {status}"]
    if stream is not None:
        parts.append("stream" if stream else "whole")
    if xml_client:
        parts.append("xml-client")
    if model:
        parts.append(f"model={model}")
    if stats is not None:
        parts.append(f"calls={stats.rescued}r+{stats.native}n")
        if stats.duplicates:
            parts.append(f"dup={stats.duplicates}")
        if stats.finish_reason:
            parts.append(f"finish={stats.finish_reason}")
        if stats.overflowed:
            parts.append("overflow")
        if stats.skipped_events:
            parts.append(f"skipped={stats.skipped_events}")
        if stats.error:
            parts.append(f"error={stats.error!r}")
    if note:
        parts.append(note if len(note) <= 200 else note[:199] + "…")
    parts.append(f"{(time.perf_counter() - started) * 1000:.1f}ms")
    log.info(" ".join(parts))


class RescueOptions(TypedDict, total=False):
    """Keyword arguments of the pipelines that choose their rescuer."""

    rescuer_factory: RescuerFactory


class ProxyApp:
    """Request handlers bound to one configuration and one upstream client."""

    def __init__(self, config: ProxyConfig, parts: Parts | None = None) -> None:
        self.config = config
        self.parts = parts or Parts()
        self.upstream = Upstream(config)

    # ------------------------------------------------------------------ shared by both APIs

    def _rescuers(self, model: str) -> RescueOptions:
        """The ``rescuer_factory`` of a model whose formats ``rescue_formats`` chooses;
        nothing for ``auto``, so the pipelines keep their own default."""
        formats = self.config.formats_for(model)
        return RescueOptions() if formats is None else RescueOptions(rescuer_factory=rescuer_for(formats))

    async def _client_request(
        self, request: Request, started: float, parse: Callable[[bytes], _T], render: Callable[[ProxyError], Response]
    ) -> tuple[bytes, _T] | Response:
        """The client's body and what ``parse`` makes of it, or the answer to give instead."""
        path = request.url.path
        try:
            raw = await read_body(request, self.config.body_timeout)
            return raw, parse(raw)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, note=exc.message)
            return render(exc)
        except ClientDisconnect:
            _log_request("POST", path, 499, started, note="client hung up while sending its request")
            return Response(status_code=400)  # nobody is left to read it

    def _relay(self, upstream: httpx.Response, pipeline: AnswerPipeline, path: str, started: float, xml_client: bool) -> Response:
        """Stream the upstream's SSE through ``pipeline``; the request is logged when the answer ends."""

        def done(hung_up: bool) -> None:
            _log_request(
                "POST", path, 200, started, stream=True, xml_client=xml_client, model=pipeline.model,
                stats=pipeline.stats, note="client hung up" if hung_up else "",
            )

        return RelayResponse(upstream, pipeline, done, read_events=self.parts.upstream_events)

    @staticmethod
    def _rewrapped(
        pipeline: AnswerPipeline, events: Iterable[Mapping[str, Any]], path: str, started: float, xml_client: bool
    ) -> Response:
        """A streaming client's answer built from an upstream answer that came in one piece."""
        out = [pipeline.feed(event) for event in events]
        out.append(pipeline.close())
        _log_request("POST", path, 200, started, stream=True, xml_client=xml_client, model=pipeline.model, stats=pipeline.stats, note="rewrapped")
        return Response(to_wire("".join(out)), media_type="text/event-stream", headers=SSE_HEADERS)

    async def _read_answer(self, upstream: httpx.Response, sink: EventSink) -> dict[str, Any]:
        """The upstream's whole answer: its JSON body, or its SSE folded by ``sink``; always closes the response."""
        try:
            if is_event_stream(upstream):
                await self._accumulate(upstream, sink)
                return sink.result()
            return await read_json(upstream)
        finally:
            await upstream.aclose()

    # ------------------------------------------------------------------ chat

    async def chat(self, request: Request) -> Response:
        started = time.perf_counter()
        path = request.url.path
        received = await self._client_request(request, started, parse_chat_request, error_response)
        if isinstance(received, Response):
            return received
        raw, chat = received
        xml_client = self.parts.xml_client(request.headers.get("user-agent"), self.config.xml_client_patterns)

        limit = self.config.loop_guard_max_tool_messages
        if limit is not None:
            tool_messages = count_tool_messages(chat.body)
            if tool_messages > limit:
                text = stop_message(tool_messages, limit)
                _log_request("POST", path, 200, started, stream=chat.stream, model=chat.model, note="loop-guard")
                if chat.stream:
                    body = stop_stream(text, chat.model, include_usage=chat.include_usage)
                    return Response(to_wire(body), media_type="text/event-stream", headers=SSE_HEADERS)
                return JSONResponse(stop_completion(text, chat.model))

        content = raw
        sent: Mapping[str, Any] = chat.body
        if self.config.system_to_user:
            rewritten = system_to_user(chat.body)
            if rewritten is not None:
                content = to_wire(dumps(rewritten))
                sent = rewritten
        headers = forward_headers(request.headers.items(), self.config.api_key)
        api = self.config.calls_upstream("openai")
        url = self.config.chat_url
        try:
            if api == "anthropic":  # an Anthropic upstream: the request and its answer are translated
                content = to_wire(dumps(chat_to_messages(sent)))
                headers = forward_headers(request.headers.items(), self.config.api_key, key_header="x-api-key")
                headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
                url = self.config.messages_url
            elif api == "responses":  # a Responses upstream: likewise
                content = to_wire(dumps(chat_to_responses_request(sent, chat.stream)))
                url = self.config.responses_url
            upstream = await self.upstream.open("POST", url, headers, content)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=chat.stream, xml_client=xml_client, model=chat.model, note=exc.message)
            return error_response(exc)

        if chat.stream:
            pipeline = self.parts.chat_pipeline(
                tools=chat.tools,
                xml_client=xml_client,
                include_usage=chat.include_usage,
                request_model=chat.model,
                buffer_cap=self.config.buffer_cap,
                **self._rescuers(chat.model),
            )
            if is_event_stream(upstream):
                reader = CHUNK_READERS.get(api)
                relayed: AnswerPipeline = pipeline if reader is None else TranslatedPipeline(pipeline, reader(chat.model))
                return self._relay(upstream, relayed, path, started, xml_client)
            return await self._rewrap(upstream, pipeline, chat, path, started, xml_client, api)
        return await self._whole(upstream, chat, path, started, xml_client, api)

    async def _completion(self, upstream: httpx.Response, chat: ChatRequest, api: str) -> dict[str, Any]:
        """The upstream's whole answer (in ``api``) as a ``chat.completion`` (translated from another API's)."""
        return await upstream_completion(self, upstream, chat.model, api)

    async def _rewrap(
        self, upstream: httpx.Response, pipeline: StreamPipeline, chat: ChatRequest, path: str, started: float,
        xml_client: bool, api: str,
    ) -> Response:
        """A streaming client whose upstream answered with one JSON body."""
        try:
            body = await self._completion(upstream, chat, api)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=True, xml_client=xml_client, model=chat.model, note=exc.message)
            return error_response(exc)
        return self._rewrapped(pipeline, completion_as_chunks(body), path, started, xml_client)

    async def _whole(
        self, upstream: httpx.Response, chat: ChatRequest, path: str, started: float, xml_client: bool, api: str
    ) -> Response:
        """A non-streaming client: one JSON answer (accumulated if the upstream streamed anyway)."""
        try:
            body = await self._completion(upstream, chat, api)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=False, xml_client=xml_client, model=chat.model, note=exc.message)
            return error_response(exc)
        stats = finish_completion(body, tools=chat.tools, xml_client=xml_client, buffer_cap=self.config.buffer_cap,
                                  **self._rescuers(chat.model))
        model = body.get("model")
        _log_request("POST", path, 200, started, stream=False, xml_client=xml_client, model=model if isinstance(model, str) else "", stats=stats)
        return Response(to_wire(dumps(body)), media_type="application/json")

    async def _accumulate(self, upstream: httpx.Response, accumulator: EventSink) -> None:
        try:
            async for batch in self.parts.upstream_events(upstream):
                for sse in batch:
                    accumulator.feed_event(sse.event, sse.data)
                    if accumulator.done:
                        return
        except httpx.TimeoutException as exc:
            raise upstream_timeout(f"reading the stream: {describe(exc)}") from None
        except httpx.HTTPError as exc:
            raise upstream_bad_response(f"the stream broke off: {describe(exc)}") from None

    # ------------------------------------------------------------------ messages

    async def messages(self, request: Request) -> Response:
        """The Anthropic Messages API in front of a Messages upstream."""
        started = time.perf_counter()
        path = request.url.path
        received = await self._client_request(request, started, self.parts.parse_messages, anthropic_error_response)
        if isinstance(received, Response):
            return received
        raw, (req, shaped) = received
        content = raw
        tools = req.tools
        if shaped is not None:
            content = to_wire(dumps(shaped))
            tools = anthropic_tools(shaped)  # tool_choice none: nothing may become a call
        headers = forward_headers(request.headers.items(), self.config.api_key, key_header="x-api-key")
        api = self.config.calls_upstream("anthropic")
        url = self.config.messages_url
        if api != "anthropic":  # an OpenAI (Responses) upstream: the request and its answer are translated
            chat_body = messages_to_chat(shaped if shaped is not None else req.body)
            sent = chat_body if api == "openai" else chat_to_responses_request(chat_body, req.stream)
            content = to_wire(dumps(sent))
            headers = {k: v for k, v in forward_headers(request.headers.items(), self.config.api_key).items()
                       if not k.startswith("anthropic-")}
            url = self.config.chat_url if api == "openai" else self.config.responses_url
        try:
            upstream = await self.upstream.open("POST", url, headers, content)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=req.stream, model=req.model, note=exc.message)
            return anthropic_error_response(exc)
        if not req.stream:
            return await self._whole_message(upstream, req, tools, path, started, api)
        pipeline = self.parts.messages_pipeline(tools=tools, request_model=req.model, buffer_cap=self.config.buffer_cap,
                                                **self._rescuers(req.model))
        if is_event_stream(upstream):
            reader = EVENT_READERS.get(api)
            relayed: AnswerPipeline = pipeline if reader is None else TranslatedPipeline(pipeline, reader(req.model))
            return self._relay(upstream, relayed, path, started, False)
        try:  # a streaming client whose upstream answered with one JSON body
            body = await self._message(upstream, req, api)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=True, model=req.model, note=exc.message)
            return anthropic_error_response(exc)
        return self._rewrapped(pipeline, message_as_events(body), path, started, False)

    async def _message(self, upstream: httpx.Response, req: MessagesRequest, api: str) -> dict[str, Any]:
        """The upstream's whole answer as a ``message`` (translated from a ``chat.completion`` or a ``response``)."""
        if api != "anthropic":
            return completion_to_message(await upstream_completion(self, upstream, req.model, api), req.model)
        return await self._read_answer(upstream, MessageAccumulator(req.model))

    async def _whole_message(
        self, upstream: httpx.Response, req: MessagesRequest, tools: tuple[ToolSpec, ...], path: str, started: float,
        api: str,
    ) -> Response:
        """A non-streaming Messages client: one ``message`` (accumulated if the upstream streamed anyway)."""
        try:
            body = await self._message(upstream, req, api)
        except ProxyError as exc:
            _log_request("POST", path, exc.status, started, stream=False, model=req.model, note=exc.message)
            return anthropic_error_response(exc)
        stats = finish_message(body, tools=tools, buffer_cap=self.config.buffer_cap,
                               **self._rescuers(req.model))
        model = body.get("model")
        _log_request("POST", path, 200, started, stream=False, model=model if isinstance(model, str) else "", stats=stats)
        return Response(to_wire(dumps(body)), media_type="application/json")

    # ------------------------------------------------------------------ other routes

    async def models(self, request: Request) -> Response:
        started = time.perf_counter()
        headers = forward_headers(request.headers.items(), self.config.api_key, with_body=False)
        url = self.config.models_url
        if request.url.query:
            url = f"{url}?{request.url.query}"
        try:
            upstream = await self.upstream.open("GET", url, headers)
            try:
                body = await read_json(upstream)
            finally:
                await upstream.aclose()
        except ProxyError as exc:
            _log_request("GET", request.url.path, exc.status, started, note=exc.message)
            return error_response(exc)
        _log_request("GET", request.url.path, 200, started)
        return JSONResponse(body)

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstream": self.config.upstream})


async def read_body(request: Request, idle_timeout: float) -> bytes:
    """The whole request body; ``ProxyError`` 408 when the client pauses longer than
    ``idle_timeout`` between two pieces (a stalled client never holds a handler forever)."""
    parts: list[bytes] = []
    pieces = request.stream().__aiter__()
    while True:
        try:
            async with asyncio.timeout(idle_timeout):
                piece = await anext(pieces)
        except StopAsyncIteration:
            return b"".join(parts)
        except TimeoutError:
            raise request_timeout(idle_timeout) from None
        parts.append(piece)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = {404: f"Unknown route {request.url.path}", 405: f"Method {request.method} not allowed on {request.url.path}"}
    body = error_body(message.get(status, str(getattr(exc, "detail", "error"))), type=INVALID_REQUEST, code=status)
    if _is_messages_path(request.url.path):
        return anthropic_error_response(ProxyError(status, body, getattr(exc, "headers", None)))
    return JSONResponse(body, status_code=status, headers=getattr(exc, "headers", None))


async def _unhandled(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    if _is_messages_path(request.url.path):
        return anthropic_error_response(internal_error())
    return error_response(internal_error())


def create_app(config: ProxyConfig, parts: Parts | None = None) -> Starlette:
    """The proxy as an ASGI app; one pooled upstream client lives as long as the app.
    ``parts`` replaces pieces of it (see ``Parts``); by default it is the reference proxy."""
    proxy = ProxyApp(config, parts)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        _ = proxy.upstream.client  # create the pool at startup, not in the first request
        try:
            yield
        finally:
            await proxy.upstream.aclose()

    routes = [
        Route("/v1/chat/completions", proxy.chat, methods=["POST"]),
        Route("/chat/completions", proxy.chat, methods=["POST"]),
        Route("/v1/messages", proxy.messages, methods=["POST"]),
        Route("/messages", proxy.messages, methods=["POST"]),
        Route("/v1/responses", partial(responses, proxy), methods=["POST"]),
        Route("/responses", partial(responses, proxy), methods=["POST"]),
        Route("/v1/models", proxy.models, methods=["GET"]),
        Route("/models", proxy.models, methods=["GET"]),
        Route("/health", proxy.health, methods=["GET"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _unhandled},
    )
    app.state.proxy = proxy
    return app
