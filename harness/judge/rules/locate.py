"""Where in the raw answer a finding sits: the evidence that lets a failure show the
transcript trimmed around the offending event.

Rules judge the assembled ``Answer`` (text, calls, finish reason); these functions
map a place in that answer back to what the client received: the stream event that
delivered a character of the text, started a call or carried the finish reason, or,
for a single JSON body, the JSON pointer of that member. Every function returns
position keys only (``event_index``/``byte_offset``/``text_offset``, or ``json_path``
and ``text_offset``), so a rule's own evidence (its ``excerpt``) is never replaced;
empty when the place cannot be named. The exchange is read in the client's dialect.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.judge.readers.anthropic_events import client_events, collect_blocks
from harness.judge.readers.assemble import choice_zero, first_choice
from harness.judge.readers.responses_events import ENDINGS
from harness.judge.readers.sse import SSEEvent
from harness.judge.rules.context import Context, position

Evidence = dict[str, Any]


@dataclass(frozen=True)
class _Sources:
    """Where the pieces of a stream's answer came from (choice 0 / the Messages blocks)."""

    text_starts: tuple[int, ...]  # offset in the answer's content where each piece begins
    text_events: tuple[SSEEvent, ...]
    call_events: tuple[SSEEvent, ...]  # the event that opened each call, in call order
    finish_event: SSEEvent | None  # the event whose finish (stop) reason the client keeps


def _openai_sources(ctx: Context) -> _Sources:
    starts: list[int] = []
    events: list[SSEEvent] = []
    calls: dict[int, SSEEvent] = {}
    finish: SSEEvent | None = None
    length = 0
    for payload, chunk in ctx.chunks:
        choice = first_choice(chunk)
        if choice is None:
            continue
        if isinstance(choice.get("finish_reason"), str):
            finish = payload.event
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            continue
        text = delta.get("content")
        if isinstance(text, str) and text:
            starts.append(length)
            events.append(payload.event)
            length += len(text)
        entries = delta.get("tool_calls")
        for entry in entries if isinstance(entries, list) else ():
            index = entry.get("index") if isinstance(entry, Mapping) else None
            if isinstance(index, int) and not isinstance(index, bool):
                calls.setdefault(index, payload.event)
    return _Sources(tuple(starts), tuple(events), tuple(calls[i] for i in sorted(calls)), finish)


def _anthropic_sources(ctx: Context) -> _Sources:
    seen = client_events(ctx.events)
    starts: list[int] = []
    events: list[SSEEvent] = []
    length = 0
    blocks = collect_blocks(seen)
    for block in blocks:
        if block.kind != "text":
            continue
        first = block.content_block.get("text")
        pieces = [(block.start, first if isinstance(first, str) else "")]
        pieces += block.pieces("text_delta", "text")
        for event, text in pieces:
            if text:
                starts.append(length)
                events.append(event.event)
                length += len(text)
    calls = tuple(b.start.event for b in blocks if b.kind == "tool_use")
    finish: SSEEvent | None = None
    for e in seen:
        delta = e.field("delta") if e.type == "message_delta" else None
        if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
            finish = e.event
    return _Sources(tuple(starts), tuple(events), calls, finish)


def _responses_sources(ctx: Context) -> _Sources:
    """A Responses stream: its text deltas, the events that added function calls, the terminal event."""
    starts: list[int] = []
    events: list[SSEEvent] = []
    calls: list[SSEEvent] = []
    finish: SSEEvent | None = None
    length = 0
    for e in ctx.responses_events:
        if e.type == "response.output_text.delta" and isinstance(e.get("delta"), str) and e.get("delta"):
            starts.append(length)
            events.append(e.event)
            length += len(e.get("delta"))
        elif e.type == "response.output_item.added" and isinstance(e.get("item"), Mapping) \
                and e.get("item").get("type") == "function_call":
            calls.append(e.event)
        elif e.type in ENDINGS:
            finish = e.event
    return _Sources(tuple(starts), tuple(events), tuple(calls), finish)


def _sources(ctx: Context) -> _Sources:
    return _PLACES[ctx.dialect].sources(ctx)


def _at(ctx: Context, event: SSEEvent | None) -> Evidence:
    return position(event) if event is not None else end_of_stream(ctx)


def end_of_stream(ctx: Context) -> Evidence:
    """The end of a stream: where something that never came was due."""
    return {"byte_offset": ctx.stream.size}


def _in_choice(ctx: Context, member: str) -> str:
    """The JSON pointer of ``member`` of choice 0 in a chat.completion body (of the
    choices themselves when there is no choice 0)."""
    body = ctx.body[0]
    found = choice_zero(body.get("choices")) if isinstance(body, Mapping) else None
    return f"/choices/{found[0]}/{member}" if found is not None else "/choices"


def _blocks(ctx: Context, kind: str) -> list[tuple[int, Mapping[str, Any]]]:
    """(position, block) of every block of ``kind`` in a Messages body."""
    body = ctx.body[0]
    content = body.get("content") if isinstance(body, Mapping) else None
    return [
        (i, block)
        for i, block in enumerate(content if isinstance(content, list) else ())
        if isinstance(block, Mapping) and block.get("type") == kind
    ]


