"""A lean HTTP/1.1 transport for the upstream ``httpx.AsyncClient``.

httpx's default transport turns every HTTP chunk of a response into its own event
and, on each request, checks every pooled connection with system calls. An
inference server writes one chunk per token, so that cost is paid hundreds of times
per answer and grows with the pool. This transport does the same job for what the
proxy needs (HTTP/1.x requests to its configured upstream) with per-read rather than
per-chunk work:

* responses are parsed by ``httptools`` (llhttp, the parser uvicorn uses): status,
  headers, ``chunked``/``Content-Length``/close-delimited framing, keep-alive rules of
  HTTP/1.0 and 1.1, malformed input; all the body data of one network read is passed
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


class _Connection:
    __slots__ = ("reader", "writer", "origin")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, origin: _Origin) -> None:
        self.reader = reader
        self.writer = writer
        self.origin = origin

    def usable(self) -> bool:
        """Idle and still open: the server has not closed it and sent nothing unasked."""
        return not self.writer.is_closing() and not self.reader.at_eof() and not self.reader._buffer  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.close()

    async def read(self, deadline: ReadDeadline | None) -> bytes:
        try:
            if deadline is None:
                return await self.reader.read(READ_SIZE)
            return await deadline.read(self.reader.read(READ_SIZE))
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the upstream response") from None
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from None


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
                data = await connection.read(deadline)
                if data:
                    response.feed(data)
                else:
                    response.end_of_input()
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
        try:
            async with asyncio.timeout(timeout):
                if scheme == b"https":
                    reader, writer = await asyncio.open_connection(
                        name, port, ssl=self._ssl(), server_hostname=name, limit=MAX_HEAD
                    )
                else:
                    reader, writer = await asyncio.open_connection(name, port, limit=MAX_HEAD)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {name}:{port}") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
        return _Connection(reader, writer, origin)

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
        writer = connection.writer
        try:
            writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                writer.write(body)
            if writer.transport.get_write_buffer_size():
                async with asyncio.timeout(timeouts.get("write")):
                    await writer.drain()
            else:  # all of it went to the socket: drain only reports a connection already lost
                await writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request") from None
        except OSError as exc:
            raise _Stale() from exc
        response = _Response(head_only=request.method == "HEAD")
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
        received = False
        while not response.head_done:
            try:
                data = await connection.read(deadline)
            except httpx.ReadError:
                if received:
                    raise
                raise _Stale() from None
            if not data:
                if not received:
                    raise _Stale()
                raise httpx.RemoteProtocolError("server disconnected in the middle of the response head")
            received = True
            response.feed(data)

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        self._idle_count = 0


class _Stale(Exception):
    """The connection was closed before any byte of the answer came."""
