"""What every client route shares: the proxy (configuration, replaceable parts, the pooled
connection, the upstream each client API is served by) and one request's context (its
path, clock, headers, upstream and error shape), with the answer paths common to all:
relaying a stream, rewrapping a whole answer as a stream, reading a whole answer."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict, TypeVar

import httpx
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from reference_proxy.anthropic_errors import render_error
from reference_proxy.config import ProxyConfig
from reference_proxy.connection import UpstreamConnection, describe, is_event_stream, read_json
from reference_proxy.errors import ProxyError, request_timeout, upstream_bad_response, upstream_timeout
from reference_proxy.openai_stream import to_wire
from reference_proxy.parts import Parts
from reference_proxy.pipeline import RescuerFactory, ResponseStats, rescuer_for
from reference_proxy.read_deadline import ReadDeadline
from reference_proxy.relay import SSE_HEADERS, RelayPipeline, RelayResponse
from reference_proxy.upstreams import EventSink, Outgoing, Upstream, upstream_for

log = logging.getLogger("reference_proxy")
CLIENT_APIS = ("openai", "anthropic", "responses")
_T = TypeVar("_T")


def error_response(error: ProxyError) -> JSONResponse:
    return JSONResponse(dict(error.body), status_code=error.status, headers=dict(error.headers))


def anthropic_error_response(error: ProxyError) -> JSONResponse:
    """``error`` as a Messages client expects it: ``{"type": "error", "error": {...}}``."""
    return JSONResponse(render_error(error), status_code=error.status, headers=dict(error.headers))


class AnswerPipeline(RelayPipeline, Protocol):
    """A streamed answer's pipeline as the routes use it (``StreamPipeline``, ``AnthropicStreamPipeline``)."""

    @property
    def stats(self) -> ResponseStats: ...

    @property
    def model(self) -> str: ...

    def feed(self, payload: Mapping[str, Any]) -> str: ...


class RescueOptions(TypedDict, total=False):
    """Keyword arguments of the pipelines that choose their rescuer."""

    rescuer_factory: RescuerFactory