def _output_items(ctx: Context, kind: str) -> list[int]:
    """The positions of the items of ``kind`` in a ``response`` body's output."""
    body = ctx.body[0]
    output = body.get("output") if isinstance(body, Mapping) else None
    return [i for i, item in enumerate(output if isinstance(output, list) else ())
            if isinstance(item, Mapping) and item.get("type") == kind]


def _text_block_path(ctx: Context, offset: int) -> tuple[str, int]:
    """The pointer of the Messages text block holding character ``offset`` of the
    joined text, and the offset inside that block."""
    for i, block in _blocks(ctx, "text"):
        text = block.get("text")
        size = len(text) if isinstance(text, str) else 0
        if offset < size:
            return f"/content/{i}/text", offset
        offset -= size
    return "/content", offset


@dataclass(frozen=True)
class _Places:
    """Where one dialect's answer keeps each piece: the events of a stream that carried
    them, and the JSON pointers into a single body."""

    sources: Callable[[Context], _Sources]
    finish: Callable[[Context], str]  # the member saying how the answer ended
    call: Callable[[Context, int], str]  # call ``index``, which exists
    content: Callable[[Context, int], tuple[str, int]]  # the text holding an offset, and the offset inside it


_PLACES: Mapping[WireDialect, _Places] = {
    OPENAI: _Places(_openai_sources, lambda ctx: _in_choice(ctx, "finish_reason"),
                      lambda ctx, index: _in_choice(ctx, f"message/tool_calls/{index}"),
                      lambda ctx, offset: (_in_choice(ctx, "message/content"), offset)),
    ANTHROPIC: _Places(_anthropic_sources, lambda ctx: "/stop_reason",
                         lambda ctx, index: f"/content/{_blocks(ctx, 'tool_use')[index][0]}", _text_block_path),
    RESPONSES: _Places(_responses_sources, lambda ctx: "/status",
                         lambda ctx, index: f"/output/{_output_items(ctx, 'function_call')[index]}",
                         lambda ctx, offset: ("/output", offset)),
    # A Kiro stream is binary messages, not SSE: no event of it is located, only the answer's parts.
    KIRO: _Places(lambda ctx: _Sources((), (), (), None), lambda ctx: "/metadataEvent/stopReason",
                  lambda ctx, index: f"/toolUseEvent/{index}", lambda ctx, offset: ("/assistantResponseEvent", offset)),
    # An Ollama stream is NDJSON lines, not SSE: likewise only the answer's parts are located.
    OLLAMA: _Places(lambda ctx: _Sources((), (), (), None), lambda ctx: "/done_reason",
                    lambda ctx, index: f"/message/tool_calls/{index}", lambda ctx, offset: ("/message/content", offset)),
}


def finish(ctx: Context) -> Evidence:
    """Where the answer's finish reason (Messages: stop reason) was sent, or was due."""
    if ctx.kind == "json":
        return {"json_path": _PLACES[ctx.dialect].finish(ctx)}
    if ctx.kind != "sse":
        return {}
    return _at(ctx, ctx.derived(_sources).finish_event)


def call(ctx: Context, index: int) -> Evidence:
    """Where call ``index`` (in answer order) starts; where the answer ends when there
    is no such call."""
    if ctx.kind == "json":
        if index >= len(ctx.answer.tool_calls):
            return finish(ctx)
        return {"json_path": _PLACES[ctx.dialect].call(ctx, index)}
    if ctx.kind != "sse":
        return {}
    events = ctx.derived(_sources).call_events
    return position(events[index]) if index < len(events) else finish(ctx)


def received_call(ctx: Context, index: int) -> Evidence:
    """Where the ``index``-th call the client reads starts: a structured call, or for
    the xml-client profile the XML call in the text."""
    if not ctx.reads_xml:
        return call(ctx, index)
    calls = ctx.xml.calls
    return content(ctx, calls[index].start if index < len(calls) else len(ctx.answer.content))


def content(ctx: Context, offset: int) -> Evidence:
    """Where the character at ``offset`` of the answer's text arrived; at or past its
    end, where the answer finished."""
    if ctx.kind == "json":
        path, inside = _PLACES[ctx.dialect].content(ctx, offset)
        return {"json_path": path, "text_offset": inside}
    if ctx.kind != "sse":
        return {}
    sources = ctx.derived(_sources)
    if not sources.text_starts or offset >= len(ctx.answer.content):
        return finish(ctx)
    at = bisect.bisect_right(sources.text_starts, offset) - 1
    return {**position(sources.text_events[max(at, 0)]), "text_offset": offset}


def visible(ctx: Context, offset: int) -> Evidence:
    """``content`` for an offset into the visible text: the content itself, or for the
    xml-client profile the text outside the XML calls (mapped back into the content; its end
    is where the answer ends)."""
    if not ctx.reads_xml:
        return content(ctx, offset)
    if offset >= len(ctx.visible_text):
        return content(ctx, len(ctx.answer.content))
    return content(ctx, ctx.xml.text_offset(offset))
