"""The relay's flow control: a client that does not read slows the upstream reading
down instead of making the proxy hold the whole answer in memory; what one network
read brought leaves in one write."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx

from reference_proxy.pipeline import StreamPipeline
from reference_proxy.relay import RelayResponse
from starlette.types import Message

PIECE = b"".join(
    b"data: " + json.dumps({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                            "choices": [{"index": 0, "delta": {"content": "x" * 200}}]}).encode() + b"\n\n"
    for _ in range(50)
)
PIECES = 400  # an answer of about 5 MB


class CountingStream(httpx.AsyncByteStream):
    def __init__(self) -> None:
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for _ in range(PIECES):
            self.sent += 1
            yield PIECE
            await asyncio.sleep(0)
        yield b"data: [DONE]\n\n"


Send = Callable[[Message], Awaitable[None]]


def start_relay(stream: CountingStream, send: Send) -> tuple[RelayResponse, asyncio.Future[None]]:
    """A relay of ``stream`` to a client that writes with ``send`` and never hangs up."""
    upstream = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)
    pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=False, request_model="m")
    relay = RelayResponse(upstream, pipeline, lambda hung_up: None)

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return relay, asyncio.ensure_future(relay({"type": "http"}, receive, send))


async def test_a_client_that_stops_reading_stops_the_upstream_reads() -> None:
    stream = CountingStream()
    reading = asyncio.Event()  # the client reads again once this is set
    bodies: list[bytes] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            bodies.append(message.get("body", b""))
            if len(bodies) == 2:
                await reading.wait()  # a slow client: this write does not complete

    relay, task = start_relay(stream, send)
    for _ in range(200):
        await asyncio.sleep(0)
    stalled_at = stream.sent
    held = sum(len(b) for b in bodies) + sum(len(b) for b in relay._outbox)
    assert stalled_at <= 2, "the upstream was read on while the client did not read"
    assert held <= 2 * len(PIECE)
    reading.set()
    await asyncio.wait_for(task, 10)
    assert stream.sent == PIECES  # and once the client reads again, all of it arrives
    delivered = b"".join(bodies)
    assert delivered.count(b'"content":"' + b"x" * 200) == PIECES * 50
    assert delivered.endswith(b"data: [DONE]\n\n")


async def test_a_write_that_fails_ends_the_upstream_reading_too() -> None:
    """A send that raises (the server shutting down) while the reader waits for room:
    the response ends with that error instead of waiting forever for the reader."""
    stream = CountingStream()
    reading = asyncio.Event()
    writes = 0

    async def send(message: Message) -> None:
        nonlocal writes
        if message["type"] == "http.response.body":
            writes += 1
            if writes == 2:
                await reading.wait()
            elif writes == 3:
                raise RuntimeError("the server is shutting down")

    _, task = start_relay(stream, send)
    for _ in range(200):
        await asyncio.sleep(0)
    reading.set()
    for _ in range(500):
        await asyncio.sleep(0)
    assert task.done(), "the response still waits for its reader"
    assert isinstance(task.exception(), RuntimeError)
    assert stream.sent < PIECES  # the upstream was not read to the end


async def test_what_one_read_brought_leaves_in_one_write() -> None:
    """Fifty events in one read: the first content at once (after its role chunk), the
    other 49 in one write, then fifty per write."""
    stream = CountingStream()
    writes: list[int] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.body":
            writes.append(message.get("body", b"").count(b"data: "))

    _, task = start_relay(stream, send)
    await asyncio.wait_for(task, 30)
    assert writes[:3] == [2, 49, 50]
    assert sum(writes) == PIECES * 50 + 3  # and the role chunk, the finish chunk and [DONE]
