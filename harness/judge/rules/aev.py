"""Anthropic Messages stream rules: event names, event shapes and the event grammar.

The grammar a Messages stream follows: ``message_start`` first; content blocks opened
by ``content_block_start`` at indices 0, 1, 2…, one at a time, filled by deltas of
their own kind and closed by ``content_block_stop``; then one ``message_delta`` with
the ``stop_reason``; then ``message_stop``. ``ping`` may come anywhere, and an
``error`` event ends the stream wherever it comes (its shape is AERR-001's business).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from harness.judge.readers.anthropic_events import DELTA_KINDS, TOOL_BLOCKS, AnthropicEvent, Block
from harness.judge.compare import parse_object, render, shorten
from harness.judge.rules.citations import (
    ANTHROPIC_ACCUMULATE, ANTHROPIC_SSE, ANTHROPIC_TS_SSE, ANTHROPIC_TS_STREAM, SPEC_MESSAGES_STREAMING, Breaks,
)
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.schemas import schema_errors

rule = rule_group("anthropic_stream", "AEV", stage="stream", profiles=ANTHROPIC)


def _typed(ctx: Context) -> Iterator[AnthropicEvent]:
    """Events whose data is an object with a string ``type`` (the rest is AEV-002's),
    and error reports in any shape (their shape is AERR-001's)."""
    return (e for e in ctx.events if e.type is not None or e.is_error)


@rule(
    "AEV-001",
    "Every event of an Anthropic stream has an `event:` line equal to its payload's `type`.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python", "anthropic-sdk-typescript"), "both SDKs dispatch by the `event:` name: "
                  "they skip an event without one and handle `ping` and `error` by the name alone; the TypeScript "
                  "SDK (and Python ones up to 0.x) yield only events named one of the six message event types, so "
                  "an event under another name is lost", (ANTHROPIC_SSE, ANTHROPIC_TS_SSE),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current) and @anthropic-ai/sdk 1.14.0 "
                  "(current), for an event without a name; one under another name only anthropic-sdk-python "
                  "0.75.0 loses (anthropic-sdk-python 1.17.0 and 2.14.0 (current) and @anthropic-ai/sdk "
                  "1.14.0 (current) read it by its data's `type`)"),
)
def event_names(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        if e.is_error or e.name == e.type:
            continue
        what = "has no 'event:' line (the SDK skips it)" if e.name is None else f"is named {e.name!r}"
        yield Violation(
            f"event {e.event.index} ({e.type}) {what}", ctx.at_event(e.event, expected=e.type, actual=e.name)
        )


@rule(
    "AEV-002",
    "The data of every event is one JSON object with a string `type`.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python", "anthropic-sdk-typescript"), "data that is not JSON raises "
                  "(`JSONDecodeError`; TypeScript: `Could not parse message into JSON`); the TypeScript "
                  "`MessageStream` dispatches on `type`: an event without one is dropped, or, first, fails with "
                  "`Unexpected event order, got undefined before \"message_start\"`",
                  (ANTHROPIC_SSE, ANTHROPIC_TS_SSE, ANTHROPIC_TS_STREAM),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current) and @anthropic-ai/sdk 1.14.0 "
                  "(current), for data that is not JSON; data without `type` only anthropic-sdk-python "
                  "0.75.0 fails on (`AttributeError`), @anthropic-ai/sdk 1.14.0 (current) read the case's as "
                  "its name says"),
)
def event_json(ctx: Context) -> Iterator[Violation]:
    for e in ctx.events:
        if e.json_error is not None:
            yield Violation(f"event {e.event.index}: data is not JSON ({e.json_error})", ctx.at_event(e.event))
        elif not isinstance(e.value, dict):
            yield Violation(f"event {e.event.index}: data is JSON but not an object", ctx.at_event(e.event))
        elif e.type is None and not e.is_error:
            yield Violation(
                f"event {e.event.index}: the object has no string 'type' ({render(e.value.get('type'))})",
                ctx.at_event(e.event),
            )


