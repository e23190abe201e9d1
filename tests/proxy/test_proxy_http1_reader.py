"""The transport reads each connection as the network delivers it (``data_received`` feeds the
parser): a body nobody takes stops the reading instead of filling memory, and everything the
server sent is still read once the body is taken again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from reference_proxy.http1 import READ_SIZE, LeanTransport

CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"

PIECE = b"data: " + b"x" * 65530 + b"\n\n"
PIECES = 256  # 16 MiB: more than the socket buffers on both ends hold
#: What may wait to be taken: the reads fed before reading paused (each up to 256 KiB).
BOUND = READ_SIZE + 2 * 256 * 1024


@asynccontextmanager
async def chunked_server(pieces: int) -> AsyncIterator[str]:
    """Answers one request with ``pieces`` chunks of ``PIECE``, as fast as it is read."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n{}")
            writer.write(CHUNKED)
            for _ in range(pieces):
                writer.write(b"%x\r\n%s\r\n" % (len(PIECE), PIECE))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            await reader.read()
        except (Exception, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_body_nobody_takes_pauses_the_reading_and_loses_nothing() -> None:
    async with chunked_server(PIECES) as url:
        transport = LeanTransport(max_connections=1, max_keepalive=1)
        request = httpx.Request("POST", url, content=b"{}", extensions={"timeout": {"read": 30.0}})
        response = await transport.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        pieces = response.stream.__aiter__()
        received = len(await anext(pieces))
        connection = response.stream._connection  # type: ignore[attr-defined]
        for _ in range(1000):  # until the socket buffers are full and the reading paused
            if not connection.transport.is_reading():
                break
            await asyncio.sleep(0.01)
        assert not connection.transport.is_reading()
        waiting = sum(len(piece) for piece in connection.response.body)
        assert waiting <= BOUND
        async for piece in pieces:
            received += len(piece)
        assert received == PIECES * len(PIECE)
        await transport.aclose()
