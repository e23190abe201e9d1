"""Non-streaming Messages answers: rescue calls from a whole ``message``, and convert
between the streamed and the whole form when the upstream answers in the other one.

The same rescuer, ledger and stop_reason rule as ``anthropic_stream``, so both paths
agree on what was a call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from reference_proxy.anthropic_errors import status_for
from reference_proxy.anthropic_stream import final_stop_reason, input_text, new_message_id, new_tool_use_id
from reference_proxy.errors import ProxyError, as_openai_error
from reference_proxy.pipeline import RescuerFactory, ResponseStats, default_rescuer
from reference_proxy.rescue import ToolSpec
from reference_proxy.text_rescue import Deliveries, TextRescue, WholeCall
from reference_proxy.translate.answers import json_object

log = logging.getLogger("reference_proxy.anthropic")


def _as_input(arguments: str) -> dict[str, Any]:
    value = json_object(arguments)
    if value is None:
        log.warning("rescued arguments are not a JSON object, sent as {}: %.200r", arguments)
        return {}
    return value


class _Content:
    """The client's content blocks, built in order."""

    def __init__(self, stats: ResponseStats) -> None:
        self.blocks: list[dict[str, Any]] = []
        self.calls = Deliveries(stats)

    def rescued(self, text_block: Mapping[str, Any], pieces: Sequence[str | WholeCall]) -> None:
        if not any(isinstance(p, WholeCall) for p in pieces):
            self.blocks.append(dict(text_block))  # nothing was taken out: the block as it came
            return
        text: list[str] = []  # the pieces since the last call: one stretch of text (the rescuer
        # hands held text, a possible opener, over in a piece of its own)

        def end_text() -> None:
            joined = "".join(text).strip()  # markup was taken out: the text around it, trimmed
            text.clear()
            if joined:
                self.blocks.append({"type": "text", "text": joined})

        for piece in pieces:
            if isinstance(piece, str):
                text.append(piece)
                continue
            end_text()
            if self.calls.rescued(piece.name, piece.arguments):
                self.blocks.append(
                    {"type": "tool_use", "id": new_tool_use_id(), "name": piece.name, "input": _as_input(piece.arguments)}
                )
        end_text()

    def native(self, block: Mapping[str, Any]) -> None:
        name = block.get("name")
        if not isinstance(name, str) or not name:
            log.warning("dropped a native tool_use without a name: %.200r", block)
            return
        if not self.calls.native(name, input_text(block.get("input"))):
            return
        ident = block.get("id")
        value = block.get("input")
        self.blocks.append(
            {
                **block,
                "id": ident if isinstance(ident, str) and ident else new_tool_use_id(),
                "input": value if isinstance(value, Mapping) else {},
            }
        )


