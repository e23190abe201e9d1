"""What a client ends up holding after reading one answer.

A stream is folded chunk by chunk the way the official openai SDK folds it
(string fields concatenate per call index, ``None`` never overwrites), so the answer
the rules judge is the answer a real client would act on. A non-streaming body is
read field by field. Nothing here fails on bad input: defects are the rules' job,
this module only reports what can be read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from harness.core.exchange import Exchange
from harness.judge.readers.sse import JsonEvent, SSEEvent

ResponseKind = Literal["sse", "json", "empty"]


@dataclass(frozen=True)
class AssembledCall:
    index: int
    id: str | None
    name: str
    arguments: str


@dataclass(frozen=True)
class Answer:
    content: str
    tool_calls: tuple[AssembledCall, ...]
    finish_reason: str | None
    usage: Mapping[str, Any] | None
    error: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Payload(JsonEvent):
    """The data of one stream event that is not the terminator, parsed when it is JSON."""

    @property
    def chunk(self) -> dict[str, Any] | None:
        """The payload as a chunk: a JSON object that is not an error report."""
        if isinstance(self.value, dict) and "error" not in self.value:
            return self.value
        return None

    @property
    def error(self) -> Any:
        """The ``error`` member of an error payload, or None."""
        if isinstance(self.value, dict) and "error" in self.value:
            return self.value["error"]
        return None


def response_kind(exchange: Exchange) -> ResponseKind:
    """What the body is, judged by its bytes: one JSON document, an SSE stream, or nothing.

    The request's ``stream`` flag only breaks ties: a proxy that ignores it, or sends
    a JSON error before a stream, is judged by what it actually sent."""
    body = exchange.raw.strip()
    if not body:
        return "empty"
    if body[:1] in (b"{", b"["):
        try:
            json.loads(body)
        except ValueError:
            pass
        else:
            return "json"
    content_type = exchange.response_headers.get("content-type", "")
    if "text/event-stream" in content_type or exchange.stream:
        return "sse"
    if b"data:" in body[:512]:
        return "sse"
    return "json"


def stream_payloads(events: Sequence[SSEEvent]) -> tuple[Payload, ...]:
    """The payloads up to the terminator: clients stop reading at ``[DONE]``, and
    anything after it is the framing rules' business."""
    out: list[Payload] = []
    for event in events:
        if event.is_done:
            break
        out.append(Payload.read(event))
    return tuple(out)


def parse_body(raw: bytes) -> tuple[Any, str | None]:
    """(parsed JSON, None) or (None, why it is not JSON)."""
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return None, str(exc)


class _CallAcc:
    """One call being folded; pieces are joined once at the end (linear in size)."""

    __slots__ = ("id", "name", "arguments")

    def __init__(self) -> None:
        self.id: list[str] | None = None
        self.name: list[str] = []
        self.arguments: list[str] = []

    def assembled(self, index: int) -> AssembledCall:
        call_id = "".join(self.id) if self.id is not None else None
        return AssembledCall(index, call_id, "".join(self.name), "".join(self.arguments))


def choice_zero(choices: Any) -> tuple[int, Mapping[str, Any]] | None:
    """The choice a client reads from a ``choices`` array (the first with index 0, or
    with no index), and its position there; None when there is none."""
    for position, choice in enumerate(choices if isinstance(choices, list) else ()):
        if isinstance(choice, Mapping) and choice.get("index", 0) == 0:
            return position, choice
    return None


def first_choice(chunk: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Choice 0 of a chunk or body."""
    found = choice_zero(chunk.get("choices"))
    return found[1] if found is not None else None


def choice_at(chunk: Mapping[str, Any], index: int) -> Mapping[str, Any] | None:
    """The choice with ``index`` of a chunk or body (choice 0 as ``first_choice`` reads it)."""
    if index == 0:
        return first_choice(chunk)
    choices = chunk.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        if isinstance(choice, Mapping) and choice.get("index") == index:
            return choice
    return None


def assemble_stream(payloads: Sequence[Payload], choice_index: int = 0) -> Answer:
    """Fold the chunks of choice ``choice_index`` (0 unless the request asked for several) into one answer."""
    content: list[str] = []
    calls: dict[int, _CallAcc] = {}
    finish: str | None = None
    usage: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    for payload in payloads:
        err = payload.error
        if err is not None and error is None:
            error = err if isinstance(err, Mapping) else {"message": str(err)}
        chunk = payload.chunk
        if chunk is None:
            continue
        if isinstance(chunk.get("usage"), Mapping):
            usage = chunk["usage"]
        choice = choice_at(chunk, choice_index)
        if choice is None:
            continue
        if isinstance(choice.get("finish_reason"), str):
            finish = choice["finish_reason"]
        delta = choice.get("delta")
        if not isinstance(delta, Mapping):
            continue
        if isinstance(delta.get("content"), str):
            content.append(delta["content"])
        entries = delta.get("tool_calls")
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, Mapping):
                continue
            index = entry.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                continue
            acc = calls.setdefault(index, _CallAcc())
            if isinstance(entry.get("id"), str):
                if acc.id is None:
                    acc.id = []
                acc.id.append(entry["id"])
            fn = entry.get("function")
            if isinstance(fn, Mapping):
                if isinstance(fn.get("name"), str):
                    acc.name.append(fn["name"])
                if isinstance(fn.get("arguments"), str):
                    acc.arguments.append(fn["arguments"])
    tool_calls = tuple(calls[i].assembled(i) for i in sorted(calls))
    return Answer("".join(content), tool_calls, finish, usage, error)


def answer_from_body(body: Any, choice_index: int = 0) -> Answer:
    """Read choice ``choice_index`` of a ``chat.completion`` (or an ``{"error": ...}``) body."""
    if not isinstance(body, Mapping):
        return Answer("", (), None, None, None)
    err = body.get("error")
    error = (err if isinstance(err, Mapping) else {"message": str(err)}) if err is not None else None
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else None
    choice = choice_at(body, choice_index)
    if choice is None:
        return Answer("", (), None, usage, error)
    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None
    message = choice.get("message")
    if not isinstance(message, Mapping):
        return Answer("", (), finish, usage, error)
    text = message.get("content")
    content = text if isinstance(text, str) else ""
    calls: list[AssembledCall] = []
    entries = message.get("tool_calls")
    for i, call in enumerate(entries if isinstance(entries, list) else ()):
        if not isinstance(call, Mapping):
            continue
        fn = call.get("function")
        fn = fn if isinstance(fn, Mapping) else {}
        args = fn.get("arguments")
        calls.append(
            AssembledCall(
                i,
                call["id"] if isinstance(call.get("id"), str) else None,
                fn["name"] if isinstance(fn.get("name"), str) else "",
                args if isinstance(args, str) else (json.dumps(args) if args is not None else ""),
            )
        )
    return Answer(content, tuple(calls), finish, usage, error)
