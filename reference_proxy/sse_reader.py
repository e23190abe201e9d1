"""Incremental SSE decoding of the upstream's raw bytes.

Works on whatever pieces the network delivers and returns every event completed
by each piece, so the relay can answer all of them with one write. Partial lines
are kept as a list of pieces and joined once their end arrives: linear in the
stream size however small the pieces are. Lines end at ``\\n``, ``\\r\\n`` or
``\\r``; comments (``: keep-alive``), ``id`` and ``retry`` are ignored; ``data:``
with or without the space. Bytes are decoded as UTF-8 per complete event, so a
character split between two reads arrives whole.
"""

from __future__ import annotations


class SSEReader:
    __slots__ = ("_partial", "_data", "_event", "_after_cr")

    def __init__(self) -> None:
        self._partial: list[bytes] = []
        self._data: list[bytes] = []
        self._event = b""
        self._after_cr = False  # the last piece ended in \r: a leading \n is its pair

    def feed(self, piece: bytes) -> list[tuple[str, str]]:
        """The ``(event name, data)`` of every event the piece completes."""
        if self._after_cr:
            self._after_cr = False
            if piece[:1] == b"\n":
                piece = piece[1:]
        if not piece:
            return []
        if b"\r" in piece:
            self._after_cr = piece.endswith(b"\r")
            piece = piece.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = piece.split(b"\n")
        rest = lines.pop()
        events: list[tuple[str, str]] = []
        if lines:
            if self._partial:
                self._partial.append(lines[0])
                lines[0] = b"".join(self._partial)
                self._partial = []
            for line in lines:
                self._line(line, events)
        if rest:
            self._partial.append(rest)
        return events

    def close(self) -> list[tuple[str, str]]:
        """The end of the body: an event missing only its final blank line still counts."""
        events: list[tuple[str, str]] = []
        if self._partial:
            line = b"".join(self._partial)
            self._partial = []
            self._line(line, events)
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[tuple[str, str]]) -> None:
        if not line:
            if self._data:
                events.append(
                    (self._event.decode("utf-8", "replace"), b"\n".join(self._data).decode("utf-8", "replace"))
                )
            self._data = []
            self._event = b""
            return
        if line[0] == 58:  # ":" starts a comment
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value