def log_request(
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


def url_path(scope: Mapping[str, Any]) -> str:
    """``request.url.path`` without building the URL (which parses the host header): the
    route's path with the three characters Starlette escapes before splitting the URL."""
    path: str = scope["path"]
    return path.replace("?", "%3F").replace("#", "%23").replace("\\", "%5C")


async def read_body(request: Request, idle_timeout: float) -> bytes:
    """The whole request body; ``ProxyError`` 408 when the client pauses longer than
    ``idle_timeout`` between two pieces (a stalled client never holds a handler forever)."""
    parts: list[bytes] = []
    pieces = request.stream().__aiter__()
    # One timer for the whole body (``ReadDeadline``), not one per piece: a body that came
    # whole is still read three times (the body, an empty end, the stop).
    deadline = ReadDeadline(idle_timeout)
    try:
        while True:
            try:
                piece = await deadline.read(anext(pieces))
            except StopAsyncIteration:
                return b"".join(parts)
            except TimeoutError:
                raise request_timeout(idle_timeout) from None
            parts.append(piece)
    finally:
        deadline.close()


class Proxy:
    """One configured proxy: its parts, its pooled connection, and the upstream each client
    API is served by (chosen here, once, from the configuration)."""

    def __init__(self, config: ProxyConfig, parts: Parts | None = None) -> None:
        self.config = config
        self.parts = parts or Parts()
        self.connection = UpstreamConnection(config)
        self.upstreams: Mapping[str, Upstream] = {api: upstream_for(config, api, self.parts.upstreams)
                                                  for api in CLIENT_APIS}

    def rescuers(self, model: str) -> RescueOptions:
        """The ``rescuer_factory`` of a model whose formats ``rescue_formats`` chooses;
        nothing for ``auto``, so the pipelines keep their own default."""
        formats = self.config.formats_for(model)
        return RescueOptions() if formats is None else RescueOptions(rescuer_factory=rescuer_for(formats))

    async def receive(
        self, request: Request, client_api: str, parse: Callable[[bytes], _T], render: Callable[[ProxyError], Response]
    ) -> tuple[RequestContext, bytes, _T] | Response:
        """The context of a client's request, its body and what ``parse`` makes of it, or the answer to give instead."""
        started = time.perf_counter()
        path = url_path(request.scope)
        try:
            raw = await read_body(request, self.config.body_timeout)
            parsed = parse(raw)
        except ProxyError as exc:
            log_request("POST", path, exc.status, started, note=exc.message)
            return render(exc)
        except ClientDisconnect:
            log_request("POST", path, 499, started, note="client hung up while sending its request")
            return Response(status_code=400)  # nobody is left to read it
        context = RequestContext(self, path, started, list(request.headers.items()), self.upstreams[client_api], render)
        return context, raw, parsed

    async def read_answer(self, response: httpx.Response, sink: EventSink) -> dict[str, Any]:
        """The upstream's whole answer: its JSON body, or its SSE folded by ``sink``; always closes the response."""
        try:
            if is_event_stream(response):
                await self._accumulate(response, sink)
                return sink.result()
            return await read_json(response)
        finally:
            await response.aclose()

    async def _accumulate(self, response: httpx.Response, sink: EventSink) -> None:
        try:
            async for batch in self.parts.upstream_events(response):
                for sse in batch:
                    sink.feed_event(sse.event, sse.data)
                    if sink.done:
                        return
        except httpx.TimeoutException as exc:
            raise upstream_timeout(f"reading the stream: {describe(exc)}") from None
        except httpx.HTTPError as exc:
            raise upstream_bad_response(f"the stream broke off: {describe(exc)}") from None


@dataclass
class RequestContext:
    """One client request as its route serves it."""

    proxy: Proxy
    path: str
    started: float
    headers: list[tuple[str, str]]  # the client's
    upstream: Upstream  # the one its client API is served by
    render: Callable[[ProxyError], Response]  # an error in the client API's shape

    @property
    def config(self) -> ProxyConfig:
        return self.proxy.config

    @property
    def parts(self) -> Parts:
        return self.proxy.parts

    def log(self, status: int, **fields: Any) -> None:
        log_request("POST", self.path, status, self.started, **fields)

    def failed(self, error: ProxyError, **fields: Any) -> Response:
        """The client's answer to ``error``, logged with ``fields``."""
        self.log(error.status, note=error.message, **fields)
        return self.render(error)

    def rescuers(self, model: str) -> RescueOptions:
        return self.proxy.rescuers(model)

    async def send(self, outgoing: Outgoing) -> httpx.Response:
        """The upstream's response to ``outgoing``, its body unread; ``ProxyError`` when it failed
        (after the request the upstream's refusal asks for, when it asks for one: ``after_refusal``)."""
        try:
            return await self.proxy.connection.open("POST", outgoing.url, outgoing.headers, outgoing.content)
        except ProxyError as exc:
            again = self.parts.after_refusal(self.upstream, outgoing, exc.message) if exc.status == 400 else None
            if again is None:
                raise
        return await self.proxy.connection.open("POST", again.url, again.headers, again.content)

    async def read_answer(self, response: httpx.Response, sink: EventSink) -> dict[str, Any]:
        return await self.proxy.read_answer(response, sink)

    def relay(self, response: httpx.Response, pipeline: AnswerPipeline, xml_client: bool = False) -> Response:
        """Stream the upstream's SSE through ``pipeline``; the request is logged when the answer ends."""

        def done(hung_up: bool) -> None:
            self.log(200, stream=True, xml_client=xml_client, model=pipeline.model, stats=pipeline.stats,
                     note="client hung up" if hung_up else "")

        return RelayResponse(response, pipeline, done, read_events=self.upstream.read_events(self.parts.upstream_events))

    def rewrapped(self, pipeline: AnswerPipeline, events: Iterable[Mapping[str, Any]], xml_client: bool = False) -> Response:
        """A streaming client's answer built from an upstream answer that came in one piece."""
        out = [pipeline.feed(event) for event in events]
        out.append(pipeline.close())
        self.log(200, stream=True, xml_client=xml_client, model=pipeline.model, stats=pipeline.stats, note="rewrapped")
        return Response(to_wire("".join(out)), media_type="text/event-stream", headers=SSE_HEADERS)
