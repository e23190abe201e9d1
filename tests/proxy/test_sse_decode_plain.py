"""Reads of whole one-line ``data:`` events take a short path through the SSE decoder; it
gives what the line-by-line reading gives, whatever came before the read."""

from __future__ import annotations

import itertools
import random

import pytest
from httpx_sse import ServerSentEvent

from reference_proxy.sse_decode import SSEDecoder

EVENTS = [
    b'data: {"choices":[{"delta":{"content":"\xc3\xa9t\xc3\xa9"}}]}\n\n',
    b"data: [DONE]\n\n",
    b"data: \n\n",
    b"data:no space\n\n",
    b"data:  two spaces\n\n",
    b"data: a: colon\n\n",
    b"data: bad \xff byte\n\n",
    b"data: one\ndata: two\n\n",
    b"event: error\ndata: {}\n\n",
    b": comment\n\n",
    b"data: cr\r\n\r\n",
    b"\n\n",
    b"data: extra blank\n\n\n",
    b"id: 7\n\n",
    b"event: x\n",
    b"data: unfinished\n",
    b"data: cut",
]


class LineByLine(SSEDecoder):
    """The decoder without its short path: each read fed one byte at a time (a one-byte
    piece never ends in a blank line), so every read is split into lines."""

    __slots__ = ()

    def feed(self, piece: bytes) -> list[ServerSentEvent]:
        out: list[ServerSentEvent] = []
        for i in range(len(piece)):
            out += super().feed(piece[i : i + 1])
        return out


def _read(decoder: SSEDecoder, pieces: list[bytes]) -> list[tuple[str, str]]:
    events = [e for piece in pieces for e in decoder.feed(piece)] + decoder.finish()
    return [(e.event, e.data) for e in events]


@pytest.mark.parametrize("first,second", list(itertools.product(EVENTS, repeat=2)))
def test_two_reads_read_as_line_by_line(first: bytes, second: bytes) -> None:
    for pieces in ([first, second], [first + second], [first, second, first]):
        assert _read(SSEDecoder(), pieces) == _read(LineByLine(), pieces)


def test_bursts_read_as_line_by_line() -> None:
    rng = random.Random(5)
    for _ in range(500):
        events = [rng.choice(EVENTS) for _ in range(rng.randrange(1, 6))]
        body = b"".join(events)
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randrange(0, 4))))
        bounds = [0, *cuts, len(body)]
        pieces = [body[a:b] for a, b in zip(bounds, bounds[1:])]
        reads = [pieces, list(events)]
        for read in reads:
            assert _read(SSEDecoder(), read) == _read(LineByLine(), read), read


def test_a_plain_read_is_read_without_splitting_lines() -> None:
    decoder = SSEDecoder()
    events = decoder.feed(b"data: a\n\ndata: b\n\n")
    assert [(e.event, e.data) for e in events] == [("message", "a"), ("message", "b")]
