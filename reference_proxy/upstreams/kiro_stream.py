"""Kiro's answer: AWS event-stream messages read off the socket, then read as chat chunks.

``FrameDecoder`` decodes the binary frames however the network cuts them (prelude, CRC-32
checked; headers of types other than string skipped by their size) into one SSE-like event
per message, so the relay and the pipelines run on them unchanged: an event's data is
``{"event": TYPE, "payload": {...}}``; an exception or error message, an
``invalidStateEvent``, a damaged frame or a body that ends inside a frame is an ``error``
event and ends the stream.

``KiroAsChunks`` turns them into chat chunks. What Kiro does that the readers must
survive (each seen in the gateways' trackers, cited by the scenarios ``kiro-*`` and ``faults-kiro-*``):
a call's first ``toolUseEvent`` may come without its ``toolUseId``; ``input`` may be a whole
object, or ``{}`` before the fragments; a call may never get ``stop`` (the stream is cut);
the ``metadataEvent`` may never come; a payload may sit under its own event's name. A call
is sent to the client only when it is whole (stopped, or valid JSON at the end); one cut
off inside its input is never sent as a call: its text is, and the answer ends with ``length``.
"""

from __future__ import annotations

import json
import secrets
import struct
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from httpx_sse import ServerSentEvent

from reference_proxy.translate.streams import ChunkWriter, Item
from reference_proxy.upstreams.decoded import error_event

_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}  # header value sizes by type; 6 and 7 carry a u16 length
MAX_MESSAGE = 16 * 1024 * 1024
FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length", "stop_sequence": "stop"}
ERRORS = ("exception", "error")


class FrameError(Exception):
    """A frame that cannot be read: the stream is not to be trusted past it."""


def read_headers(data: bytes) -> dict[str, str]:
    out: dict[str, str] = {}
    at = 0
    while at < len(data):
        size = data[at]
        name = data[at + 1: at + 1 + size].decode("utf-8", "replace")
        at += 1 + size
        if at >= len(data):
            raise FrameError(f"header {name!r} has no type")
        kind = data[at]
        at += 1
        if kind in (6, 7):
            (length,) = struct.unpack_from(">H", data, at)
            if kind == 7:
                out[name] = data[at + 2: at + 2 + length].decode("utf-8", "replace")
            at += 2 + length
        elif kind in _FIXED:
            at += _FIXED[kind]
        else:
            raise FrameError(f"header {name!r} has unknown type {kind}")
        if at > len(data):
            raise FrameError(f"header {name!r} runs past its block")
    return out


class FrameReader:
    """Messages (headers, payload) out of bytes in any cuts."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.error: FrameError | None = None  # set at a damaged frame; nothing after it is read

    def feed(self, data: bytes) -> list[tuple[dict[str, str], bytes]]:
        buffer = self.buffer
        buffer += data
        out: list[tuple[dict[str, str], bytes]] = []
        at = 0
        if self.error is not None:
            return out
        try:
            while len(buffer) - at >= 12:
                total, head, crc = struct.unpack_from(">III", buffer, at)
                if zlib.crc32(buffer[at: at + 8]) != crc:
                    raise FrameError("the upstream's event stream is damaged (prelude CRC mismatch)")
                if total < 16 + head or total > MAX_MESSAGE:
                    raise FrameError(f"the upstream's event stream is damaged (message length {total})")
                if len(buffer) - at < total:
                    break
                end = at + total
                if zlib.crc32(buffer[at: end - 4]) != struct.unpack_from(">I", buffer, end - 4)[0]:
                    raise FrameError("the upstream's event stream is damaged (message CRC mismatch)")
                out.append((read_headers(bytes(buffer[at + 12: at + 12 + head])), bytes(buffer[at + 12 + head: end - 4])))
                at = end
        except FrameError as exc:
            self.error = exc
        del buffer[:at]
        return out


def _event(headers: Mapping[str, str], payload: bytes) -> ServerSentEvent:
    kind = headers.get(":message-type", "event")
    name = headers.get(":event-type") or headers.get(":exception-type") or headers.get(":error-code") or kind
    try:
        value: Any = json.loads(payload) if payload else {}
    except ValueError:
        value = {"message": payload.decode("utf-8", "replace")}
    if isinstance(value, Mapping) and isinstance(value.get(name), Mapping):
        value = value[name]  # a payload under its own event's name
    if kind in ERRORS or name == "invalidStateEvent":
        message = value.get("message") if isinstance(value, Mapping) else None
        detail = f"{name}: {message}" if isinstance(message, str) and message else name
        retry = value.get("retryAfterMilliseconds") if isinstance(value, Mapping) else None
        if isinstance(retry, (int, float)) and not isinstance(retry, bool):
            detail += f" (retry after {retry / 1000:g} s)"
        return error_event(f"the upstream reported {detail}", "rate_limit_error" if "Throttling" in name else "upstream_error")
    return ServerSentEvent(event="message", data=json.dumps({"event": name, "payload": value}))


class FrameDecoder:
    """A Kiro body's messages as events (a ``BodyDecoder``)."""

    def __init__(self) -> None:
        self.frames = FrameReader()

    def feed(self, data: bytes) -> list[ServerSentEvent]:
        batch = [_event(headers, payload) for headers, payload in self.frames.feed(data)]
        if self.frames.error is not None:
            batch.append(error_event(str(self.frames.error)))
        return batch

    def finish(self) -> list[ServerSentEvent]:
        rest = self.frames.buffer
        if rest and self.frames.error is None:
            return [error_event(f"the upstream's event stream ended inside a frame ({len(rest)} bytes of it)")]
        return []