def finish_message(
    body: MutableMapping[str, Any],
    *,
    tools: Sequence[ToolSpec],
    buffer_cap: int = 65536,
    rescuer_factory: RescuerFactory = default_rescuer,
) -> ResponseStats:
    """Turn an upstream ``message`` into the client's answer, in place: leaked calls in its
    text blocks become tool_use blocks at their place, de-duplicated against native ones."""
    stats = ResponseStats()
    content = _Content(stats)
    blocks = body.get("content")
    for block in blocks if isinstance(blocks, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        text = block.get("text")
        if kind == "text" and isinstance(text, str):
            rescue = TextRescue(rescuer_factory(tools, buffer_cap) if tools else None)
            content.rescued(block, [*rescue.feed(text), *rescue.finish()])
            if rescue.overflowed:
                stats.overflowed = True
                log.warning("rescue buffer cap (%d characters) reached: held text was kept as text", buffer_cap)
        elif kind == "tool_use":
            content.native(block)
        else:
            content.blocks.append(dict(block))
    body["content"] = content.blocks
    body.setdefault("type", "message")
    body.setdefault("role", "assistant")
    upstream_reason = body.get("stop_reason")
    body["stop_reason"] = stats.finish_reason = final_stop_reason(
        upstream_reason if isinstance(upstream_reason, str) else None, content.calls.count
    )
    return stats


# --------------------------------------------------------------------------- form conversion


def upstream_error(payload: Any) -> ProxyError:
    """A Messages ``error`` the upstream reported inside its stream, as the answer's error."""
    error = payload.get("error") if isinstance(payload, Mapping) else None
    status = status_for(error) if isinstance(error, Mapping) else 502
    body = as_openai_error(payload, fallback_message="upstream reported an error", fallback_code=None)
    return ProxyError(status, body, upstream=payload)


class MessageAccumulator:
    """Folds an upstream Messages stream into one ``message`` (for a client that did not stream)."""

    def __init__(self, request_model: str) -> None:
        self.request_model = request_model
        self.done = False
        self._message: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, list[str]] = {}
        self._usage: dict[str, Any] = {}

    def feed_event(self, event: str, data: str) -> None:
        """One SSE event: ``message_stop`` ends, an error raises ``ProxyError``, broken JSON is skipped."""
        if self.done:
            return
        try:
            payload: Any = json.loads(data)
        except ValueError:
            payload = None
        if event == "error" or (isinstance(payload, Mapping) and payload.get("type") == "error"):
            raise upstream_error(payload if payload is not None else data)
        if not isinstance(payload, Mapping):
            log.warning("skipped an upstream event that is not a JSON object: %.200r", data)
            return
        self.feed(payload)

    def feed(self, payload: Mapping[str, Any]) -> None:
        kind = payload.get("type")
        index = payload.get("index")
        if kind == "message_start" and isinstance(payload.get("message"), Mapping):
            self._message = dict(payload["message"])
            self._usage.update(self._message.get("usage") or {})
        elif kind == "content_block_start" and isinstance(index, int) and isinstance(payload.get("content_block"), Mapping):
            self._blocks[index] = dict(payload["content_block"])
            self._parts[index] = []
        elif kind == "content_block_delta" and index in self._blocks and isinstance(payload.get("delta"), Mapping):
            delta = payload["delta"]
            piece = delta.get("text") if delta.get("type") == "text_delta" else delta.get("partial_json")
            if isinstance(piece, str):
                self._parts[index].append(piece)
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, Mapping):
                self._message.update({k: v for k, v in delta.items() if k in ("stop_reason", "stop_sequence")})
            if isinstance(payload.get("usage"), Mapping):
                self._usage.update(payload["usage"])
        elif kind == "message_stop":
            self.done = True

    def result(self) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        for index in sorted(self._blocks):
            block, joined = self._blocks[index], "".join(self._parts[index])
            if block.get("type") == "text":
                block["text"] = str(block.get("text") or "") + joined
            elif block.get("type") == "tool_use" and joined.strip():
                try:
                    block["input"] = json.loads(joined)
                except ValueError:
                    log.warning("native tool_use %s has an input that is not JSON: %.200r", block.get("name"), joined)
                    block["input"] = {}
            content.append(block)
        return {
            **self._message,
            "id": self._message.get("id") or new_message_id(),
            "type": "message",
            "role": "assistant",
            "model": self._message.get("model") or self.request_model,
            "content": content,
            "stop_reason": self._message.get("stop_reason"),
            "stop_sequence": self._message.get("stop_sequence"),
            "usage": self._usage,
        }


def message_as_events(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole ``message`` as the events a streaming upstream would have sent (for a
    streaming client whose upstream answered in one piece)."""
    head = {k: v for k, v in body.items() if k not in ("content", "stop_reason", "stop_sequence")}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {**head, "content": []}}]
    blocks = body.get("content")
    for index, block in enumerate(b for b in (blocks if isinstance(blocks, list) else ()) if isinstance(b, Mapping)):
        kind = block.get("type")
        if kind == "text":
            start: Mapping[str, Any] = {**block, "text": ""}
            delta: Mapping[str, Any] | None = {"type": "text_delta", "text": str(block.get("text") or "")}
        elif kind == "tool_use":
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": input_text(block.get("input"))}
        else:
            start, delta = block, None
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        if delta is not None:
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    usage = body.get("usage")
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": body.get("stop_reason"), "stop_sequence": body.get("stop_sequence")},
            "usage": usage if isinstance(usage, Mapping) else {},
        }
    )
    events.append({"type": "message_stop"})
    return events
