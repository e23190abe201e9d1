"""AWS event-stream frames (``application/vnd.amazon.eventstream``): the binary framing
Kiro / CodeWhisperer and Bedrock's ``ConverseStream`` answer in, written and read. Pure.

A message is ``[total length u32][headers length u32][prelude CRC32][headers][payload]
[message CRC32]``, big-endian; the prelude CRC covers the first 8 bytes, the message CRC
everything before it; both are the standard CRC-32 (``zlib.crc32``). A header is
``[name length u8][name][type u8][value]``; the value's size depends on its type (the
AWS event-stream encoding: bool true/false carry none, byte 1, short 2, integer 4, long 8,
byte array and string a u16 length then the bytes, timestamp 8, UUID 16). Kiro's headers
are strings (type 7); a reader skips the others by their size instead of failing on them.
(https://docs.aws.amazon.com/AmazonS3/latest/API/RESTSelectObjectAppendix.html,
https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream)

The reader is incremental and linear: bytes go in as they arrive, cut anywhere (inside the
prelude, a header, the payload), and whole messages come out; a bad length or CRC is an
``EventStreamError`` in ``Decoder.failed`` saying which, after which the stream cannot be
trusted (the messages before it are kept).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from harness.core.errors import ConformanceError

PRELUDE = 12  # total length, headers length, prelude CRC
TRAILER = 4  # message CRC
MAX_MESSAGE = 16 * 1024 * 1024  # the AWS limit on one message
STRING = 7
# Value sizes of the fixed-size header types; 6 (bytes) and 7 (string) carry a u16 length.
_FIXED: Mapping[int, int] = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
Corruption = Literal["prelude", "message"]


class EventStreamError(ConformanceError):
    """An event stream that cannot be read on: a bad length, CRC or header."""


@dataclass(frozen=True, slots=True)
class Message:
    """One event-stream message: its string headers (others are skipped) and its payload."""

    headers: Mapping[str, str] = field(default_factory=dict)
    payload: bytes = b""

    @property
    def message_type(self) -> str:
        return self.headers.get(":message-type", "event")

    @property
    def event_type(self) -> str | None:
        """The ``:event-type`` of an event, the ``:exception-type`` of an exception, the
        ``:error-code`` of an error."""
        return (self.headers.get(":event-type") or self.headers.get(":exception-type")
                or self.headers.get(":error-code"))


def encode_headers(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        raw_name, raw_value = name.encode("utf-8"), value.encode("utf-8")
        out += struct.pack(">B", len(raw_name)) + raw_name + struct.pack(">BH", STRING, len(raw_value)) + raw_value
    return bytes(out)


def encode(headers: Mapping[str, str], payload: bytes, *, corrupt: Corruption | None = None) -> bytes:
    """One message; ``corrupt`` writes a wrong prelude or message CRC, as a broken link would."""
    head = encode_headers(headers)
    total = PRELUDE + len(head) + len(payload) + TRAILER
    prelude = struct.pack(">II", total, len(head))
    prelude_crc = zlib.crc32(prelude) ^ (0xFFFFFFFF if corrupt == "prelude" else 0)
    body = prelude + struct.pack(">I", prelude_crc) + head + payload
    message_crc = zlib.crc32(body) ^ (0xFFFFFFFF if corrupt == "message" else 0)
    return body + struct.pack(">I", message_crc)


def event(event_type: str, payload: bytes, *, message_type: str = "event",
          corrupt: Corruption | None = None) -> bytes:
    """An ``event`` message with Kiro's headers; an ``exception`` names its type in
    ``:exception-type``, an ``error`` in ``:error-code``."""
    key = {"exception": ":exception-type", "error": ":error-code"}.get(message_type, ":event-type")
    headers = {key: event_type, ":content-type": "application/json", ":message-type": message_type}
    return encode(headers, payload, corrupt=corrupt)


def decode_headers(data: bytes) -> dict[str, str]:
    """The string headers of a header block, the others skipped by their size."""
    out: dict[str, str] = {}
    at, end = 0, len(data)
    while at < end:
        size = data[at]
        name = data[at + 1: at + 1 + size]
        at += 1 + size
        if at >= end:
            raise EventStreamError(f"header {name!r} has no type")
        kind = data[at]
        at += 1
        if kind in (6, STRING):
            if at + 2 > end:
                raise EventStreamError(f"header {name!r} is cut inside its length")
            (length,) = struct.unpack_from(">H", data, at)
            value = data[at + 2: at + 2 + length]
            at += 2 + length
            if at > end:
                raise EventStreamError(f"header {name!r} runs past the header block")
            if kind == STRING:
                out[name.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        elif kind in _FIXED:
            at += _FIXED[kind]
            if at > end:
                raise EventStreamError(f"header {name!r} runs past the header block")
        else:
            raise EventStreamError(f"header {name!r} has unknown type {kind}")
    return out


class Decoder:
    """Whole messages from bytes arriving in any cuts; linear in the bytes fed."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.failed: EventStreamError | None = None

    @property
    def pending(self) -> int:
        """Bytes of a message not complete yet."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Message]:
        """The messages ``data`` completes. At a bad length, CRC or header the messages
        before it are still returned and ``failed`` says what broke; past a bad frame
        nothing can be trusted, so every later call returns nothing."""
        if self.failed is not None:
            return []
        buffer = self._buffer
        buffer += data
        out: list[Message] = []
        at = 0
        try:
            while len(buffer) - at >= PRELUDE:
                total, head_size, prelude_crc = struct.unpack_from(">III", buffer, at)
                if zlib.crc32(bytes(buffer[at: at + 8])) != prelude_crc:
                    raise EventStreamError("prelude CRC mismatch: the frame's lengths cannot be trusted")
                if total < PRELUDE + TRAILER + head_size or total > MAX_MESSAGE:
                    raise EventStreamError(f"impossible message length {total} (headers {head_size})")
                if len(buffer) - at < total:
                    break
                end = at + total
                (message_crc,) = struct.unpack_from(">I", buffer, end - TRAILER)
                if zlib.crc32(bytes(buffer[at: end - TRAILER])) != message_crc:
                    raise EventStreamError("message CRC mismatch: the message was damaged on the way")
                headers = decode_headers(bytes(buffer[at + PRELUDE: at + PRELUDE + head_size]))
                out.append(Message(headers, bytes(buffer[at + PRELUDE + head_size: end - TRAILER])))
                at = end
        except EventStreamError as exc:
            self.failed = exc
            del buffer[:]
            return out
        if at:
            del buffer[:at]
        return out

    def finish(self) -> None:
        """The stream ended: ``failed`` says so when it ended inside a message."""
        if self._buffer and self.failed is None:
            self.failed = EventStreamError(f"the stream ended inside a message ({len(self._buffer)} bytes of it)")
            del self._buffer[:]
