"""A lean HTTP/1.1 transport for the upstream ``httpx.AsyncClient``.

httpx's default transport parses every HTTP chunk of a response into its own
event and, on each request, checks every pooled connection with system calls.
An inference server writes one chunk per token, so that cost is paid hundreds of
times per answer and grows with the pool. This transport does the same job for
the one thing the proxy needs — plain HTTP/1.1 (or TLS) requests to one
configured upstream — with per-read rather than per-chunk work:

* the chunked body is decoded in bulk: every complete chunk of one network read is
  returned as one piece, so events that arrive together stay together;
* idle keep-alive connections are kept per origin; taking one only looks at
  whether the server already closed it (no system call);
* timeouts are httpx's (``connect``, ``read``, ``write``, ``pool`` from the request's
  extensions) and failures are raised as httpx's own exceptions
  (``ConnectError``, ``ReadTimeout``, ``RemoteProtocolError``…), so callers see
  exactly what the default transport would raise.

A body that ends before its declared end (a dropped connection, a broken chunk) is
a ``RemoteProtocolError``; a connection is reused only after its response was read
to the end and neither side asked to close it.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator
import httpx

#: The longest status line plus headers accepted from the upstream.
MAX_HEAD = 256 * 1024
READ_SIZE = 65536
_Origin = tuple[bytes, bytes, int]


def _timeouts(request: httpx.Request) -> dict[str, float | None]:
    timeout: dict[str, float | None] = request.extensions.get("timeout", {})
    return timeout


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


class _Body(httpx.AsyncByteStream):
    """A response body read from one connection; gives the connection back when complete."""

    def __init__(
        self,
        transport: LeanTransport,
        connection: _Connection,
        *,
        chunked: bool,
        length: int | None,
        keep_alive: bool,
        read_timeout: float | None,
        buffered: bytes,
        slots: asyncio.Semaphore | None,
    ) -> None:
        self._transport = transport
        self._slots = slots  # released when the body is closed
        self._connection: _Connection | None = connection
        self._chunked = chunked
        self._length = length  # bytes still expected (content-length framing)
        self._keep_alive = keep_alive
        self._timeout = read_timeout
        self._buffered = buffered  # bytes read past the head
        self._complete = False

    async def _read(self) -> bytes:
        connection = self._connection
        assert connection is not None
        try:
            async with asyncio.timeout(self._timeout):
                return await connection.reader.read(READ_SIZE)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response body") from None
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._connection is None:
            return
        try:
            if self._chunked:
                async for piece in self._chunks():
                    yield piece
            elif self._length is not None:
                async for piece in self._sized():
                    yield piece
            else:  # no framing: the body ends when the server closes the connection
                self._keep_alive = False
                data = self._buffered
                self._buffered = b""
                while True:
                    if data:
                        yield data
                    data = await self._read()
                    if not data:
                        break
                self._complete = True
        finally:
            await self.aclose()

    async def _sized(self) -> AsyncIterator[bytes]:
        expected = self._length
        assert expected is not None
        remaining = expected
        data = self._buffered
        self._buffered = b""
        while remaining > 0:
            if not data:
                data = await self._read()
                if not data:
                    raise httpx.RemoteProtocolError(
                        f"peer closed connection without sending complete message body "
                        f"(received {expected - remaining} bytes, expected {expected})"
                    )
            if len(data) > remaining:
                self._keep_alive = False  # bytes beyond the body: the connection is not clean
                data = data[:remaining]
            remaining -= len(data)
            yield data
            data = b""
        self._complete = True

    async def _chunks(self) -> AsyncIterator[bytes]:
        """Decode ``chunked`` framing; one piece per network read (the data of every chunk it holds)."""
        buffer = self._buffered
        self._buffered = b""
        pos = 0
        size = -1  # -1: a size line comes next; else data bytes of the current chunk still to come
        trailer = False  # past the last chunk: trailer lines until a blank one
        while True:
            out: list[bytes] = []
            while True:
                if trailer:
                    end = buffer.find(b"\r\n", pos)
                    if end < 0:
                        break
                    blank = end == pos
                    pos = end + 2
                    if blank:  # the body is complete
                        self._complete = True
                        if pos != len(buffer):
                            self._keep_alive = False  # bytes nobody asked for: do not reuse
                        if out:
                            yield b"".join(out)
                        return
                    continue
                if size < 0:
                    end = buffer.find(b"\r\n", pos)
                    if end < 0:
                        if len(buffer) - pos > 1024:
                            raise httpx.RemoteProtocolError("malformed chunked body: size line too long")
                        break
                    field = buffer[pos:end].split(b";", 1)[0].strip(b" \t")
                    if not field or field.strip(b"0123456789abcdefABCDEF"):
                        raise httpx.RemoteProtocolError(f"malformed chunked body: chunk size {field[:40]!r}")
                    size = int(field, 16)
                    pos = end + 2
                    if size == 0:
                        trailer = True
                        continue
                if size:
                    available = len(buffer) - pos
                    if available <= 0:
                        break
                    if available < size:
                        out.append(buffer[pos:])  # part of a chunk: pass it on now
                        pos = len(buffer)
                        size -= available
                        break
                    out.append(buffer[pos : pos + size])
                    pos += size
                    size = 0
                if len(buffer) - pos < 2:
                    break  # the chunk's closing CRLF is still to come
                if buffer[pos : pos + 2] != b"\r\n":
                    raise httpx.RemoteProtocolError("malformed chunked body: chunk data not followed by CRLF")
                pos += 2
                size = -1
            if out:
                yield out[0] if len(out) == 1 else b"".join(out)
            data = await self._read()
            if not data:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body (incomplete chunked read)"
                )
            buffer = buffer[pos:] + data if pos < len(buffer) else data
            pos = 0

    async def aclose(self) -> None:
        connection = self._connection
        if connection is None:
            return
        self._connection = None
        if self._complete and self._keep_alive:
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
        if slots is not None:
            try:
                async with asyncio.timeout(timeouts.get("pool")):
                    await slots.acquire()
            except TimeoutError:
                raise httpx.PoolTimeout("timed out waiting for a free upstream connection") from None
        try:
            return await self._exchange(request, origin, head, body, timeouts, slots)
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

    async def _exchange(
        self,
        request: httpx.Request,
        origin: _Origin,
        head: bytes,
        body: bytes,
        timeouts: dict[str, float | None],
        slots: asyncio.Semaphore | None,
    ) -> httpx.Response:
        connection = self._take(origin)
        reused = connection is not None
        while True:
            if connection is None:
                connection = await self._connect(origin, timeouts.get("connect"))
            try:
                return await self._send(request, connection, head, body, timeouts, slots)
            except _Stale:
                # A reused connection the server had already closed: one fresh attempt.
                connection.close()
                if not reused:
                    raise httpx.RemoteProtocolError("server disconnected without sending a response") from None
                connection, reused = None, False
            except BaseException:
                connection.close()
                raise

    async def _send(
        self,
        request: httpx.Request,
        connection: _Connection,
        head: bytes,
        body: bytes,
        timeouts: dict[str, float | None],
        slots: asyncio.Semaphore | None,
    ) -> httpx.Response:
        writer, reader = connection.writer, connection.reader
        try:
            writer.write(head + body if len(body) < 65536 else head)
            if len(body) >= 65536:
                writer.write(body)
            async with asyncio.timeout(timeouts.get("write")):
                await writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request") from None
        except OSError as exc:
            raise _Stale() from exc
        try:
            async with asyncio.timeout(timeouts.get("read")):
                while True:
                    try:
                        raw = await reader.readuntil(b"\r\n\r\n")
                    except asyncio.IncompleteReadError as exc:
                        if not exc.partial:
                            raise _Stale() from None
                        raise httpx.RemoteProtocolError("server disconnected in the middle of the response head") from None
                    except asyncio.LimitOverrunError:
                        raise httpx.RemoteProtocolError("response head too large") from None
                    status, reason, headers = _parse_head(raw)
                    if 100 <= status < 200 and status != 101:
                        continue  # an interim answer; the real one follows
                    break
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response") from None
        except ConnectionResetError:
            raise _Stale() from None
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__) from None
        chunked = False
        length: int | None = None
        keep_alive = True
        for name, value in headers:
            lower = name.lower()
            if lower == b"transfer-encoding":
                chunked = value.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
            elif lower == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    raise httpx.RemoteProtocolError(f"bad content-length {value[:40]!r}") from None
            elif lower == b"connection" and b"close" in value.lower():
                keep_alive = False
        if request.headers.get("connection", "").lower() == "close":
            keep_alive = False
        if request.method == "HEAD" or status in (204, 304):
            chunked, length = False, 0
        elif chunked:
            length = None
        stream = _Body(
            self,
            connection,
            chunked=chunked,
            length=length,
            keep_alive=keep_alive,
            read_timeout=timeouts.get("read"),
            buffered=b"",
            slots=slots,
        )
        return httpx.Response(
            status,
            headers=headers,
            stream=stream,
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        self._idle_count = 0


class _Stale(Exception):
    """The connection was closed before any byte of the answer came."""


def _parse_head(raw: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise httpx.RemoteProtocolError(f"malformed status line {lines[0][:80]!r}") from None
    reason = parts[2] if len(parts) > 2 else b""
    headers: list[tuple[bytes, bytes]] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise httpx.RemoteProtocolError(f"malformed header line {line[:80]!r}")
        headers.append((name, value.strip(b" \t")))
    return status, reason, headers
