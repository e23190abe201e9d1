"""OpenAI Responses stream rules (RESP-*).

The grammar a Responses stream follows (https://platform.openai.com/docs/api-reference/responses-streaming):
``response.created`` first; each output item announced by ``response.output_item.added``
at its own ``output_index``, filled by deltas that name it by ``output_index`` and
``item_id`` (text deltas to a ``message``, argument deltas to a ``function_call``), closed
by one ``response.output_item.done``; then ``response.completed`` (or
``response.incomplete``) carrying the whole response, whose ``output`` is what was
streamed. Every event carries a ``sequence_number`` that grows. The stream is read once
(``harness.judge.readers.responses_events``); these rules judge it.

The rules of every profile (``EVERY_PROFILE``) read only the HTTP exchange, the SSE
framing every dialect shares and the shared ``Answer`` (calls, text, finish in Chat
Completions words), so they judge a Responses answer as they judge the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from harness.judge.compare import render, shorten
from harness.judge.readers.responses_events import ENDINGS, Fold, ResponsesEvent, fold, text_of
from harness.judge.rules import locate
from harness.judge.rules.context import Context
from harness.judge.rules.registry import RESPONSES, Violation, rule_group
from harness.judge.rules.schemas import schema_errors
from harness.judge.rules.sdk import accumulated_differences

rule = rule_group("responses", "RESP", stage="stream", profiles=RESPONSES)

# Which item kind each kind of addressed event fills.
_FILLS: Mapping[str, str] = {
    "response.output_text.delta": "message", "response.output_text.done": "message",
    "response.content_part.added": "message", "response.content_part.done": "message",
    "response.function_call_arguments.delta": "function_call", "response.function_call_arguments.done": "function_call",
}


def _fold(ctx: Context) -> Fold:
    return fold(ctx.responses_events)


def folded(ctx: Context) -> Fold:
    return ctx.derived(_fold)


def _typed(ctx: Context) -> Iterator[ResponsesEvent]:
    return (e for e in ctx.responses_events if e.type is not None)


def _completes(f: Fold) -> bool:
    return f.ending is not None and f.ending.type in ("response.completed", "response.incomplete")


@rule("RESP-001")
def event_order(ctx: Context) -> Iterator[Violation]:
    last: int | None = None
    for e in ctx.responses_events:
        if e.json_error is not None or not isinstance(e.value, dict) or e.type is None:
            yield Violation(f"event {e.event.index}: not a JSON object with a string 'type'", ctx.at_event(e.event))
            continue
        if e.name is not None and e.name != e.type:
            yield Violation(f"event {e.event.index} ({e.type}) is named {e.name!r}",
                            ctx.at_event(e.event, expected=e.type, actual=e.name))
        number = e.get("sequence_number")
        if not isinstance(number, int) or isinstance(number, bool):
            yield Violation(f"event {e.event.index} ({e.type}) has no integer sequence_number ({render(number)})",
                            ctx.at_event(e.event))
            continue
        if last is not None and number <= last:
            yield Violation(f"event {e.event.index} ({e.type}) has sequence_number {number} after {last}",
                            ctx.at_event(e.event, expected=f"> {last}", actual=number))
        last = number


@rule("RESP-002")
def items_closed_once(ctx: Context) -> Iterator[Violation]:
    added: dict[Any, ResponsesEvent] = {}
    closed: dict[Any, int] = {}
    for e in _typed(ctx):
        index = e.get("output_index")
        if e.type == "response.output_item.added":
            if index in added:
                yield Violation(f"event {e.event.index} adds a second item at output_index {render(index)}",
                                ctx.at_event(e.event, output_index=index))
            added[index] = e
        elif e.type == "response.output_item.done" and index in added:
            closed[index] = closed.get(index, 0) + 1
            if closed[index] == 2:
                yield Violation(f"event {e.event.index} closes the item at output_index {render(index)} again",
                                ctx.at_event(e.event, output_index=index))
    if not _completes(folded(ctx)):
        return
    for index, e in added.items():
        if index not in closed:
            item = e.get("item")
            kind = item.get("type") if isinstance(item, dict) else None
            yield Violation(f"the {render(kind)} item at output_index {render(index)} was never closed by "
                            "response.output_item.done", ctx.at_event(e.event, output_index=index))


# The addressed events openai-python's ``responses.stream()`` looks up by ``output_index`` (an index with no
# item raises), and those whose item's kind it asserts; it reads the others' ``output_index`` and every
# ``item_id`` nowhere (``ResponseStreamState``).
_LOOKED_UP = frozenset({"response.output_text.delta", "response.output_text.done", "response.content_part.added",
                        "response.function_call_arguments.delta"})
_KIND_ASSERTED = _LOOKED_UP - {"response.content_part.added"}


def _addressing(ctx: Context) -> list[tuple[bool, Violation]]:
    """Every addressed event that names no item, or not its own; each with whether openai-python breaks on it."""
    found: list[tuple[bool, Violation]] = []
    items: dict[Any, Mapping[str, Any]] = {}
    for e in _typed(ctx):
        kind = e.type
        index = e.get("output_index")
        if kind == "response.output_item.added":
            item = e.get("item")
            items[index] = item if isinstance(item, dict) else {}
            continue
        wanted = _FILLS.get(kind or "")
        if wanted is None and kind != "response.output_item.done":
            continue
        item = items.get(index)
        if item is None:
            found.append((kind in _LOOKED_UP, Violation(
                f"event {e.event.index} ({kind}) names output_index {render(index)}, where no item was added before "
                "it", ctx.at_event(e.event))))
            continue
        if wanted is not None and item.get("type") != wanted:
            found.append((kind in _KIND_ASSERTED, Violation(
                f"event {e.event.index} ({kind}) fills the {render(item.get('type'))} item at output_index "
                f"{render(index)}, not a {wanted}", ctx.at_event(e.event))))
        done_item = e.get("item")
        named = e.get("item_id") if wanted is not None else done_item.get("id") if isinstance(done_item, dict) else None
        if named is not None and item.get("id") is not None and named != item.get("id"):
            found.append((wanted is None, Violation(
                f"event {e.event.index} ({kind}) names item {render(named)} at output_index {render(index)}, whose "
                f"item is {render(item.get('id'))}", ctx.at_event(e.event, expected=item.get("id"), actual=named))))
    return found


@rule("RESP-003")
def deltas_find_their_item(ctx: Context) -> Iterator[Violation]:
    return (v for breaks, v in ctx.derived(_addressing) if breaks)


@rule("RESP-013")
def events_name_their_item(ctx: Context) -> Iterator[Violation]:
    return (v for breaks, v in ctx.derived(_addressing) if not breaks)


def _disagreements(ctx: Context, kind: str) -> Iterator[Violation]:
    """Each ``.done`` event (and done item) of ``kind`` items that says other than the item's deltas."""
    delta_type, done_type, field = (
        ("response.function_call_arguments.delta", "response.function_call_arguments.done", "arguments")
        if kind == "function_call" else ("response.output_text.delta", "response.output_text.done", "text"))
    joined: dict[Any, list[str]] = {}
    kinds: dict[Any, Any] = {}
    for e in _typed(ctx):
        index = e.get("output_index")
        if e.type == "response.output_item.added":
            item = e.get("item")
            kinds[index] = item.get("type") if isinstance(item, dict) else None
            joined[index] = []
        elif kinds.get(index) != kind:
            continue
        elif e.type == delta_type and isinstance(e.get("delta"), str):
            joined[index].append(e.get("delta"))
        elif e.type in (done_type, "response.output_item.done"):
            item = e.get("item")
            said = e.get(field) if e.type == done_type else (
                (item.get("arguments") if kind == "function_call" else text_of(item)) if isinstance(item, dict)
                else None)
            whole = "".join(joined[index])
            if said != whole:
                yield Violation(f"the {kind} at output_index {render(index)}: deltas join to "
                                f"{shorten(render(whole), 80)}, but event {e.event.index} ({e.type}) says "
                                f"{shorten(render(said), 80)}", ctx.at_event(e.event, expected=whole, actual=said))


