"""The AWS event-stream codec: what it writes reads back whole however the bytes are
cut, headers of other types are skipped, and a damaged frame is reported, not guessed at."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harness.core.eventstream import Decoder, EventStreamError, Message, encode, event

_text = st.text(max_size=40)
_headers = st.dictionaries(st.text(min_size=1, max_size=12), _text, max_size=4)
_messages = st.lists(st.tuples(_headers, st.binary(max_size=300)), min_size=1, max_size=6)


def _read(data: bytes, cuts: list[int]) -> tuple[list[Message], Decoder]:
    decoder = Decoder()
    out: list[Message] = []
    last = 0
    for cut in sorted(set(c for c in cuts if 0 < c < len(data))) + [len(data)]:
        out += decoder.feed(data[last:cut])
        last = cut
    decoder.finish()
    return out, decoder


@given(_messages, st.lists(st.integers(min_value=0, max_value=4000), max_size=30))
def test_any_split_reads_back_every_message(messages: list[tuple[dict[str, str], bytes]], cuts: list[int]) -> None:
    data = b"".join(encode(h, p) for h, p in messages)
    read, decoder = _read(data, cuts)
    assert decoder.failed is None
    assert [(dict(m.headers), m.payload) for m in read] == messages


@given(_messages)
def test_byte_by_byte(messages: list[tuple[dict[str, str], bytes]]) -> None:
    data = b"".join(encode(h, p) for h, p in messages)
    read, _ = _read(data, list(range(len(data))))
    assert [m.payload for m in read] == [p for _, p in messages]


def test_kiro_headers() -> None:
    [m] = Decoder().feed(event("toolUseEvent", b'{"name":"x"}'))
    assert (m.message_type, m.event_type, m.payload) == ("event", "toolUseEvent", b'{"name":"x"}')
    [e] = Decoder().feed(event("ThrottlingException", b"{}", message_type="exception"))
    assert (e.message_type, e.event_type) == ("exception", "ThrottlingException")


def _with_raw_headers(raw_headers: bytes, payload: bytes) -> bytes:
    total = 12 + len(raw_headers) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw_headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def test_headers_of_other_types_are_skipped() -> None:
    raw = (b"\x04flag\x00" + b"\x01b\x02\x07" + b"\x01s\x03\x00\x07" + b"\x01i\x04" + b"\x00" * 4
           + b"\x01l\x05" + b"\x00" * 8 + b"\x03bin\x06\x00\x03abc" + b"\x02ts\x08" + b"\x00" * 8
           + b"\x04uuid\x09" + b"\x01" * 16 + b"\x0b:event-type\x07\x00\x10assistantRespons")
    [m] = Decoder().feed(_with_raw_headers(raw, b"{}"))
    assert dict(m.headers) == {":event-type": "assistantRespons"}


@pytest.mark.parametrize("corrupt", ["prelude", "message"])
def test_a_bad_crc_is_reported_after_the_good_messages(corrupt: str) -> None:
    good = event("assistantResponseEvent", b'{"content":"hi"}')
    bad = event("assistantResponseEvent", b'{"content":"lost"}', corrupt=corrupt)  # type: ignore[arg-type]
    decoder = Decoder()
    read = decoder.feed(good + bad + good)
    assert [m.payload for m in read] == [b'{"content":"hi"}']
    assert isinstance(decoder.failed, EventStreamError) and corrupt in str(decoder.failed)
    assert decoder.feed(good) == []


def test_a_stream_ending_inside_a_message_is_reported() -> None:
    decoder = Decoder()
    assert decoder.feed(event("x", b"{}")[:-3]) == []
    decoder.finish()
    assert decoder.failed is not None and "ended inside" in str(decoder.failed)


def test_garbage_is_reported_not_guessed_at() -> None:
    decoder = Decoder()
    assert decoder.feed(b"data: {}\n\n" * 3) == []
    assert decoder.failed is not None
