"""A body that is not SSE (Kiro's event stream, Ollama's NDJSON) read as SSE-like events,
so the relay and the pipelines run on it unchanged.

Each such upstream has its own ``BodyDecoder``; what they share is here: an ``error`` event
in one shape, and the reading that ends at the first one (nothing past a damaged frame or
an error line is to be trusted).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Protocol

import httpx
from httpx_sse import ServerSentEvent

from reference_proxy.connection import body_reads


class BodyDecoder(Protocol):
    def feed(self, data: bytes) -> list[ServerSentEvent]:
        """The events that the bytes read so far complete."""
        ...

    def finish(self) -> list[ServerSentEvent]:
        """What the body's end makes of the bytes left over (an error when they are cut)."""
        ...


def error_event(message: str, kind: str = "upstream_error") -> ServerSentEvent:
    return ServerSentEvent(event="error", data=json.dumps({"error": {"message": message, "type": kind}}))


async def decoded_events(response: httpx.Response, decoder: BodyDecoder) -> AsyncIterator[list[ServerSentEvent]]:
    """The events of ``response``'s body, a list per network read; ends at the first error event."""
    async for piece in body_reads(response):
        batch = decoder.feed(piece)
        cut = next((i for i, e in enumerate(batch) if e.event == "error"), None)
        if cut is not None:
            yield batch[: cut + 1]
            return
        if batch:
            yield batch
    rest = decoder.finish()
    if rest:
        yield rest
