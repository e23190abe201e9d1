"""One streamed Messages answer: the upstream's Messages events in, the client's SSE text out.

Pure and synchronous, like ``pipeline.StreamPipeline`` for chat completions. The text
of every upstream text block runs through a rescuer; the client gets

1. the upstream's ``message_start`` (content empty, stop_reason null);
2. text blocks of ``text_delta`` events, as soon as the rescuer releases text;
3. per rescued call: ``content_block_stop`` for the open text block, then a ``tool_use``
   block (``id`` ``toolu_…``, the name, ``input: {}``), its input as ``input_json_delta``,
   ``content_block_stop``;
4. native tool_use blocks once complete (its ``content_block_stop``), other native
   blocks (thinking…) as they come;
5. ``message_delta`` (``stop_reason`` ``tool_use`` when any call was delivered) and
   ``message_stop``.

Block indices run 0..n-1 over everything delivered. Calls rescued and native are
de-duplicated against each other (``dedup.CallLedger``). White space alone never
opens a text block, and white space next to a delivered call is dropped: the Messages
API refuses an assistant turn holding a white-space-only text block, and clients send
the turn back.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from reference_proxy.anthropic_errors import stream_error
from reference_proxy.openai_stream import dumps
from reference_proxy.pipeline import RescuerFactory, ResponseStats, default_rescuer, event_object
from reference_proxy.rescue import ToolSpec
from reference_proxy.text_rescue import Deliveries, TextRescue, WholeCall
from reference_proxy.translate.answers import as_object

log = logging.getLogger("reference_proxy.anthropic")

PING = 'event: ping\ndata: {"type":"ping"}\n\n'


def sse_event(payload: Mapping[str, Any]) -> str:
    """One event with its ``event:`` line naming the payload's type (the SDKs dispatch on it)."""
    return f"event: {payload['type']}\ndata: {dumps(payload)}\n\n"


def new_tool_use_id() -> str:
    return "toolu_" + secrets.token_hex(12)


def new_message_id() -> str:
    return "msg_" + secrets.token_hex(12)


def final_stop_reason(upstream: str | None, calls: int) -> str:
    """``tool_use`` when calls were delivered; otherwise the upstream's reason, except that a
    ``tool_use`` reason with no call left becomes ``end_turn``."""
    if calls:
        return "tool_use"
    if not upstream or upstream == "tool_use":
        return "end_turn"
    return upstream


def input_text(value: Any) -> str:
    """A tool input as JSON text; ``{}`` when it is missing or empty."""
    return dumps(value) if isinstance(value, Mapping) and value else "{}"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _usage(value: Any, *, required: Sequence[str]) -> dict[str, Any]:
    usage = dict(value) if isinstance(value, Mapping) else {}
    for name in required:
        if _int(usage.get(name)) is None:
            usage[name] = 0
    return usage


class _TextBlock:
    __slots__ = ("rescue",)

    def __init__(self, rescue: TextRescue) -> None:
        self.rescue = rescue


class _NativeCall:
    __slots__ = ("id", "name", "parts")

    def __init__(self, id: str, name: str, parts: list[str]) -> None:
        self.id = id
        self.name = name
        self.parts = parts


