"""Reading a Messages stream as a client does: its named events, and the fold of them
with every assertion of the Messages stream grammar clients rely on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TOOL_USE_ID = re.compile(r"^toolu_[A-Za-z0-9]+$")


@dataclass
class Folded:
    """What a client holds after reading the proxy's Messages events."""

    message: dict[str, Any] = field(default_factory=dict)
    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: Any = None
    error: Any = None
    stopped: bool = False
    pings: int = 0

    @property
    def text(self) -> str:
        return "".join(b["text"] for b in self.blocks if b["type"] == "text")

    @property
    def calls(self) -> list[tuple[str, Any]]:
        return [(b["name"], b["input"]) for b in self.blocks if b["type"] == "tool_use"]


def parse_events(text: str) -> list[tuple[str, Any]]:
    """``(event name, payload)`` of every event; each must have an ``event:`` line and one ``data:`` line."""
    assert text.endswith("\n\n") or text == ""
    out: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        lines = block.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
        out.append((lines[0][len("event: ") :], json.loads(lines[1][len("data: ") :])))
    return out


def check_and_fold(text: str) -> Folded:
    """Fold the proxy's events, asserting the Messages grammar every client relies on:
    named events, message_start first, blocks opened at 0, 1, 2… one at a time with
    deltas of their own kind, one message_delta after the last block, message_stop or
    an error event last."""
    folded = Folded()
    open_block: dict[str, Any] | None = None
    parts: list[str] = []
    ended = False
    for name, payload in parse_events(text):
        assert name == payload["type"], (name, payload)
        assert not ended, f"{name} after the end of the stream"
        kind = payload["type"]
        if kind == "ping":
            folded.pings += 1
            continue
        if kind == "error":
            assert set(payload) == {"type", "error"} and payload["error"]["type"] and payload["error"]["message"]
            folded.error, ended = payload["error"], True
            continue
        if kind == "message_start":
            assert not folded.message, "one message_start"
            message = payload["message"]
            assert message["content"] == [] and message["stop_reason"] is None and message["role"] == "assistant"
            assert {"input_tokens", "output_tokens"} <= set(message["usage"])
            folded.message = message
            continue
        assert folded.message, f"{kind} before message_start"
        if kind == "content_block_start":
            assert open_block is None and folded.stop_reason is None
            assert payload["index"] == len(folded.blocks), "indices 0..n-1 in order"
            block = dict(payload["content_block"])
            if block["type"] == "tool_use":
                assert block["input"] == {} and TOOL_USE_ID.match(block["id"]), block
            if block["type"] == "text":
                assert block["text"] == ""
            folded.blocks.append(block)
            open_block, parts = block, []
        elif kind == "content_block_delta":
            assert open_block is not None and payload["index"] == len(folded.blocks) - 1
            delta = payload["delta"]
            if open_block["type"] == "text":
                assert delta["type"] == "text_delta" and delta["text"]
                open_block["text"] += delta["text"]
            elif open_block["type"] == "tool_use":
                assert set(delta) == {"type", "partial_json"} and delta["type"] == "input_json_delta"
                parts.append(delta["partial_json"])
            else:
                open_block.setdefault("deltas", []).append(delta)
        elif kind == "content_block_stop":
            assert open_block is not None and payload["index"] == len(folded.blocks) - 1
            if open_block["type"] == "tool_use" and parts:
                open_block["input"] = json.loads("".join(parts))
            if open_block["type"] == "text":
                assert open_block["text"].strip(), "no white-space-only text block"
            open_block = None
        elif kind == "message_delta":
            assert open_block is None and folded.stop_reason is None
            folded.stop_reason = payload["delta"]["stop_reason"]
            folded.usage = payload["usage"]
            assert isinstance(folded.usage["output_tokens"], int)
        else:
            assert kind == "message_stop" and folded.stop_reason is not None
            folded.stopped = ended = True
    assert ended, "the stream ends with message_stop or an error event"
    ids = [b["id"] for b in folded.blocks if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids))
    return folded
