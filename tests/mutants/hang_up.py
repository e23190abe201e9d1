"""A proxy that never hears its client hang up: it streams every answer to its end.

uvicorn drops what is sent to a client that has gone (its ``send`` returns quietly), so a
proxy learns of the hang-up only from the ``http.disconnect`` message Starlette's
streaming response listens for. This one keeps its upstream request open and reads the
whole answer for nobody, as a proxy does that relays a stream without watching its
client: the model goes on generating (vllm-project/vllm#6975 shows vLLM aborting only when
the connection to it closes). The soak's SOAK-001 check catches it.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig


def deaf_to_hang_ups(config: ProxyConfig) -> ASGIApp:
    """The reference proxy, its requests' ``http.disconnect`` never delivered."""
    app = create_app(config)

    async def deaf(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def without_disconnect() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                await asyncio.Event().wait()  # never set: cancelled when the response ends
            return message

        await app(scope, without_disconnect, send)

    return deaf
