"""What a client ends up holding after reading one OpenAI Responses answer.

A Responses stream is a sequence of named SSE events, each with a ``sequence_number``:
``response.created``, output items announced by ``response.output_item.added`` at an
``output_index``, filled by ``response.output_text.delta`` (message items) or
``response.function_call_arguments.delta`` (function_call items) and closed by
``response.output_item.done``, then ``response.completed`` carrying the whole
``response`` (``response.incomplete`` / ``response.failed`` / an ``error`` event end it
otherwise). The items are folded by ``output_index`` as the official ``openai`` SDK's
``ResponseStreamState`` folds them: deltas append to the item at their index, and an
item's done event replaces it. The result is the shared ``Answer``, its finish named in
Chat Completions words (``stop``, ``tool_calls``, ``length``) so the dialect-neutral rules
judge every client dialect alike. Nothing here fails on bad input: that is the rules' job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.judge.readers.assemble import AssembledCall, Answer
from harness.judge.readers.sse import JsonEvent, SSEEvent

ENDINGS = frozenset({"response.completed", "response.incomplete", "response.failed"})


@dataclass(frozen=True, slots=True)
class ResponsesEvent(JsonEvent):
    """One dispatched SSE event of a Responses stream, its data parsed when it is JSON."""

    def get(self, key: str) -> Any:
        return self.value.get(key) if isinstance(self.value, dict) else None

    @property
    def is_error(self) -> bool:
        """An ``error`` event, a failed response, or an error object in any other shape."""
        return (self.type in ("error", "response.failed") or self.name == "error"
                or (self.type is None and isinstance(self.value, dict) and "error" in self.value))


def read_events(events: Sequence[SSEEvent]) -> tuple[ResponsesEvent, ...]:
    out: list[ResponsesEvent] = []
    for event in events:
        if event.is_done:
            continue  # some servers end with [DONE]; the SDK ignores it
        out.append(ResponsesEvent.read(event))
    return tuple(out)


@dataclass(slots=True)
class Item:
    """One output item as the stream built it, at its ``output_index``."""

    output_index: int
    added: Mapping[str, Any]  # the item of its output_item.added event
    added_at: int  # the event index of that event
    text: list[str] = field(default_factory=list)  # output_text deltas
    arguments: list[str] = field(default_factory=list)  # function_call_arguments deltas
    text_done: list[str] = field(default_factory=list)  # output_text.done texts
    arguments_done: list[str] = field(default_factory=list)  # function_call_arguments.done arguments
    done: list[Mapping[str, Any]] = field(default_factory=list)  # items of its output_item.done events
    delta_ids: set[Any] = field(default_factory=set)  # the item_id of every delta and .done addressed to it

    @property
    def kind(self) -> Any:
        return (self.done[-1] if self.done else self.added).get("type")

    @property
    def final(self) -> Mapping[str, Any]:
        """The item as the client holds it at the end: its done item, else what the deltas built."""
        if self.done:
            return self.done[-1]
        built = dict(self.added)
        if built.get("type") == "function_call":
            built["arguments"] = "".join(self.arguments)
        elif built.get("type") == "message":
            built["content"] = [{"type": "output_text", "text": "".join(self.text), "annotations": []}]
        return built


@dataclass(frozen=True, slots=True)
class Fold:
    """The stream folded by output_index, in the order indices were first added."""

    items: tuple[Item, ...]
    orphans: tuple[ResponsesEvent, ...]  # deltas and done events addressed to no item added before them
    ending: ResponsesEvent | None  # the last completed / incomplete / failed event


def fold(events: Sequence[ResponsesEvent]) -> Fold:
    items: dict[int, Item] = {}
    orphans: list[ResponsesEvent] = []
    ending: ResponsesEvent | None = None
    for e in events:
        kind = e.type
        index = e.get("output_index")
        if kind in ENDINGS:
            ending = e
            continue
        if not isinstance(index, int) or isinstance(index, bool):
            continue
        if kind == "response.output_item.added":
            item = e.get("item")
            items[index] = Item(index, item if isinstance(item, dict) else {}, e.event.index)
            continue
        target = items.get(index)
        if target is None:
            if kind is not None and kind.startswith("response."):
                orphans.append(e)
            continue
        if "item_id" in (e.value or {}):
            target.delta_ids.add(e.get("item_id"))
        if kind == "response.output_text.delta" and isinstance(e.get("delta"), str):
            target.text.append(e.get("delta"))
        elif kind == "response.function_call_arguments.delta" and isinstance(e.get("delta"), str):
            target.arguments.append(e.get("delta"))
        elif kind == "response.output_text.done" and isinstance(e.get("text"), str):
            target.text_done.append(e.get("text"))
        elif kind == "response.function_call_arguments.done" and isinstance(e.get("arguments"), str):
            target.arguments_done.append(e.get("arguments"))
        elif kind == "response.output_item.done" and isinstance(e.get("item"), dict):
            target.done.append(e.get("item"))
    ordered = sorted(items.values(), key=lambda i: i.output_index)
    return Fold(tuple(ordered), tuple(orphans), ending)


def text_of(item: Mapping[str, Any]) -> str:
    parts = item.get("content")
    if not isinstance(parts, list):
        return ""
    return "".join(p["text"] for p in parts
                   if isinstance(p, dict) and p.get("type") == "output_text" and isinstance(p.get("text"), str))


def _answer(items: Sequence[Mapping[str, Any]], response: Mapping[str, Any] | None,
            error: Mapping[str, Any] | None) -> Answer:
    content: list[str] = []
    calls: list[AssembledCall] = []
    for item in items:
        if item.get("type") == "message":
            content.append(text_of(item))
        elif item.get("type") == "function_call":
            args = item.get("arguments")
            calls.append(AssembledCall(len(calls), item["call_id"] if isinstance(item.get("call_id"), str) else None,
                                       item["name"] if isinstance(item.get("name"), str) else "",
                                       args if isinstance(args, str) else ""))
    finish = finish_of(response, bool(calls)) if response is not None else None
    usage = response.get("usage") if response is not None and isinstance(response.get("usage"), dict) else None
    return Answer("".join(content), tuple(calls), finish, usage, error)


def finish_of(response: Mapping[str, Any], has_calls: bool) -> str | None:
    """A response's end in Chat Completions words: ``tool_calls`` for a completed answer
    with calls, ``stop`` without, ``length`` for one cut at ``max_output_tokens``."""
    status = response.get("status")
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "length" if reason == "max_output_tokens" else "content_filter" if reason == "content_filter" else None
    return None


def stream_error(events: Sequence[ResponsesEvent]) -> Mapping[str, Any] | None:
    for e in events:
        if e.type == "error" and isinstance(e.value, dict):
            return e.value
        if e.type == "response.failed":
            response = e.get("response")
            error = response.get("error") if isinstance(response, dict) else None
            return error if isinstance(error, dict) else {"message": None}
    return None


def assemble_responses_stream(events: Sequence[ResponsesEvent]) -> Answer:
    """What a streaming client holds: the items as the stream built them, in output order."""
    folded = fold(events)
    ending = folded.ending.get("response") if folded.ending is not None else None
    return _answer([i.final for i in folded.items], ending if isinstance(ending, dict) else None,
                   stream_error(events))


def answer_from_response(body: Any) -> Answer:
    """What a client reads from a non-streaming ``response`` object."""
    if not isinstance(body, dict):
        return Answer("", (), None, None, None)
    error = body.get("error") if isinstance(body.get("error"), dict) else None
    output = body.get("output")
    items = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
    return _answer(items, body, error)
