"""The proxy's upstream HTTP/1.1 transport against a raw socket server: framing, reuse, failures."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from reference_proxy.http1 import LeanTransport
from reference_proxy.read_deadline import ReadDeadline

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[str]:
    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        except (Exception, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(guarded, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


def client(**kwargs: float) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=LeanTransport(max_connections=10, max_keepalive=10), timeout=httpx.Timeout(2.0, **kwargs)
    )


CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
BODY = "data: é1\n\n" * 3 + "data: [DONE]\n\n"


def chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts) + b"0\r\nx-trailer: 1\r\n\r\n"


@pytest.mark.parametrize("cut", [1, 2, 3, 5, 7, 11, 1000])
async def test_chunked_body_split_at_every_size_arrives_whole(cut: int) -> None:
    wire = CHUNKED + chunked(BODY.encode(), 4)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        for i in range(0, len(wire), cut):
            writer.write(wire[i : i + cut])
            await writer.drain()
            await asyncio.sleep(0)
        await reader.read()

    async with raw_server(handler) as url, client() as http:
        async with http.stream("POST", url + "/v1/chat/completions", content=b"{}") as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            body = b"".join([piece async for piece in response.aiter_bytes()])
    assert body.decode() == BODY


async def test_connection_is_reused_after_a_complete_body_and_not_after_a_partial_one() -> None:
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        try:
            while True:
                await read_request(reader)
                wire = CHUNKED + chunked(BODY.encode(), 10)
                writer.write(wire[:-20])
                await writer.drain()
                await asyncio.sleep(0.05)  # the end comes in a later read
                writer.write(wire[-20:])
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async with raw_server(handler) as url, client() as http:
        for _ in range(3):
            response = await http.post(url + "/x", content=b"{}")
            assert response.text == BODY
        assert connections == 1
        async with http.stream("POST", url + "/x", content=b"{}") as response:
            async for _ in response.aiter_bytes():
                break  # closed before the end: this connection cannot be reused
        assert (await http.post(url + "/x", content=b"{}")).text == BODY
        assert connections == 2


async def test_content_length_and_close_delimited_bodies() -> None:
    answers = [
        b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{\"a\": true}",
        b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n{\"b\": 1}",
    ]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answers.pop(0))
        await writer.drain()
        writer.close()

    async with raw_server(handler) as url, client() as http:
        first = await http.post(url + "/x", content=b"{}")
        assert (first.status_code, first.json()) == (400, {"a": True})
        second = await http.post(url + "/x", content=b"{}")
        assert (second.status_code, second.json()) == (200, {"b": 1})


@pytest.mark.parametrize(
    "wire",
    [
        CHUNKED + b"5\r\nabc",  # the connection drops inside a chunk
        CHUNKED + b"3\r\nabc\r\n",  # ... between chunks
        CHUNKED + b"zz\r\nabc\r\n0\r\n\r\n",  # a size that is not hexadecimal
        CHUNKED + b"3\r\nabcXY0\r\n\r\n",  # data not followed by CRLF
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",  # shorter than announced
        b"HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n",  # a negative length
        b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\ncontent-length: 3\n\nabc",  # bare LF line ends: refused at once, not waited on
        b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n",
        b"SMTP ready\r\n\r\n",  # not HTTP at all
    ],
)
async def test_broken_bodies_are_protocol_errors(wire: bytes) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(wire)
        await writer.drain()
        writer.close()

    async with raw_server(handler) as url, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.post(url + "/x", content=b"{}")


@pytest.mark.parametrize(
    ("answer", "reused"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", True),
        (b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok", False),  # 1.0 without keep-alive
        (b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 2\r\n\r\nok", True),
        (b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok", False),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokEXTRA", False),  # bytes nobody asked for
        # a whole second response nobody asked for: neither its status nor its keep-alive counts
        (b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 503 Nope\r\ncontent-length: 0\r\n\r\n", False),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok", True),
    ],
)
async def test_a_connection_is_reused_only_when_the_server_keeps_it_clean_and_open(answer: bytes, reused: bool) -> None:
    """Whatever the server says about keeping the connection, the next request is
    answered at once: never sent down a connection the server no longer reads."""
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        while True:
            await read_request(reader)
            writer.write(answer)
            await writer.drain()

    async with raw_server(handler) as url, client(read=1.0) as http:
        for _ in range(2):
            response = await http.post(url + "/x", content=b"{}")
            assert (response.status_code, response.content) == (200, b"ok")
    assert connections == (1 if reused else 2)


async def test_failures_map_to_httpx_exceptions() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await asyncio.sleep(5)

    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.close()

    async with raw_server(silent) as url, client(read=0.2) as http:
        with pytest.raises(httpx.ReadTimeout):
            await http.post(url + "/x", content=b"{}")
    async with raw_server(hang_up) as url, client() as http:
        with pytest.raises(httpx.RemoteProtocolError):
            await http.post(url + "/x", content=b"{}")
    async with raw_server(hang_up) as url:
        pass
    async with client() as http:
        with pytest.raises(httpx.ConnectError):
            await http.post(url + "/x", content=b"{}")


async def test_request_is_sent_with_its_headers_and_body() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()

    async with raw_server(handler) as url, client() as http:
        response = await http.post(url + "/v1/chat/completions?a=1", content=b'{"x":1}', headers={"X-Test": "yes"})
        assert response.status_code == 204 and response.content == b""
    head, _, body = seen[0].partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/chat/completions?a=1 HTTP/1.1\r\n")
    assert b"\r\nX-Test: yes" in head or b"\r\nx-test: yes" in head
    assert body == b'{"x":1}'


# --------------------------------------------------------------------------- the body's read deadline


async def test_a_body_read_that_waits_past_the_timeout_is_a_read_timeout() -> None:
    async def stalls_mid_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(CHUNKED + b"9\r\ndata: a\n\n\r\n")
        await writer.drain()
        await asyncio.sleep(5)

    async with raw_server(stalls_mid_body) as url, client(read=0.2) as http:
        async with http.stream("POST", url + "/x", content=b"{}") as response:
            received = b""
            with pytest.raises(httpx.ReadTimeout):
                async for piece in response.aiter_bytes():
                    received += piece
    assert received == b"data: a\n\n"


async def test_the_read_deadline_counts_from_each_read() -> None:
    """Reads that each return at once never time out, however long the body lasts; the
    time between reads (the relay writing to its client) is not a read's."""
    deadline = ReadDeadline(0.2)
    loop = asyncio.get_running_loop()
    for _ in range(5):
        ready: asyncio.Future[bytes] = loop.create_future()
        loop.call_soon(ready.set_result, b"x")
        assert await deadline.read(ready) == b"x"
        await asyncio.sleep(0.1)
    never: asyncio.Future[bytes] = loop.create_future()
    with pytest.raises(TimeoutError):
        await deadline.read(never)
    deadline.close()


async def test_a_cancelled_read_stays_cancelled() -> None:
    """A client hanging up cancels the read: that is not the upstream timing out."""
    deadline = ReadDeadline(60)
    never: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    reading = asyncio.ensure_future(deadline.read(never))
    await asyncio.sleep(0)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    deadline.close()