class _Passed:
    """A native block of another kind (thinking…), passed on under its new index."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


_Upstream = _TextBlock | _NativeCall | _Passed


class AnthropicStreamPipeline:
    """The state of one streamed Messages answer."""

    def __init__(
        self,
        *,
        tools: Sequence[ToolSpec],
        request_model: str,
        buffer_cap: int = 65536,
        rescuer_factory: RescuerFactory = default_rescuer,
    ) -> None:
        self.tools = tuple(tools)
        self.request_model = request_model
        self.buffer_cap = buffer_cap
        self._rescuer_factory = rescuer_factory
        self.stats = ResponseStats()
        self.closed = False
        self.answered = False  # a block was written (the relay sends the first at once)
        self.model = request_model
        self._started = False
        self._finished = False  # message_delta sent
        self._blocks: dict[int, _Upstream] = {}  # open upstream blocks, by upstream index
        self._next_index = 0
        self._text_index: int | None = None  # the client's open text block
        self._after_call = False  # the last block delivered is a tool_use
        self._held_space = ""  # white space at the end of the released text, not sent yet
        self._calls = Deliveries(self.stats)
        self._stop_reason: str | None = None
        self._stop_sequence: Any = None
        self._usage: dict[str, Any] = {}

    # ------------------------------------------------------------------ input

    def feed_data(self, data: str) -> str:
        """One SSE ``data`` payload (a Messages event as JSON); broken JSON is skipped."""
        if self.closed:
            return ""
        payload = event_object(data, self.stats, log)
        return "" if payload is None else self.feed(payload)

    def feed(self, payload: Mapping[str, Any]) -> str:
        """One parsed upstream event; returns the SSE text to send now (maybe empty)."""
        if self.closed:
            return ""
        kind = payload.get("type")
        if kind == "error":
            error = payload.get("error")
            return self.fail(error if isinstance(error, Mapping) else {"message": str(error or "upstream error")})
        handler = self._HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None:
            log.info("ignored an upstream event of unknown type %.80r", kind)
            return ""
        out: list[str] = []
        handler(self, payload, out)
        return "".join(out)

    def close(self) -> str:
        """The upstream ended (``message_stop``, or the end of the body without it)."""
        if self.closed:
            return ""
        out: list[str] = []
        self._finish(out)
        out.append(sse_event({"type": "message_stop"}))
        self.closed = True
        return "".join(out)

    def fail(self, error: Mapping[str, Any]) -> str:
        """The upstream failed mid-stream: release the held text, then an ``error`` event.

        When the ``message_delta`` was already sent, the answer is complete and ends normally."""
        if self.closed:
            return ""
        if self._finished:
            log.warning("upstream failed after the answer was complete (%s); ended normally", error.get("message"))
            return self.close()
        out: list[str] = []
        for block in list(self._blocks.values()):
            if isinstance(block, _TextBlock):
                self._pieces(block.rescue, block.rescue.finish(), out)
            elif isinstance(block, _NativeCall):
                log.warning("dropped native call %s: the upstream failed before it was complete", block.name)
        self._blocks.clear()
        self._release_space(out)
        payload = stream_error(error)
        self.stats.error = payload["error"]["message"]
        out.append(sse_event(payload))
        self.closed = True
        return "".join(out)

    # ------------------------------------------------------------------ upstream events

    def _on_message_start(self, payload: Mapping[str, Any], out: list[str]) -> None:
        if self._started:
            log.warning("ignored a second message_start from the upstream")
            return
        message = payload.get("message")
        self._start(message if isinstance(message, Mapping) else {}, out)

    def _on_ping(self, payload: Mapping[str, Any], out: list[str]) -> None:
        out.append(PING)

    def _on_block_start(self, payload: Mapping[str, Any], out: list[str]) -> None:
        index = _int(payload.get("index"))
        block = payload.get("content_block")
        if self._finished or index is None or not isinstance(block, Mapping):
            log.warning("dropped an upstream content_block_start: %.200r", payload)
            return
        self._start({}, out)
        if index in self._blocks:
            log.warning("upstream reopened block %d before closing it", index)
        kind = block.get("type")
        if kind == "text":
            rescuer = self._rescuer_factory(self.tools, self.buffer_cap) if self.tools else None
            text_block = self._blocks[index] = _TextBlock(TextRescue(rescuer))
            text = block.get("text")
            if isinstance(text, str) and text:
                self._pieces(text_block.rescue, text_block.rescue.feed(text), out)
        elif kind == "tool_use":
            ident, name = block.get("id"), block.get("name")
            prefilled = block.get("input")
            parts = [dumps(prefilled)] if isinstance(prefilled, Mapping) and prefilled else []
            self._blocks[index] = _NativeCall(
                ident if isinstance(ident, str) and ident else new_tool_use_id(),
                name if isinstance(name, str) else "",
                parts,
            )
        else:
            self._release_space(out)
            self._end_text(out)
            self._blocks[index] = _Passed(self._open(block, out))
            self._after_call = False

    def _on_block_delta(self, payload: Mapping[str, Any], out: list[str]) -> None:
        index = _int(payload.get("index"))
        block = self._blocks.get(index) if index is not None else None
        delta = payload.get("delta")
        if block is None or not isinstance(delta, Mapping):
            log.warning("dropped an upstream delta outside an open block: %.200r", payload)
            return
        kind = delta.get("type")
        if isinstance(block, _TextBlock) and kind == "text_delta":
            text = delta.get("text")
            if isinstance(text, str) and text:
                self._pieces(block.rescue, block.rescue.feed(text), out)
        elif isinstance(block, _NativeCall) and kind == "input_json_delta":
            fragment = delta.get("partial_json")
            if isinstance(fragment, str) and fragment:
                block.parts.append(fragment)
        elif isinstance(block, _Passed):
            out.append(sse_event({**payload, "index": block.index}))
        else:
            log.warning("dropped a %.40r delta in upstream block %d", kind, index)

    def _on_block_stop(self, payload: Mapping[str, Any], out: list[str]) -> None:
        index = _int(payload.get("index"))
        block = self._blocks.pop(index, None) if index is not None else None
        if block is None:
            log.warning("dropped a content_block_stop for no open block: %.200r", payload)
        else:
            self._end_block(block, out)

    def _on_message_delta(self, payload: Mapping[str, Any], out: list[str]) -> None:
        delta = payload.get("delta")
        if isinstance(delta, Mapping):
            reason = delta.get("stop_reason")
            if isinstance(reason, str) and reason:
                self._stop_reason = reason
            if "stop_sequence" in delta:
                self._stop_sequence = delta["stop_sequence"]
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            self._usage.update(usage)
        self._finish(out)

    def _on_message_stop(self, payload: Mapping[str, Any], out: list[str]) -> None:
        out.append(self.close())

    _HANDLERS = {
        "message_start": _on_message_start,
        "ping": _on_ping,
        "content_block_start": _on_block_start,
        "content_block_delta": _on_block_delta,
        "content_block_stop": _on_block_stop,
        "message_delta": _on_message_delta,
        "message_stop": _on_message_stop,
    }

    # ------------------------------------------------------------------ output

    def _start(self, message: Mapping[str, Any], out: list[str]) -> None:
        if self._started:
            return
        self._started = True
        model = message.get("model")
        self.model = model if isinstance(model, str) and model else self.request_model
        ident = message.get("id")
        start = {
            **message,
            "id": ident if isinstance(ident, str) and ident else new_message_id(),
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": _usage(message.get("usage"), required=("input_tokens", "output_tokens")),
        }
        out.append(sse_event({"type": "message_start", "message": start}))

    def _pieces(self, rescue: TextRescue, pieces: Sequence[str | WholeCall], out: list[str]) -> None:
        for piece in pieces:
            if isinstance(piece, str):
                self._text(piece, out)
            elif self._calls.rescued(piece.name, piece.arguments):
                self._tool_use(new_tool_use_id(), piece.name, (piece.arguments,), out)
        if rescue.overflowed and not rescue.overflow_reported:
            rescue.overflow_reported = True
            self.stats.overflowed = True
            log.warning("rescue buffer cap (%d characters) reached: held text was sent as text", self.buffer_cap)

    def _text(self, text: str, out: list[str]) -> None:
        """Released text: trailing white space is held until more text follows (a call
        next drops it), and white space alone opens no block."""
        text = self._held_space + text
        if self._text_index is None and self._after_call:
            text = text.lstrip()
        body = text.rstrip()
        self._held_space = text[len(body) :]
        if not body:
            return
        if self._text_index is None:
            self._text_index = self._open({"type": "text", "text": ""}, out)
            self._after_call = False
        out.append(self._delta(self._text_index, {"type": "text_delta", "text": body}))

    def _release_space(self, out: list[str]) -> None:
        """The end of a text: held white space goes to the open text block (never one of its own)."""
        if self._held_space and self._text_index is not None:
            out.append(self._delta(self._text_index, {"type": "text_delta", "text": self._held_space}))
        self._held_space = ""

    def _end_text(self, out: list[str]) -> None:
        self._held_space = ""
        if self._text_index is not None:
            out.append(sse_event({"type": "content_block_stop", "index": self._text_index}))
            self._text_index = None

    def _open(self, block: Mapping[str, Any], out: list[str]) -> int:
        index = self._next_index
        self._next_index += 1
        self.answered = True
        out.append(sse_event({"type": "content_block_start", "index": index, "content_block": block}))
        return index

    @staticmethod
    def _delta(index: int, delta: Mapping[str, Any]) -> str:
        return sse_event({"type": "content_block_delta", "index": index, "delta": delta})

    def _tool_use(self, ident: str, name: str, fragments: Sequence[str], out: list[str]) -> None:
        self._end_text(out)
        index = self._open({"type": "tool_use", "id": ident, "name": name, "input": {}}, out)
        for fragment in fragments:
            out.append(self._delta(index, {"type": "input_json_delta", "partial_json": fragment}))
        out.append(sse_event({"type": "content_block_stop", "index": index}))
        self._after_call = True

    def _end_block(self, block: _Upstream, out: list[str]) -> None:
        if isinstance(block, _TextBlock):
            self._pieces(block.rescue, block.rescue.finish(), out)
            self._release_space(out)
            self._end_text(out)
        elif isinstance(block, _NativeCall):
            self._native(block, out)
        else:
            out.append(sse_event({"type": "content_block_stop", "index": block.index}))

    def _native(self, call: _NativeCall, out: list[str]) -> None:
        """A complete native call, delivered once. An input that is no JSON object (a
        translated chat call's broken arguments) cannot be a tool_use: it is kept as text,
        since any object made of it would be a call the model never made."""
        joined = "".join(call.parts)
        if not call.name:
            log.warning("dropped a native tool_use without a name (input %.200r)", joined)
        elif as_object(joined) is None:  # (empty is no arguments: {})
            log.warning("native call %s has an input that is no JSON object: kept as text", call.name)
            self._text(joined, out)
        elif self._calls.native(call.name, joined):
            self._tool_use(call.id, call.name, call.parts, out)

    def _finish(self, out: list[str]) -> None:
        """Everything the upstream left open is ended, then the ``message_delta``."""
        if self._finished:
            return
        self._start({}, out)
        for index in sorted(self._blocks):
            self._end_block(self._blocks[index], out)
        self._blocks.clear()
        self._release_space(out)
        self._end_text(out)
        self._finished = True
        reason = final_stop_reason(self._stop_reason, self._calls.count)
        self.stats.finish_reason = reason
        out.append(
            sse_event(
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reason, "stop_sequence": self._stop_sequence},
                    "usage": _usage(self._usage, required=("output_tokens",)),
                }
            )
        )
