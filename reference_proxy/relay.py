"""The ASGI response of a streamed answer: upstream bytes in, pipeline output out.

Two tasks share one outbox. The pump reads the upstream and feeds the pipeline;
the writer sends whatever the outbox holds. Events that arrive together (one
network read) therefore leave together in one write (except the first content,
which is sent before the rest of its burst is processed), while a lone token leaves
as soon as it is processed: no added latency, far fewer writes under load. When a
slow client lets more than ``OUTBOX_LIMIT`` bytes pile up, the pump stops reading
until the writer has sent them, so the upstream is slowed down (TCP flow control)
instead of the proxy holding a whole answer in memory. A third task watches the
client: when it hangs up, the upstream request is cancelled at once so the backend
stops generating.
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
from reference_proxy.upstream import describe, error_from_event, events

log = logging.getLogger("reference_proxy.relay")

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
DRAIN_SECONDS = 1.0
OUTBOX_LIMIT = 1 << 20


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
        read_events: Callable[[httpx.Response], AsyncIterator[ServerSentEvent]] = events,
    ) -> None:
        self.status_code = 200
        self.background = None
        self.upstream = upstream
        self.pipeline = pipeline
        self.on_done = on_done  # called once, when the client's answer ended, with "the client hung up"
        self.read_events = read_events  # the upstream body as SSE events
        self.init_headers(SSE_HEADERS)
        self._outbox: list[bytes] = []
        self._outbox_size = 0
        self._wake = asyncio.Event()
        self._room = asyncio.Event()  # set while the outbox is under its limit
        self._room.set()
        self._output_done = False  # the pipeline said all it will say
        self._hung_up = False

    def _put(self, text: str) -> None:
        if text:
            data = to_wire(text)
            self._outbox.append(data)
            self._outbox_size += len(data)
            if self._outbox_size > OUTBOX_LIMIT:
                self._room.clear()

    def _handle(self, event: str, data: str) -> None:
        pipeline = self.pipeline
        self._put(pipeline.fail(error_from_event(data)) if event == "error" else pipeline.feed_data(data))

    def _end_output(self) -> None:
        self._output_done = True
        self._wake.set()

    async def _pump(self) -> None:
        """Read the upstream and feed the pipeline; never raises."""
        pipeline = self.pipeline
        received = self.read_events(self.upstream)
        stopped_early = False
        first = True
        try:
            try:
                async for sse in received:
                    self._handle(sse.event, sse.data)
                    if pipeline.closed:
                        stopped_early = True
                        break
                    if self._outbox:
                        # The writer runs once this task waits for the network, so the
                        # events of one read still leave in one write...
                        self._wake.set()
                        if first and getattr(pipeline, "answered", False):
                            # ...except the first content, which leaves at once, even
                            # from the middle of a burst.
                            first = False
                            await asyncio.sleep(0)
                    if not self._room.is_set():
                        await self._room.wait()
                else:
                    self._put(pipeline.close())  # the body ended without [DONE]: a normal end
            except httpx.TimeoutException as exc:
                message = f"upstream read timed out: {describe(exc)}"
                self._put(pipeline.fail(error_body(message, type=UPSTREAM_ERROR, code="upstream_timeout")["error"]))
            except httpx.HTTPError as exc:
                message = f"upstream connection failed: {describe(exc)}"
                self._put(pipeline.fail(error_body(message, type=UPSTREAM_ERROR, code="upstream_disconnected")["error"]))
            except Exception:
                log.exception("error while relaying the upstream stream")
                self._put(pipeline.fail(error_body("internal proxy error", type=SERVER_ERROR, code="internal_error")["error"]))
            self._end_output()
            if stopped_early:
                await _drain(received)
        finally:
            self._end_output()
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
            self._wake.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        pump = asyncio.ensure_future(self._pump())
        watcher = asyncio.ensure_future(self._watch(receive, pump))
        answered = False
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            outbox = self._outbox
            while not self._hung_up:
                await self._wake.wait()
                self._wake.clear()
                if outbox:
                    data = outbox[0] if len(outbox) == 1 else b"".join(outbox)
                    outbox.clear()
                    self._outbox_size = 0
                    await send({"type": "http.response.body", "body": data, "more_body": True})
                    if self._outbox_size <= OUTBOX_LIMIT:
                        self._room.set()
                if self._output_done and not outbox:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    answered = True
                    break
        except OSError:
            self._abort(pump)  # the client went away while we were writing
        finally:
            if not answered:  # the writer stopped early (hang-up, server shutdown): so does the reader
                self._abort(pump)
            watcher.cancel()
            self.on_done(self._hung_up)
            try:
                await pump
            except asyncio.CancelledError:
                if not pump.cancelled():
                    raise


async def _drain(received: AsyncIterator[ServerSentEvent]) -> None:
    """Read what follows ``[DONE]`` (the end of the chunked body) so the connection goes
    back to the pool instead of being closed; bounded, the client is already answered."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in received:
                pass
    except (TimeoutError, httpx.HTTPError):
        pass
