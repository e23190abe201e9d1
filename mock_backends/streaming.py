"""ASGI responses that put a replayed answer on the socket, write by write.

Each ``send`` becomes one HTTP chunk and one socket write, so the event and split
boundaries a scenario asks for are the ones the proxy reads. A client that hangs up
during a pause stops the replay at once instead of after all the pauses. Returning
before the response is complete makes the server close the connection: that is how
a dropped upstream is played.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from contextvars import ContextVar

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from harness.core.replay.wire import SPLIT_PAUSE, Event, writes
from mock_backends.registry import AnswerLog
from mock_backends.lockstep import Lockstep


# Set while the mock drops a connection on purpose (a ``drop`` fault): the server's
# "ASGI callable returned without completing response" is then what the scenario asked
# for, not an error, and is not logged (it would interleave with a run's progress).
_DROPPING: ContextVar[bool] = ContextVar("mock_dropping", default=False)


class _QuietDeliberateDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_DROPPING.get() and "without completing response" in record.getMessage())


_QUIET = _QuietDeliberateDrops()


def quiet_deliberate_drops() -> None:
    """Keep uvicorn from logging the mock's deliberate drops (idempotent)."""
    logger = logging.getLogger("uvicorn.error")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)


async def _until_disconnect(receive: Receive) -> None:
    try:
        while (await receive())["type"] != "http.disconnect":
            pass
    except Exception:  # a broken connection is a disconnect too
        return


class _Pauses:
    """Waits that end early when the client goes away."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._watcher: asyncio.Future[None] | None = None

    async def wait(self, seconds: float) -> bool:
        """Pause; False when the client disconnected meanwhile."""
        if seconds <= SPLIT_PAUSE:
            await asyncio.sleep(seconds)
            return True
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(_until_disconnect(self._receive))
        await asyncio.wait((self._watcher,), timeout=seconds)
        return not self._watcher.done()

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()


class ReplayStream(Response):
    """A stream (``text/event-stream``, or an event-stream dialect's own media type) made of precomputed events."""

    media_type = "text/event-stream"

    def __init__(
        self,
        events: Sequence[Event],
        *,
        write_bytes: int | None = None,
        split_multibyte: bool = False,
        tear_window: int | None = None,
        write_pause: float = SPLIT_PAUSE,
        abort: bool = False,
        headers: Mapping[str, str] | None = None,
        lockstep: Lockstep | None = None,
        media_type: str = "text/event-stream",
    ) -> None:
        self.status_code = 200
        self.media_type = media_type
        self.lockstep = lockstep
        self.background = None
        self.events = events
        self.write_bytes = write_bytes
        self.split_multibyte = split_multibyte
        self.tear_window = tear_window
        self.write_pause = write_pause
        self.abort = abort
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        plain = not self.split_multibyte and self.write_bytes is None
        pauses = _Pauses(receive)
        group = self.lockstep
        reached = -1  # the last lockstep step this answer arrived at
        try:
            for step, event in enumerate(self.events):
                if group is not None:
                    await group.step(step)
                    reached = step
                if event.delay > 0 and not await pauses.wait(event.delay):
                    return
                if plain:
                    await send({"type": "http.response.body", "body": event.data, "more_body": True})
                    continue
                for i, part in enumerate(
                    writes(event, write_bytes=self.write_bytes, split_multibyte=self.split_multibyte,
                           tear_window=self.tear_window if step else None)  # the first event torn whole
                ):
                    if i and not await pauses.wait(self.write_pause):
                        return
                    await send({"type": "http.response.body", "body": part, "more_body": True})
            if self.abort:
                _DROPPING.set(True)
            else:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            pauses.close()
            if group is not None:
                group.leave(reached + 1)


class DroppedResponse(Response):
    """Headers promising ``length`` bytes, then only ``part`` of them, then the connection closes."""

    def __init__(self, part: bytes, length: int, *, media_type: str = "application/json") -> None:
        self.status_code = 200
        self.background = None
        self.media_type = media_type
        self.part = part
        self.init_headers({"content-length": str(length)})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        if self.part:
            await send({"type": "http.response.body", "body": self.part, "more_body": True})
        _DROPPING.set(True)


class Logged(Response):
    """Any response, with what it sends written to ``log`` and its end marked (however
    it ends: complete, dropped on purpose, or cut short by the client hanging up)."""

    def __init__(self, response: Response, log: AnswerLog) -> None:
        self.status_code = response.status_code
        self.background = None
        self.raw_headers = response.raw_headers
        self.response = response
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        log = self.log

        async def logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                log.start(int(message["status"]), {k.decode("latin-1").lower(): v.decode("latin-1")
                                                   for k, v in message.get("headers", ())})
            elif message["type"] == "http.response.body":
                log.write(bytes(message.get("body", b"")))
            await send(message)

        try:
            await self.response(scope, receive, logged)
        finally:
            log.end()
