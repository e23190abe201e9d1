"""The proxy's HTTP shell: its routes, and every failure turned into an error in the
client's API shape (OpenAI, or Messages on the ``/messages`` routes), so no traceback
ever reaches a client.

Each client API has its route module (``routes.chat``, ``routes.messages``,
``routes.responses``) over what they share (``routes.shared``); each upstream API has its
module in ``upstreams``, chosen once from the configuration. What to send lives in the
pure modules (request_shaping, pipeline, completion, loop_guard, tool_choice,
anthropic_stream, anthropic_message, translate); streamed answers are written by ``relay``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from reference_proxy.config import ProxyConfig
from reference_proxy.connection import read_json
from reference_proxy.errors import INVALID_REQUEST, ProxyError, error_body, internal_error
from reference_proxy.parts import Parts
from reference_proxy.relay import SERVER_SEND
from reference_proxy.request_shaping import forward_headers
from reference_proxy.routes.chat import chat
from reference_proxy.routes.messages import messages
from reference_proxy.routes.responses import responses
from reference_proxy.routes.shared import Proxy, anthropic_error_response, error_response, log, log_request

__all__ = ["Parts", "Proxy", "ProxyApp", "create_app"]


class ProxyApp(Starlette):
    """The proxy's Starlette app, which also keeps the server's ``send`` in each scope so a
    streamed answer's body writes skip the wrappers around it (see ``relay.SERVER_SEND``).
    Not when a middleware was added to it: that one may want to see or change the body."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.user_middleware:
            scope[SERVER_SEND] = send
        await super().__call__(scope, receive, send)


def _is_messages_path(path: str) -> bool:
    return path.rstrip("/").endswith("/messages")


async def models(proxy: Proxy, request: Request) -> Response:
    started = time.perf_counter()
    headers = forward_headers(request.headers.items(), proxy.config.api_key, with_body=False)
    url = proxy.config.models_url
    if request.url.query:
        url = f"{url}?{request.url.query}"
    try:
        upstream = await proxy.connection.open("GET", url, headers)
        try:
            body = await read_json(upstream)
        finally:
            await upstream.aclose()
    except ProxyError as exc:
        log_request("GET", request.url.path, exc.status, started, note=exc.message)
        return error_response(exc)
    log_request("GET", request.url.path, 200, started)
    return JSONResponse(body)


async def health(proxy: Proxy, request: Request) -> Response:
    return JSONResponse({"status": "ok", "upstream": proxy.config.upstream})


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


def create_app(config: ProxyConfig, parts: Parts | None = None) -> ProxyApp:
    """The proxy as an ASGI app; one pooled upstream connection lives as long as the app.
    ``parts`` replaces pieces of it (see ``Parts``); by default it is the reference proxy."""
    proxy = Proxy(config, parts)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        _ = proxy.connection.client  # create the pool at startup, not in the first request
        try:
            yield
        finally:
            await proxy.connection.aclose()

    routes = [
        Route("/v1/chat/completions", partial(chat, proxy), methods=["POST"]),
        Route("/chat/completions", partial(chat, proxy), methods=["POST"]),
        Route("/v1/messages", partial(messages, proxy), methods=["POST"]),
        Route("/messages", partial(messages, proxy), methods=["POST"]),
        Route("/v1/responses", partial(responses, proxy), methods=["POST"]),
        Route("/responses", partial(responses, proxy), methods=["POST"]),
        Route("/v1/models", partial(models, proxy), methods=["GET"]),
        Route("/models", partial(models, proxy), methods=["GET"]),
        Route("/health", partial(health, proxy), methods=["GET"]),
    ]
    app = ProxyApp(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_error, Exception: _unhandled},
    )
    app.state.proxy = proxy
    return app
