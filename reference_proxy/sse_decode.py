"""Server-sent events from the bytes of an upstream body, as the network delivers them.

The WHATWG event-stream rules, byte by byte: a line ends in CRLF, LF or CR (a CR at the
end of one read waits for the next, which may start with its LF); a blank line
dispatches the event; ``data`` lines join with a newline; ``event`` names it; a line
starting with ``:`` is a comment; a field without a colon has an empty value; one space
after the colon is dropped. Lines are decoded as UTF-8 whole (a line ending is ASCII, so
a character cut between two reads is always whole by then; invalid bytes become U+FFFD).
``id`` and ``retry`` are read and ignored: the proxy does not reconnect.

Why not a general SSE library over decoded text: this runs for every frame of every
stream, and reading whole lines out of the raw bytes costs a split and a decode per
event, where a text layer and a line layer cost a generator step and a copy each.
"""

from __future__ import annotations

from httpx_sse import ServerSentEvent

_LF, _CR, _BLANK = b"\n", b"\r", b"\n\n"
_DATA = b"data: "


class SSEDecoder:
    """Feed it the body's bytes piece by piece; it returns the events each piece completes."""

    __slots__ = ("_rest", "_cr", "_data", "_event")

    def __init__(self) -> None:
        self._rest = b""  # an unfinished line (never holding a CR)
        self._cr = False  # the last piece ended in a CR: an LF starting the next one belongs to it
        self._data: list[str] = []
        self._event = ""

    def feed(self, piece: bytes) -> list[ServerSentEvent]:
        if piece[-2:] == _BLANK and not (self._cr or self._rest or self._data or self._event) and _CR not in piece:
            plain = _plain(piece)
            if plain is not None:
                return plain
        if self._cr:
            self._cr = False
            if piece[:1] == _LF:
                piece = piece[1:]
        buf = self._rest + piece if self._rest else piece
        if _CR in buf:
            self._cr = buf.endswith(_CR)
            buf = buf.replace(b"\r\n", _LF).replace(_CR, _LF)
        lines = buf.split(_LF)
        self._rest = lines.pop()
        return self._lines(lines)

    def finish(self) -> list[ServerSentEvent]:
        """The body ended: an unfinished line and an event without its blank line still count."""
        rest, self._rest, self._cr = self._rest, b"", False
        return self._lines([rest, b""] if rest else [b""])

    def _lines(self, lines: list[bytes]) -> list[ServerSentEvent]:
        out: list[ServerSentEvent] = []
        for raw in lines:
            if not raw:
                if self._data:
                    out.append(ServerSentEvent(event=self._event or "message", data="\n".join(self._data)))
                self._data = []
                self._event = ""
                continue
            if raw[:1] == b":":
                continue
            line = raw.decode("utf-8", "replace")
            name, colon, value = line.partition(":")
            if colon and value[:1] == " ":
                value = value[1:]
            if name == "data":
                self._data.append(value)
            elif name == "event":
                self._event = value
        return out


def _plain(piece: bytes) -> list[ServerSentEvent] | None:
    """A read of whole one-line ``data: …`` events and nothing else (what an inference server
    writes for every token), read without splitting it into lines; None for anything else,
    which the line-by-line reading handles. Called only between events, on a read with no CR."""
    out: list[ServerSentEvent] = []
    for block in piece[:-2].split(_BLANK):
        if block[:6] != _DATA or _LF in block:
            return None
        out.append(ServerSentEvent(event="message", data=block[6:].decode("utf-8", "replace")))
    return out