@rule(
    "AEV-003",
    "Every event validates against `anthropic_stream_event.schema.json` (the Messages streaming reference).",
    severity="spec",
    source=SPEC_MESSAGES_STREAMING,
)
def event_schema(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        if e.is_error:
            continue  # AERR-001
        errors = schema_errors(e.value, "anthropic_stream_event")
        if errors:
            yield Violation(f"event {e.event.index} ({e.type}): " + "; ".join(errors), ctx.at_event(e.event))


# --------------------------------------------------------------------------- grammar


@dataclass(slots=True)
class _Open:
    index: int | None
    kind: str
    event_index: int


def _astray(e: AnthropicEvent, open_block: _Open | None) -> str | None:
    """Why an event addressed to a block (a delta, a stop) misses the open one, or None
    when it reaches it: AEV-006 and AEV-007 share the one test."""
    if open_block is None:
        return "while no block is open"
    if e.index != open_block.index:
        return f"while block {render(open_block.index)} is open"
    return None


def _walk(ctx: Context) -> Mapping[str, list[Violation]]:
    """One pass over the stream's events, sorting every grammar flaw under its rule."""
    found: dict[str, list[Violation]] = defaultdict(list)

    def flaw(rule_id: str, e: AnthropicEvent | None, message: str) -> None:
        evidence = ctx.at_event(e.event) if e is not None else {"byte_offset": ctx.stream.size}
        found[rule_id].append(Violation(message, evidence))

    started = early_flagged = seen_any = False
    open_block: _Open | None = None
    next_index = 0
    deltas: list[AnthropicEvent] = []
    stops: list[AnthropicEvent] = []
    ended: AnthropicEvent | None = None  # the message_stop or error event that ended the stream
    for e in _typed(ctx):
        t = e.type
        i = e.event.index
        if t == "ping":
            continue
        if ended is not None:
            flaw("AEV-009", e, f"event {i} ({t}) follows the {ended.type or 'error'} of event {ended.event.index}")
            continue
        if e.is_error:
            ended = e
            continue
        seen_any = True
        if t == "message_start":
            if started:
                flaw("AEV-004", e, f"event {i} is a second message_start")
            started = True
            continue
        if not started and not early_flagged:
            early_flagged = True
            flaw("AEV-004", e, f"event {i} ({t}) comes before any message_start (the SDK drops it)")
        if t == "content_block_start":
            if deltas:
                flaw("AEV-008", e, f"event {i}: a content block opens after the message_delta of event "
                     f"{deltas[0].event.index}")
            if open_block is not None:
                flaw("AEV-006", e, f"event {i}: block {render(e.field('index'))} opens while block "
                     f"{render(open_block.index)} (event {open_block.event_index}) is still open")
            if e.index != next_index:
                flaw("AEV-005", e, f"event {i}: a new block takes index {render(e.field('index'))}, "
                     f"expected {next_index}")
            next_index = max(next_index, e.index) + 1 if e.index is not None else next_index + 1
            block = e.field("content_block")
            kind = block.get("type") if isinstance(block, Mapping) else None
            open_block = _Open(e.index, kind if isinstance(kind, str) else "", i)
        elif t == "content_block_delta":
            delta = e.field("delta")
            dtype = delta.get("type") if isinstance(delta, Mapping) else None
            astray = _astray(e, open_block)
            if astray is not None:
                flaw("AEV-007", e, f"event {i}: a {render(dtype)} delta for block {render(e.field('index'))} {astray}")
            elif (open_block is not None and open_block.kind in DELTA_KINDS
                  and dtype not in DELTA_KINDS[open_block.kind]):
                wanted = " or ".join(sorted(DELTA_KINDS[open_block.kind])) or "no delta"
                flaw("AEV-007", e, f"event {i}: a {render(dtype)} delta in {open_block.kind} block "
                     f"{open_block.index} (it takes {wanted})")
        elif t == "content_block_stop":
            astray = _astray(e, open_block)
            if astray is not None:
                flaw("AEV-006", e, f"event {i}: content_block_stop for block {render(e.field('index'))} {astray}")
            open_block = None
        elif t == "message_delta":
            if open_block is not None:
                flaw("AEV-006", e, f"event {i}: message_delta while block {render(open_block.index)} "
                     f"(event {open_block.event_index}) is still open")
                open_block = None
            if deltas:
                flaw("AEV-008", e, f"event {i} is a second message_delta (first: event {deltas[0].event.index})")
            deltas.append(e)
            body = e.field("delta")
            stop_reason = body.get("stop_reason") if isinstance(body, Mapping) else None
            if not isinstance(stop_reason, str) or not stop_reason:
                flaw("AEV-008", e, f"event {i}: message_delta carries stop_reason {render(stop_reason)}")
            usage = e.field("usage")
            tokens = usage.get("output_tokens") if isinstance(usage, Mapping) else None
            if not isinstance(tokens, int) or isinstance(tokens, bool):
                flaw("AEV-008", e, f"event {i}: message_delta has no usage.output_tokens (usage is "
                     f"{render(usage)}; the SDK raises reading it)")
        elif t == "message_stop":
            if open_block is not None:
                flaw("AEV-006", e, f"event {i}: message_stop while block {render(open_block.index)} "
                     f"(event {open_block.event_index}) is still open")
                open_block = None
            stops.append(e)
            ended = e
    if ended is not None and ended.is_error:
        return found  # an error ends the stream where it stands
    if open_block is not None:
        flaw("AEV-006", None, f"the stream ends inside block {render(open_block.index)} "
             f"(opened at event {open_block.event_index})")
    if not started and not early_flagged:
        flaw("AEV-004", None, "the stream has no message_start")
    if not seen_any:
        return found  # nothing but pings or unreadable events
    if not deltas:
        flaw("AEV-008", None, "no message_delta: the stream ends without a stop_reason")
    if not stops:
        flaw("AEV-013", None, "no message_stop ends the stream")
    return found


# The rules of the grammar, each judged by what ``_walk`` files under its id.
grammar = rule.found_by(_walk)


grammar(
    "AEV-004",
    "Exactly one `message_start`, before every other event (`ping` aside; a stream that begins with an `error` "
    "event needs none).",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python", "anthropic-sdk-typescript"), "a block opened before `message_start` is "
                  "never recorded: the Python SDK raises `IndexError: list index out of range` at its first delta, "
                  "TypeScript `Unexpected event order, got content_block_start before \"message_start\"`; "
                  "TypeScript also refuses a second one (`… got message_start before receiving \"message_stop\"`)",
                  (ANTHROPIC_ACCUMULATE, ANTHROPIC_TS_STREAM),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current), for a block before "
                  "`message_start` (1.17.0 and 2.14.0: `IndexError`; 0.75.0: `RuntimeError: Unexpected event "
                  "order`); anthropic-sdk-typescript: @anthropic-ai/sdk 1.14.0 (current) for both (`Cannot "
                  "read properties of undefined`, `Unexpected event order, got message_start before "
                  "receiving message_stop`)"),
)