@rule("RESP-004")
def arguments_agree(ctx: Context) -> Iterator[Violation]:
    return _disagreements(ctx, "function_call")


@rule("RESP-005", stage="answer")
def call_ids(ctx: Context) -> Iterator[Violation]:
    seen: set[str] = set()
    for call in ctx.answer.tool_calls:
        if not call.id:
            yield Violation(f"call #{call.index + 1} ({call.name}) has no call_id",
                            {"call": call.name, **locate.call(ctx, call.index)})
        elif call.id in seen:
            yield Violation(f"call #{call.index + 1} ({call.name}) repeats call_id {call.id!r}",
                            {"call_id": call.id, **locate.call(ctx, call.index)})
        else:
            seen.add(call.id)


@rule("RESP-006")
def text_agrees(ctx: Context) -> Iterator[Violation]:
    return _disagreements(ctx, "message")


def _summary(item: Mapping[str, Any]) -> tuple[Any, ...]:
    if item.get("type") == "function_call":
        return ("function_call", item.get("call_id"), item.get("name"), item.get("arguments"))
    if item.get("type") == "message":
        return ("message", text_of(item))
    return (item.get("type"),)


@rule("RESP-007")
def completed_output(ctx: Context) -> Iterator[Violation]:
    f = folded(ctx)
    if f.ending is None or f.ending.type != "response.completed":
        return
    response = f.ending.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    if not isinstance(output, list):
        yield Violation("response.completed has no output list", ctx.at_event(f.ending.event))
        return
    streamed = [_summary(i.final) for i in f.items]
    final = [_summary(i) if isinstance(i, dict) else (None,) for i in output]
    if streamed != final:
        yield Violation(f"response.completed lists {len(final)} item(s) {shorten(render(final), 160)}; the stream "
                        f"closed {len(streamed)}: {shorten(render(streamed), 160)}",
                        ctx.at_event(f.ending.event, expected=render(streamed), actual=render(final)))


