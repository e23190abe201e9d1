"""A read timeout for a streamed body without a timer per read.

An inference server writes one chunk per token, so a body is read hundreds of times.
``asyncio.timeout`` around each read builds a context object, schedules a timer and
cancels it every time: at 256 streams that was about a tenth of the proxy's CPU. This
deadline keeps one timer per body and moves it only when it fires: each read just
notes when it started, and the timer, when due, either finds the current read older
than the timeout (and cancels the reading task, which the read turns into
``httpx.ReadTimeout``) or re-arms itself for the time still left.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class ReadDeadline:
    """How long one read may wait, for every read of one body, on one task."""

    __slots__ = ("_loop", "_timeout", "_task", "_handle", "_started", "_reading", "_expired")

    def __init__(self, timeout: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._timeout = timeout
        self._task: asyncio.Task[object] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._started = 0.0
        self._reading = False
        self._expired = False

    async def read(self, pending: Awaitable[T]) -> T:
        """``await pending``, or ``TimeoutError`` when it waits longer than the timeout."""
        task = asyncio.current_task()
        # The first read, or the body moved to another task (the head is read by the route,
        # the body by the relay): the timer stays, it cancels whichever task reads when due.
        self._task = task
        self._started = self._loop.time()
        if self._handle is None:
            self._handle = self._loop.call_at(self._started + self._timeout, self._due)
        cancelling = task.cancelling() if task is not None else 0
        self._reading = True
        try:
            return await pending
        except asyncio.CancelledError:
            if self._expired and task is not None:
                self._expired = False
                if task.uncancel() <= cancelling:  # cancelled by this deadline alone
                    raise TimeoutError from None
            raise
        finally:
            self._reading = False

    def _due(self) -> None:
        self._handle = None
        if not self._reading:
            return  # armed again by the next read
        now = self._loop.time()
        due = self._started + self._timeout
        if now < due:
            self._handle = self._loop.call_at(due, self._due)
        elif self._task is not None and not self._expired:
            self._expired = True
            self._task.cancel()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