grammar(
    "AEV-005",
    "Content blocks are opened at indices 0, 1, 2…: each `content_block_start` takes the next index.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "the SDK appends each opened block to the message and addresses a "
                  "delta by its `index` as a position: a first block at index 1 raises `IndexError: list index out "
                  "of range`, and a reused index sends deltas to the wrong block", (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current), for a first block at index 1"),
)


grammar(
    "AEV-006",
    "One block is open at a time: each is closed by its own `content_block_stop` before the next opens and "
    "before the message ends.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-typescript",), "its `MessageStream` reports a finished block (`contentBlock`) at "
                  "each `content_block_stop` as the last block opened (`content.at(-1)`): with two open it reports "
                  "the wrong one, and one never closed is never reported", (ANTHROPIC_TS_STREAM,),
                  versions="anthropic-sdk-typescript: @anthropic-ai/sdk 1.14.0 (current), its `contentBlock` events "
                  "read on the rule's cases"),
)


grammar(
    "AEV-007",
    "Deltas go to the open block only, and match its kind: `text_delta` in a text block, `input_json_delta` in "
    "a tool_use block, `thinking_delta`/`signature_delta` in a thinking block.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "its accumulator applies a delta only when it matches the kind of the "
                  "block at its index and silently drops the others: the text or input the delta carried is lost",
                  (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current)"),
)


grammar(
    "AEV-008",
    "Exactly one `message_delta`, after the last block is closed, carrying `delta.stop_reason` and "
    "`usage.output_tokens`.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "`stop_reason` and `usage.output_tokens` reach the message only "
                  "through `message_delta`: without it the message has no `stop_reason`, without its `usage` the "
                  "SDK raises `AttributeError: 'NoneType' object has no attribute 'output_tokens'`",
                  (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current)"),
)


grammar(
    "AEV-009",
    "`message_stop` comes once, and no event but `ping` follows it or an `error` event (a stream without one is "
    "AEV-013's).",
    severity="spec",
    source=SPEC_MESSAGES_STREAMING,
)