@rule("RESP-008", ending=True)
def stream_completes(ctx: Context) -> Iterator[Violation]:
    typed = list(_typed(ctx))
    endings = [e for e in typed if e.type in ENDINGS]
    if not endings:
        yield Violation("the stream ended without response.completed", {"events": len(typed),
                                                                         **locate.end_of_stream(ctx)})
        return
    if len(endings) > 1:
        yield Violation(f"{len(endings)} terminal events ({', '.join(str(e.type) for e in endings)})",
                        ctx.at_event(endings[1].event))
    if typed[-1] is not endings[-1]:
        yield Violation(f"{typed[-1].type} came after {endings[-1].type}", ctx.at_event(typed[-1].event))


@rule("RESP-009")
def sdk_reads_stream(ctx: Context) -> Iterator[Violation]:
    reading = ctx.sdk
    if reading.error is not None:
        yield Violation(f"openai-python raised {reading.error}", {"sdk_error": reading.error})


@rule("RESP-012")
def sdk_response(ctx: Context) -> Iterator[Violation]:
    yield from accumulated_differences(ctx, calls_named="function_call items", text_named="output_text", regex=True)


@rule("RESP-010")
def error_shape(ctx: Context) -> Iterator[Violation]:
    for e in ctx.responses_events:
        if not e.is_error:
            continue
        if e.type == "error":
            ok = isinstance(e.get("message"), str)
        elif e.type == "response.failed":
            error = (e.get("response") or {}).get("error") if isinstance(e.get("response"), dict) else None
            ok = isinstance(error, dict) and isinstance(error.get("code"), str) and isinstance(error.get("message"), str)
        else:
            ok = False
        if not ok:
            yield Violation(f"event {e.event.index} reports an error in no documented shape", ctx.at_event(e.event))


@rule("RESP-011")
def event_schema(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        errors = schema_errors(e.value, "responses_stream_event")
        if errors:
            yield Violation(f"event {e.event.index} ({e.type}): {'; '.join(errors)}",
                            ctx.at_event(e.event, schema_errors=errors))