@dataclass
class OpenCall:
    id: str | None
    name: str
    parts: list[str] = field(default_factory=list)
    stopped: bool = False


def _complete(arguments: str) -> bool:
    try:
        json.loads(arguments or "{}")
    except ValueError:
        return False
    return True


class KiroAsChunks(ChunkWriter):
    """Kiro events (``FrameDecoder``'s data) read as chat-completions chunks."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model, created=int(time.time()))
        self.call: OpenCall | None = None
        self.calls = 0
        self.truncated = False
        self.stop_reason: str | None = None
        self.usage: dict[str, int] | None = None

    def _close_call(self, out: list[Any]) -> None:
        """Send the open call if its input is whole JSON. One cut inside its input is never a
        call (``Write: {}`` runs with other arguments than the model wrote): what came of it
        stays visible as text, and the answer ends with ``length``."""
        call, self.call = self.call, None
        if call is None:
            return
        arguments = "".join(call.parts)
        if not _complete(arguments):
            self.truncated = True
            out.append(self.chunk({"content": arguments}))
            return
        ident = call.id or "tooluse_" + secrets.token_hex(11)
        out.append(self.chunk({"tool_calls": [{"index": self.calls, "id": ident, "type": "function",
                                                "function": {"name": call.name, "arguments": arguments or "{}"}}]}))
        self.calls += 1

    def _tool_use(self, payload: Mapping[str, Any], out: list[Any]) -> None:
        ident = payload.get("toolUseId") if isinstance(payload.get("toolUseId"), str) else None
        name = payload.get("name") if isinstance(payload.get("name"), str) else None
        call = self.call
        # A fragment without an id (or with the open call's) continues the open call; the id may come late.
        continues = call is not None and not call.stopped and (
            ident is None or call.id is None or ident == call.id) and (name is None or name == call.name)
        if not continues:
            self._close_call(out)
            call = self.call = OpenCall(ident, name or "")
        assert call is not None
        call.id = call.id or ident
        given = payload.get("input")
        if isinstance(given, Mapping):  # the whole input as an object
            call.parts = [json.dumps(given, ensure_ascii=False)]
        elif isinstance(given, str) and given:
            if "".join(call.parts).strip() == "{}":
                call.parts = []  # an empty object ahead of the fragments says nothing
            call.parts.append(given)
        if payload.get("stop") is True:
            call.stopped = True
            self._close_call(out)

    def read_object(self, item: dict[str, Any]) -> list[Item]:
        kind = item.get("event")
        payload = item.get("payload")
        payload = payload if isinstance(payload, Mapping) else {}
        out: list[Item] = []
        self.start(out)
        if kind == "assistantResponseEvent":
            text = payload.get("content")
            if isinstance(text, str) and text:
                self._close_call(out)
                out.append(self.chunk({"content": text}))
        elif kind == "toolUseEvent":
            self._tool_use(payload, out)
        elif kind == "metadataEvent":
            reason = payload.get("stopReason")
            self.stop_reason = reason if isinstance(reason, str) else self.stop_reason
            usage = payload.get("tokenUsage")
            if isinstance(usage, Mapping):
                given = {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
                prompt, completion = given.get("inputTokens", 0), given.get("outputTokens", 0)
                self.usage = {"prompt_tokens": prompt, "completion_tokens": completion,
                              "total_tokens": prompt + completion}
        return out

    def end(self) -> list[Item]:
        """The body ended (Kiro has no terminator): close the open call and finish the answer."""
        out: list[Item] = []
        self.start(out)
        self._close_call(out)
        if self.calls:
            reason = "tool_calls"
        elif self.truncated:
            reason = "length"
        else:
            reason = FINISH.get(self.stop_reason or "", "stop")
        return [*out, *self.last(reason, self.usage)]
