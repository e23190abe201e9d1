"""What a client ends up holding after reading one Anthropic Messages answer.

A Messages stream is a sequence of named SSE events (``message_start``, then content
blocks opened, filled and closed, then ``message_delta`` and ``message_stop``). The
events are read once; their blocks are collected by index, and the answer is folded
the way the official ``anthropic`` SDK folds it: only events that carry an ``event:``
name reach it, ``ping`` is skipped, a tool_use block's ``partial_json`` fragments
replace its starting ``input`` once any arrive. The result is the shared ``Answer``,
so the dialect-neutral rules (expected calls, text, markup) judge both dialects.
Nothing here fails on bad input: defects are the rules' job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.judge.readers.assemble import AssembledCall, Answer
from harness.judge.readers.sse import JsonEvent, SSEEvent

# The delta kinds each block kind may receive.
DELTA_KINDS: Mapping[str, frozenset[str]] = {
    "text": frozenset({"text_delta", "citations_delta"}),
    "tool_use": frozenset({"input_json_delta"}),
    "server_tool_use": frozenset({"input_json_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
}
TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use"})


@dataclass(frozen=True, slots=True)
class AnthropicEvent(JsonEvent):
    """One dispatched SSE event of a Messages stream, its data parsed when it is JSON."""

    @property
    def is_error(self) -> bool:
        """Whether the event reports an error, in whatever shape it does."""
        return (
            self.name == "error"
            or self.type == "error"
            or (isinstance(self.value, dict) and "error" in self.value and self.type is None)
        )

    @property
    def error(self) -> Mapping[str, Any] | None:
        """The reported error (the ``error`` member, or the whole payload without one)."""
        if not self.is_error:
            return None
        value = self.value
        if isinstance(value, dict):
            err = value.get("error")
            if isinstance(err, Mapping):
                return err
            return {"message": str(err)} if err is not None else value
        return {"message": self.event.data}

    def field(self, key: str) -> Any:
        return self.value.get(key) if isinstance(self.value, dict) else None

    @property
    def index(self) -> int | None:
        index = self.field("index")
        return index if isinstance(index, int) and not isinstance(index, bool) else None


def read_events(events: Sequence[SSEEvent]) -> tuple[AnthropicEvent, ...]:
    """Every dispatched event with its data parsed (a Messages stream has no terminator)."""
    return tuple(AnthropicEvent.read(event) for event in events)


def client_events(events: Sequence[AnthropicEvent]) -> tuple[AnthropicEvent, ...]:
    """The events an SDK acts on: named, not ``ping`` (data-only events never reach
    it), and, errors aside, none before the first ``message_start`` (the SDK drops them)."""
    out: list[AnthropicEvent] = []
    started = False
    for e in events:
        if e.name is None or e.name == "ping":
            continue
        started = started or e.type == "message_start"
        if started or e.is_error:
            out.append(e)
    return tuple(out)


@dataclass(slots=True)
class Block:
    """One content block: its start, the deltas sent to it, and its stop."""

    index: int | None
    kind: str  # the content_block's type, "" when it has none
    start: AnthropicEvent
    content_block: Mapping[str, Any]
    deltas: list[tuple[AnthropicEvent, Mapping[str, Any]]] = field(default_factory=list)
    stop: AnthropicEvent | None = None

    def pieces(self, delta_type: str, key: str, *, until_stop: bool = False) -> list[tuple[AnthropicEvent, str]]:
        """The string ``key`` of every delta of type ``delta_type`` (only those before
        the block's stop with ``until_stop``; a client applies later ones too)."""
        limit = self.stop.event.index if until_stop and self.stop is not None else None
        return [
            (e, d[key])
            for e, d in self.deltas
            if d.get("type") == delta_type and isinstance(d.get(key), str) and (limit is None or e.event.index < limit)
        ]

    @property
    def input_json(self) -> str:
        return "".join(text for _, text in self.pieces("input_json_delta", "partial_json"))

    @property
    def text(self) -> str:
        start = self.content_block.get("text")
        return (start if isinstance(start, str) else "") + "".join(t for _, t in self.pieces("text_delta", "text"))


def collect_blocks(events: Sequence[AnthropicEvent]) -> list[Block]:
    """Blocks in the order they were opened. A delta or stop goes to the block at the
    position its ``index`` names, as the SDKs address blocks (``content[index]``)."""
    blocks: list[Block] = []
    for e in events:
        t = e.type
        if t == "content_block_start":
            cb = e.field("content_block")
            content_block: Mapping[str, Any] = cb if isinstance(cb, Mapping) else {}
            kind = content_block.get("type")
            blocks.append(Block(e.index, kind if isinstance(kind, str) else "", e, content_block))
            continue
        if t not in ("content_block_delta", "content_block_stop"):
            continue
        index = e.index
        if index is None or index >= len(blocks):
            continue
        target = blocks[index]
        delta = e.field("delta")
        if t == "content_block_stop":
            if target.stop is None:
                target.stop = e
        elif isinstance(delta, Mapping):
            target.deltas.append((e, delta))
    return blocks


def tool_arguments(block: Block) -> str:
    """A tool_use block's input as JSON text, as the SDK ends up holding it: the joined
    fragments when any arrived, else the starting ``input`` (a string input stays a
    string, so it never passes for an object)."""
    joined = block.input_json
    if joined:
        return joined
    return json.dumps(block.content_block.get("input"), ensure_ascii=False)


def _merge_usage(usage: dict[str, Any] | None, more: Any) -> dict[str, Any] | None:
    if not isinstance(more, Mapping):
        return usage
    merged = dict(usage or {})
    merged.update({k: v for k, v in more.items() if v is not None})
    return merged


def assemble_anthropic_stream(events: Sequence[AnthropicEvent]) -> Answer:
    """Fold the events a client acts on into one answer: text blocks joined, tool_use
    blocks as calls (in block order), the ``stop_reason`` as the finish reason."""
    seen = client_events(events)
    usage: dict[str, Any] | None = None
    stop_reason: str | None = None
    error: Mapping[str, Any] | None = None
    for e in seen:
        if e.is_error:
            error = error or e.error
            continue
        if e.type == "message_start":
            message = e.field("message")
            if isinstance(message, Mapping):
                usage = _merge_usage(usage, message.get("usage"))
        elif e.type == "message_delta":
            delta = e.field("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                stop_reason = delta["stop_reason"]
            usage = _merge_usage(usage, e.field("usage"))
    blocks = collect_blocks(seen)
    text = "".join(b.text for b in blocks if b.kind == "text")
    calls = tuple(
        AssembledCall(i, _text_or_none(b.content_block.get("id")), _text(b.content_block.get("name")), tool_arguments(b))
        for i, b in enumerate(b for b in blocks if b.kind == "tool_use")
    )
    return Answer(text, calls, stop_reason, usage, error)


def answer_from_message(body: Any) -> Answer:
    """Read a non-streaming Messages answer (or a ``{"type": "error"}`` body)."""
    if not isinstance(body, Mapping):
        return Answer("", (), None, None, None)
    error: Mapping[str, Any] | None = None
    if body.get("type") == "error" or "error" in body:
        err = body.get("error")
        error = err if isinstance(err, Mapping) else {"message": str(err)}
    usage = dict(body["usage"]) if isinstance(body.get("usage"), Mapping) else None
    stop = body.get("stop_reason") if isinstance(body.get("stop_reason"), str) else None
    content = body.get("content")
    texts: list[str] = []
    calls: list[AssembledCall] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            calls.append(
                AssembledCall(
                    len(calls),
                    _text_or_none(block.get("id")),
                    _text(block.get("name")),
                    json.dumps(block.get("input"), ensure_ascii=False),
                )
            )
    return Answer("".join(texts), tuple(calls), stop, usage, error)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
