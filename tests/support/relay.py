"""A proxy that relays every request and answer byte for byte: what a proxy that changes
nothing does with a real server's habits (``tests/core/test_upstream_profiles.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_HOP = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


def relay_app(upstream: str) -> Starlette:
    """An app that sends each POST under its path to ``upstream`` (a base URL ending in ``/v1``) and streams
    the answer back as it came."""
    async def relay(request: Request) -> Response:
        client = httpx.AsyncClient(timeout=30.0)
        path = request.url.path.removeprefix("/v1")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        sent = client.build_request("POST", upstream + path, content=await request.body(), headers=headers)
        answer = await client.send(sent, stream=True)

        async def body() -> AsyncIterator[bytes]:
            try:
                async for piece in answer.aiter_raw():
                    yield piece
            finally:
                await answer.aclose()
                await client.aclose()

        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP | {"content-encoding"}}
        return StreamingResponse(body(), status_code=answer.status_code, headers=kept)

    return Starlette(routes=[Route("/v1/{rest:path}", relay, methods=["POST"])])
