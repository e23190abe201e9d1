"""The proxy's SSE decoder reads every body as httpx-sse does, however the body is cut."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence

import httpx
import pytest
from httpx_sse import EventSource

from reference_proxy.sse_decode import SSEDecoder

BODIES = {
    "plain": b'data: {"a":1}\n\ndata: [DONE]\n\n',
    "crlf-and-cr": b"data: x\r\n\r\ndata: y\r\rdata:z\n\n",
    "comment-event-multibyte": b': keep-alive\nevent: error\ndata: {"e":"\xc3\xa9"}\n\n',
    "multi-line-data-ids-and-an-unended-tail": b"data: one\ndata: two\n\nid: 3\nretry: 10\ndata\n\ndata: tail",
    "anthropic-crlf": b'event: content_block_delta\r\ndata: {"t":"\xe2\x82\xac"}\r\n\r\n',
    "spaces-and-blank-lines": b"data:  two spaces\n\n\n\ndata: after\n\n",
    "invalid-utf8": b"data: bad \xff byte\n\n",
}


def _pieces(body: bytes, cuts: Sequence[int]) -> list[bytes]:
    return [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)])]


def _oracle(pieces: list[bytes]) -> list[tuple[str, str]]:
    class Body(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece
            yield b"\n\n"  # the proxy's reading of a clean end: the last event counts

    async def read() -> list[tuple[str, str]]:
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Body())
        return [(e.event, e.data) async for e in EventSource(response).aiter_sse() if e.data]

    return asyncio.run(read())


def _decoded(pieces: list[bytes]) -> list[tuple[str, str]]:
    decoder = SSEDecoder()
    events = [e for piece in pieces for e in decoder.feed(piece)] + decoder.finish()
    return [(e.event, e.data) for e in events if e.data]


@pytest.mark.parametrize("name", list(BODIES))
def test_the_decoder_agrees_with_httpx_sse_at_any_cuts(name: str) -> None:
    body = BODIES[name]
    rng = random.Random(name)
    splits = [[], list(range(1, len(body)))]  # whole, and one byte at a time
    splits += [sorted(set(rng.randrange(1, len(body)) for _ in range(rng.randrange(1, 6)))) for _ in range(40)]
    for cuts in splits:
        pieces = _pieces(body, cuts)
        assert _decoded(pieces) == _oracle(pieces), cuts