grammar(
    "AEV-013",
    "A stream that does not end with an `error` event ends with `message_stop`.",
    severity="client",
    breaks=Breaks(("anthropic-sdk-typescript", "Claude Code"), "the TypeScript SDK's MessageStream keeps a message "
                  "only when its `message_stop` arrives: without it `finalMessage()` throws \"stream ended without "
                  "producing a Message with role=assistant\", and an agent built on it (Claude Code's bundle "
                  "carries this MessageStream) gets an error instead of the answer", (ANTHROPIC_TS_STREAM,),
                  versions="anthropic-sdk-typescript: @anthropic-ai/sdk 1.14.0 (current) (`finalMessage()` throws); "
                  "Claude Code 2.1.332 (current): its bundle carries "
                  "that MessageStream"),
)


# --------------------------------------------------------------------------- tool_use blocks


def _tool_blocks(ctx: Context) -> Iterator[Block]:
    return (b for b in ctx.blocks if b.kind in TOOL_BLOCKS)


def _label(block: Block) -> str:
    return f"{block.kind} block {render(block.index)} ({render(block.content_block.get('name'))})"


@rule(
    "AEV-010",
    "A tool_use block's `partial_json` fragments join into one JSON object by its `content_block_stop`; a "
    "stream never ends inside an unfinished input, unless an `event: error` the scenario accepts cut it (the "
    "SDKs raise there and the block is never run).",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "the SDK parses the input on every delta: invalid JSON raises "
                  "`ValueError: Unable to parse tool parameter JSON from model. …`, and a stream ending inside the "
                  "input hands the application the part parsed so far", (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current) (0.75.0 with the parser's "
                  "message alone)"),
)
def tool_input_complete(ctx: Context) -> Iterator[Violation]:
    for block in _tool_blocks(ctx):
        pieces = block.pieces("input_json_delta", "partial_json", until_stop=True)
        joined = "".join(text for _, text in pieces)
        if not joined:
            continue  # no fragments: the starting input stands (AEV-011 and AEV-012 judge it)
        if parse_object(joined) is not None or (block.stop is None and ctx.error_accepted):
            continue
        at = block.stop or (pieces[-1][0] if pieces else block.start)
        when = "at its content_block_stop" if block.stop is not None else "when the stream ends inside it"
        yield Violation(
            f"{_label(block)}: the input is not one JSON object {when}: {shorten(joined, 120)}",
            ctx.at_event(at.event, actual=joined),
        )


@rule(
    "AEV-011",
    "A tool_use block's `content_block_start` never carries its input as a string (AEV-012 holds it to the "
    "API's `input: {}`).",
    severity="client",
    breaks=Breaks(("anthropic-sdk-python",), "the SDK starts the block's input from `content_block_start`: an "
                  "input sent there as a string stays a `str` in the accumulated message when no delta replaces "
                  "it, so the application gets no arguments object", (ANTHROPIC_ACCUMULATE,),
                  versions="anthropic-sdk-python 0.75.0, 1.17.0 and 2.14.0 (current)"),
)
def tool_input_not_a_string(ctx: Context) -> Iterator[Violation]:
    for block in _tool_blocks(ctx):
        value = block.content_block.get("input")
        if isinstance(value, str):
            yield Violation(f"{_label(block)} sends input as a string {shorten(value, 80)} (the client gets a str, "
                            "not an object); expected {}", ctx.at_event(block.start.event, actual=value))


@rule(
    "AEV-012",
    "A tool_use block starts with `input: {}`, as the API sends it: the input arrives as `input_json_delta` "
    "fragments, not prefilled in `content_block_start` (a string there is AEV-011's).",
    severity="spec",  # the SDKs take a prefilled object as the input, and replace it with the deltas if any come
    source=SPEC_MESSAGES_STREAMING,
)
def tool_input_starts_empty(ctx: Context) -> Iterator[Violation]:
    for block in _tool_blocks(ctx):
        cb = block.content_block
        value = cb.get("input")
        if (isinstance(value, Mapping) and not value) or isinstance(value, str):
            continue
        what = "has no 'input'" if "input" not in cb else f"starts with input {render(value, 80)}"
        yield Violation(f"{_label(block)} {what}; expected {{}}", ctx.at_event(block.start.event, actual=value))
