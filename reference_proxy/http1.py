"""A lean HTTP/1.1 transport for the upstream ``httpx.AsyncClient``.

httpx's default transport turns every HTTP chunk of a response into its own event
and, on each request, checks every pooled connection with system calls. An
inference server writes one chunk per token, so that cost is paid hundreds of times
per answer and grows with the pool. This transport does the same job for what the
proxy needs (HTTP/1.x requests to its configured upstream) with per-read rather than
per-chunk work:

* responses are parsed by ``httptools`` (llhttp, the parser uvicorn uses): status,
  headers, ``chunked``/``Content-Length``/close-delimited framing, keep-alive rules of
  HTTP/1.0 and 1.1, malformed input; each connection is an ``asyncio.Protocol`` whose
  ``data_received`` feeds the parser, and all the body data of one network read is passed
  on as one piece, so events that arrive together stay together;
* idle keep-alive connections are kept per origin; taking one only looks at whether
  the server already closed it (no system call);
* timeouts are httpx's (``connect``, ``read``, ``write``, ``pool`` from the request's
  extensions) and failures are raised as httpx's own exceptions (``ConnectError``,
  ``ReadTimeout``, ``RemoteProtocolError``…), so callers see what the default
  transport would raise.

A body that ends before its declared end (a dropped connection, a broken chunk) is a
``RemoteProtocolError``; a connection is reused only after its response was read to
the end, the parser says the server keeps it open, and no byte came after the
response.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

import httptools
import httpx

from reference_proxy.read_deadline import ReadDeadline

#: The longest status line plus headers accepted from the upstream.
MAX_HEAD = 256 * 1024
READ_SIZE = 65536
_Origin = tuple[bytes, bytes, int]
_UNFRAMED_STATUSES = (204, 304)


def _timeouts(request: httpx.Request) -> dict[str, float | None]:
    timeout: dict[str, float | None] = request.extensions.get("timeout", {})
    return timeout


@dataclass(frozen=True, slots=True)
class _Outgoing:
    """One request as the transport sends it: its head and body as bytes, its timeouts, and
    the pool slots it holds one of (given back when its answer is read or fails)."""

    request: httpx.Request
    head: bytes
    body: bytes
    timeouts: dict[str, float | None]
    slots: asyncio.Semaphore | None


def _settle(waiter: asyncio.Future[None] | None) -> None:
    """Wake whoever waits on ``waiter``, if anyone still does."""
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


class _Connection(asyncio.Protocol):
    """One connection to the upstream, read as the network delivers it: each read is fed to
    the parser of the answer being read (``response``) in ``data_received``, so a body read
    costs one wait and no copy (a stream reader would buffer it, copy it out and take a
    coroutine step more). What the reader of the body needs to know is kept here: the
    server closed its side, the connection broke, the parser found an error. Reading pauses
    while more than a read's worth of body waits to be taken (a client that does not read
    slows the upstream down instead of filling memory)."""

    __slots__ = (
        "origin", "transport", "response", "received", "unread", "closed", "error", "unasked", "_waiter",
        "_reading_paused", "_writing_paused", "_drain_waiter",
    )

    def __init__(self, origin: _Origin) -> None:
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.response: _Response | None = None  # the answer being read; None while idle
        self.received = False  # a byte of the current answer came
        self.unread = 0  # bytes fed since the reader last took the body
        self.closed = False  # the server closed its side, or the connection is gone
        self.error: Exception | None = None  # what the reader raises next
        self.unasked = False  # bytes came while no request was waiting for them
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._writing_paused = False
        self._drain_waiter: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ protocol callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one without subclassing it

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or self.error is not None:
            self.unasked = True
            return
        self.received = True
        try:
            response.feed(data)
        except httpx.HTTPError as exc:
            self.error = exc
        self.unread += len(data)
        if self.unread > READ_SIZE and not self._reading_paused and self.transport is not None:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if exc is not None and self.error is None:
            self.error = httpx.ReadError(str(exc) or type(exc).__name__)
        self._wake()
        self._end_drain()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._end_drain()

    def _wake(self) -> None:
        _settle(self._waiter)

    def _end_drain(self) -> None:
        drain, self._drain_waiter = self._drain_waiter, None
        _settle(drain)

    # ------------------------------------------------------------------ use

    def usable(self) -> bool:
        """Idle and still open: the server has not closed it and sent nothing unasked."""
        transport = self.transport
        return (transport is not None and not transport.is_closing() and not self.closed and not self.unasked
                and self.error is None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def start(self, response: _Response) -> None:
        """``response`` is the answer to read next (its request about to be written)."""
        self.response = response
        self.received = False
        self.unread = 0

    def finish(self) -> None:
        """The answer is read: what comes now, before a next request, was not asked for."""
        self.response = None

    async def write(self, parts: tuple[bytes, ...], timeout: float | None) -> None:
        """Send ``parts``, waiting (at most ``timeout``) while the transport's buffer is full;
        OSError when the connection is gone."""
        transport = self.transport
        if transport is None or self.closed or transport.is_closing():
            raise ConnectionResetError("Connection lost")
        for part in parts:
            transport.write(part)
        if self._writing_paused:
            waiter = self._drain_waiter = asyncio.get_running_loop().create_future()
            async with asyncio.timeout(timeout):
                await waiter
            if self.closed:
                raise ConnectionResetError("Connection lost")

    async def receive(self, deadline: ReadDeadline | None) -> None:
        """Wait until the server sends more (fed to the response as it comes) or closes;
        raises what broke (``httpx.ReadError``, ``RemoteProtocolError``) or
        ``httpx.ReadTimeout``. Called when everything fed so far was taken."""
        if self.error is not None:
            raise self.error
        self.unread = 0
        if self._reading_paused and self.transport is not None:
            self._reading_paused = False
            self.transport.resume_reading()
        if self.closed:
            return
        waiter = self._waiter = asyncio.get_running_loop().create_future()
        try:
            if deadline is None:
                await waiter
            else:
                await deadline.read(waiter)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the upstream response") from None
        finally:
            self._waiter = None
        if self.error is not None:
            raise self.error


class _Response:
    """The callbacks of ``httptools.HttpResponseParser`` for one response: what the
    parser found so far, and whether the connection may carry another request."""

    __slots__ = (
        "parser", "head_only", "status", "reason", "headers", "head_done", "interim", "body", "complete",
        "keep_alive", "close_delimited", "head_size",
    )

    def __init__(self, *, head_only: bool) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.head_only = head_only  # a HEAD request: the answer has no body, whatever its headers say
        self.status = 0
        self.reason = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.head_done = False
        self.interim = False  # a 1xx answer; the real one follows
        self.body: list[bytes] = []
        self.complete = False
        self.keep_alive = False
        self.close_delimited = False  # no framing: the body ends when the server closes
        self.head_size = 0

    # ------------------------------------------------------------------ parser callbacks

    # Once the response is complete, whatever the parser still reports (bytes after it,
    # maybe a whole second response) only means the connection is not clean.

    def on_message_begin(self) -> None:
        if self.complete:
            self.keep_alive = False
            return
        self.reason = b""
        self.headers = []
        self.interim = False

    def on_status(self, reason: bytes) -> None:
        if not self.complete:
            self.reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.head_done:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self.interim = True
            return
        self.status = status
        self.head_done = True
        self.keep_alive = self.parser.should_keep_alive()
        framed = any(name.lower() in (b"content-length", b"transfer-encoding") for name, _ in self.headers)
        self.close_delimited = not framed and status not in _UNFRAMED_STATUSES and not self.head_only
        if self.head_only:
            self.complete = True
            self.keep_alive = False  # the parser may still expect a body: never reuse

    def on_body(self, data: bytes) -> None:
        if not self.complete:
            self.body.append(data)

    def on_message_complete(self) -> None:
        if not self.interim and self.head_done and not self.complete:
            self.complete = True

    # ------------------------------------------------------------------ input

    def feed(self, data: bytes) -> None:
        if not self.head_done:
            self.head_size += len(data)
            if self.head_size > MAX_HEAD + READ_SIZE:
                raise httpx.RemoteProtocolError("response head too large")
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            raise httpx.RemoteProtocolError("the upstream switched protocols") from None
        except httptools.HttpParserError as exc:
            if self.complete:  # garbage after a complete response: only the reuse is lost
                self.keep_alive = False
                return
            raise httpx.RemoteProtocolError(f"malformed response from the upstream: {exc}") from None

    def end_of_input(self) -> None:
        """The server closed the connection: complete only for a close-delimited body."""
        if self.complete:
            return
        if self.head_done and self.close_delimited:
            self.complete = True
            self.keep_alive = False
            return
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    def take_body(self) -> bytes:
        body = self.body
        if not body:
            return b""
        self.body = []
        return body[0] if len(body) == 1 else b"".join(body)


class _Body(httpx.AsyncByteStream):
    """A response body read from one connection; gives the connection back when complete."""

    def __init__(
        self,
        transport: LeanTransport,
        connection: _Connection,
        response: _Response,
        *,
        deadline: ReadDeadline | None,
        slots: asyncio.Semaphore | None,
    ) -> None:
        self._transport = transport
        self._slots = slots  # released when the body is closed
        self._connection: _Connection | None = connection
        self._response = response
        self._deadline = deadline  # the head's, closed with the body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            return
        response = self._response
        deadline = self._deadline
        try:
            while True:
                piece = response.take_body()
                if piece:
                    yield piece
                if response.complete:
                    return
                if connection.closed and connection.error is None:
                    response.end_of_input()  # complete for a close-delimited body, or an error
                    continue
                await connection.receive(deadline)
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        if self._deadline is not None:
            self._deadline.close()
        if self._response.complete and self._response.keep_alive:
            connection.finish()
            self._transport._release(connection)
        else:
            connection.close()
        if self._slots is not None:
            self._slots.release()


class LeanTransport(httpx.AsyncBaseTransport):
    """Keep-alive HTTP/1.1 connections to the upstream, at most ``max_connections`` at once."""

    def __init__(self, *, max_connections: int, max_keepalive: int, ssl_context: ssl.SSLContext | None = None) -> None:
        self._max_keepalive = max_keepalive
        self._slots = asyncio.Semaphore(max_connections) if max_connections else None
        self._idle: dict[_Origin, deque[_Connection]] = {}
        self._idle_count = 0
        self._ssl_context = ssl_context
        self._closed = False

    def _ssl(self) -> ssl.SSLContext:
        if self._ssl_context is None:
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    # ------------------------------------------------------------------ pool

    def _take(self, origin: _Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if connection.usable():
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection) -> None:
        if self._closed or not connection.usable() or self._idle_count >= self._max_keepalive:
            connection.close()
            return
        self._idle.setdefault(connection.origin, deque()).append(connection)
        self._idle_count += 1

    async def _connect(self, origin: _Origin, timeout: float | None) -> _Connection:
        scheme, host, port = origin
        name = host.decode("ascii")
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                if scheme == b"https":
                    _, connection = await loop.create_connection(
                        lambda: _Connection(origin), name, port, ssl=self._ssl(), server_hostname=name
                    )
                else:
                    _, connection = await loop.create_connection(lambda: _Connection(origin), name, port)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {name}:{port}") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return connection

    # ------------------------------------------------------------------ requests

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise httpx.ConnectError("the upstream client is closed")
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"unsupported scheme {url.scheme!r}")
        origin: _Origin = (scheme, url.raw_host, url.port or (443 if scheme == b"https" else 80))
        timeouts = _timeouts(request)
        try:
            body = request.content
        except httpx.RequestNotRead:
            body = await request.aread()
        head = self._head(request)
        slots = self._slots
        if slots is not None and not slots.locked():
            await slots.acquire()  # a free slot: taken at once, no timer to set
        elif slots is not None:
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("timed out waiting for a free upstream connection") from None
        try:
            return await self._exchange(_Outgoing(request, head, body, timeouts, slots), origin)
        except BaseException:
            if slots is not None:
                slots.release()
            raise

    @staticmethod
    def _head(request: httpx.Request) -> bytes:
        lines = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in request.headers.raw:
            lines += (name, b": ", value, b"\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    async def _exchange(self, outgoing: _Outgoing, origin: _Origin) -> httpx.Response:
        connection = self._take(origin)
        reused = connection is not None
        while True:
            if connection is None:
                connection = await self._connect(origin, outgoing.timeouts.get("connect"))
            try:
                return await self._send(outgoing, connection)
            except _Stale:
                # A kept-alive connection the server closed while it was idle (it said
                # nothing, not even a status line): the request never reached it, so one
                # attempt on a fresh connection is safe.
                connection.close()
                if not reused:
                    raise httpx.RemoteProtocolError("server disconnected without sending a response") from None
                connection, reused = None, False
            except BaseException:
                connection.close()
                raise

    async def _send(self, outgoing: _Outgoing, connection: _Connection) -> httpx.Response:
        request, head, body, timeouts = outgoing.request, outgoing.head, outgoing.body, outgoing.timeouts
        response = _Response(head_only=request.method == "HEAD")
        connection.start(response)
        try:
            await connection.write((head + body,) if len(body) < 65536 else (head, body), timeouts.get("write"))
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request") from None
        except OSError as exc:
            raise _Stale() from exc
        read_timeout = timeouts.get("read")
        # One deadline for the head and the body (``ReadDeadline``), not a timer per read.
        deadline = None if read_timeout is None else ReadDeadline(read_timeout)
        try:
            await self._read_head(connection, response, deadline)
        except BaseException:
            if deadline is not None:
                deadline.close()
            raise
        if request.headers.get("connection", "").lower() == "close":
            response.keep_alive = False
        stream = _Body(self, connection, response, deadline=deadline, slots=outgoing.slots)
        version = b"HTTP/" + response.parser.get_http_version().encode("ascii")
        return httpx.Response(
            response.status,
            headers=response.headers,
            stream=stream,
            request=request,
            extensions={"http_version": version, "reason_phrase": response.reason},
        )

    @staticmethod
    async def _read_head(connection: _Connection, response: _Response, deadline: ReadDeadline | None) -> None:
        while not response.head_done:
            try:
                if connection.closed and connection.error is None:
                    if not connection.received:
                        raise _Stale()
                    raise httpx.RemoteProtocolError("server disconnected in the middle of the response head")
                await connection.receive(deadline)
            except httpx.ReadError:
                if connection.received:
                    raise
                raise _Stale() from None

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        self._idle_count = 0


class _Stale(Exception):
    """The connection was closed before any byte of the answer came."""
