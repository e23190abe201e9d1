"""The ASGI response of a streamed answer: upstream bytes in, pipeline output out.

One task (the pump) reads the upstream, feeds the pipeline and writes what it says,
once per network read: events that arrive together leave together in one write, a
lone token leaves as soon as it is processed, and the first content leaves at once,
even from the middle of a burst. No added latency, few writes under load, and no
second task to wake for every token. When the client does not read, the write waits
(uvicorn's flow control), so the pump stops reading and the upstream is slowed down
(TCP flow control) instead of the proxy holding a whole answer in memory. A second
task watches the client: when it hangs up, the upstream request is cancelled at once
so the backend stops generating.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import httpx
from httpx_sse import ServerSentEvent
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from reference_proxy.errors import SERVER_ERROR, UPSTREAM_ERROR, error_body
from reference_proxy.openai_stream import to_wire
from reference_proxy.connection import describe, error_from_event, events

log = logging.getLogger("reference_proxy.relay")

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
DRAIN_SECONDS = 1.0
#: The scope key under which the app keeps the server's own ``send`` (``app.ProxyApp``). The
#: body writes go straight to it: Starlette's error middlewares and its route each wrap
#: ``send`` in a coroutine that only notes the response start, three awaits per write
#: that pass a body message on unchanged. The start still goes through them, so they
#: know the response began and handle a later failure as before.
SERVER_SEND = "reference_proxy.server_send"


class RelayPipeline(Protocol):
    """What the relay needs of a pipeline: ``pipeline.StreamPipeline`` (chat completions)
    or ``anthropic_stream.AnthropicStreamPipeline`` (Messages)."""

    @property
    def closed(self) -> bool: ...

    def feed_data(self, data: str) -> str: ...

    def fail(self, error: Mapping[str, Any]) -> str: ...

    def close(self) -> str: ...


class RelayResponse(Response):
    """Streams one upstream SSE answer through a pipeline."""

    media_type = "text/event-stream"

    def __init__(
        self, upstream: httpx.Response, pipeline: RelayPipeline, on_done: Callable[[bool], None], *,
        read_events: Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]] = events,
    ) -> None:
        self.status_code = 200
        self.background = None
        self.upstream = upstream
        self.pipeline = pipeline
        self.on_done = on_done  # called once, when the client's answer ended, with "the client hung up"
        self.read_events = read_events  # the upstream body as SSE events, a list per network read
        self.init_headers(SSE_HEADERS)
        self._outbox: list[bytes] = []
        self._output_done = False  # the client's answer is complete
        self._hung_up = False

    def _put(self, text: str) -> None:
        if text:
            self._outbox.append(to_wire(text))

    def _handle(self, event: str, data: str) -> None:
        pipeline = self.pipeline
        self._put(pipeline.fail(error_from_event(data)) if event == "error" else pipeline.feed_data(data))

    async def _write(self, send: Send, *, more: bool = True) -> None:
        outbox = self._outbox
        if not outbox and more:
            return
        data = outbox[0] if len(outbox) == 1 else b"".join(outbox)
        outbox.clear()
        try:
            await send({"type": "http.response.body", "body": data, "more_body": more})
        except Exception as exc:
            raise _WriteFailed() from exc

    async def _relay(self, send: Send) -> None:
        """Read the upstream, feed the pipeline, write; raises only what a write raised."""
        pipeline = self.pipeline
        received = self.read_events(self.upstream)
        stopped_early = False
        first = True
        try:
            async for batch in received:
                for sse in batch:
                    self._handle(sse.event, sse.data)
                    if pipeline.closed:
                        stopped_early = True
                        break
                    if first and self._outbox and getattr(pipeline, "answered", False):
                        first = False  # the first content leaves at once, even from the middle of a burst
                        await self._write(send)
                if stopped_early:
                    break
                await self._write(send)
            else:
                self._put(pipeline.close())  # the body ended without [DONE]: a normal end
        except _WriteFailed:
            raise
        except httpx.TimeoutException as exc:
            message = f"upstream read timed out: {describe(exc)}"
            self._put(pipeline.fail(error_body(message, type=UPSTREAM_ERROR, code="upstream_timeout")["error"]))
        except httpx.HTTPError as exc:
            message = f"upstream connection failed: {describe(exc)}"
            self._put(pipeline.fail(error_body(message, type=UPSTREAM_ERROR, code="upstream_disconnected")["error"]))
        except Exception:
            log.exception("error while relaying the upstream stream")
            self._put(pipeline.fail(error_body("internal proxy error", type=SERVER_ERROR, code="internal_error")["error"]))
        await self._write(send, more=False)
        self._output_done = True
        if stopped_early:
            await _drain(received)

    async def _pump(self, send: Send) -> None:
        try:
            await self._relay(send)
        except _WriteFailed as exc:
            if not isinstance(exc.__cause__, OSError):
                raise exc.__cause__ from None  # type: ignore[misc]
            self._hung_up = True  # the client went away while we were writing
        finally:
            await self.upstream.aclose()

    async def _watch(self, receive: Receive, pump: asyncio.Task[None]) -> None:
        try:
            while (await receive())["type"] != "http.disconnect":
                pass
        except Exception:  # a broken connection is a hang-up too
            pass
        if not self._output_done:
            self._abort(pump)

    def _abort(self, pump: asyncio.Task[None]) -> None:
        """The client is gone: stop reading the upstream (once: a second cancel would
        interrupt the pump's own cleanup, which closes the upstream connection)."""
        if not self._hung_up:
            self._hung_up = True
            pump.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        pump = asyncio.ensure_future(self._pump(scope.get(SERVER_SEND, send)))
        watcher = asyncio.ensure_future(self._watch(receive, pump))
        try:
            await asyncio.wait((pump,))  # a cancelled response (server shutdown) ends the pump too, below
        finally:
            if not pump.done():
                self._abort(pump)
            watcher.cancel()
            self.on_done(self._hung_up)
            try:
                await pump
            except asyncio.CancelledError:
                if not pump.cancelled():
                    raise


class _WriteFailed(Exception):
    """A write to the client raised (its cause): not an upstream failure."""


async def _drain(received: AsyncIterator[list[ServerSentEvent]]) -> None:
    """Read what follows ``[DONE]`` (the end of the chunked body) so the connection goes
    back to the pool instead of being closed; bounded, the client is already answered."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in received:
                pass
    except (TimeoutError, httpx.HTTPError):
        pass
