"""Anthropic Messages stream rules: event names, event shapes and the event grammar.

The grammar a Messages stream follows: ``message_start`` first; content blocks opened
by ``content_block_start`` at indices 0, 1, 2…, one at a time, filled by deltas of
their own kind and closed by ``content_block_stop``; then one ``message_delta`` with
the ``stop_reason``; then ``message_stop``. ``ping`` may come anywhere, and an
``error`` event ends the stream wherever it comes (its name is AERR-001's business, its shape AERR-003's).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from harness.judge.readers.anthropic_events import DELTA_KINDS, TOOL_BLOCKS, AnthropicEvent, Block
from harness.judge.compare import parse_object, render, shorten
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.schemas import schema_errors

rule = rule_group("anthropic_stream", "AEV", stage="stream", profiles=ANTHROPIC)


def _typed(ctx: Context) -> Iterator[AnthropicEvent]:
    """Events whose data is an object with a string ``type`` (the rest is AEV-002's),
    and error reports in any shape (their name and shape are AERR-001's and AERR-003's)."""
    return (e for e in ctx.events if e.type is not None or e.is_error)


@rule("AEV-001")
def event_names(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        if not e.is_error and e.name is None:
            yield Violation(f"event {e.event.index} ({e.type}) has no 'event:' line (the SDK skips it)",
                            ctx.at_event(e.event, expected=e.type, actual=e.name))


@rule("AEV-014")
def event_names_match(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        if not e.is_error and e.name is not None and e.name != e.type:
            yield Violation(f"event {e.event.index} ({e.type}) is named {e.name!r}",
                            ctx.at_event(e.event, expected=e.type, actual=e.name))


# The events whose data the SDKs parse as an event object: every named one but `ping` (and `error`, whose
# data they raise with, whatever it is): data that is no JSON object fails them there.
_SKIPPED_NAMES = frozenset({None, "ping", "error"})


def _data_flaws(ctx: Context) -> list[tuple[bool, Violation]]:
    """Every event whose data is no JSON object with a string ``type``; each with whether the SDKs parse it."""
    found: list[tuple[bool, Violation]] = []
    for e in ctx.events:
        parsed = e.name not in _SKIPPED_NAMES
        if e.json_error is not None:
            found.append((parsed, Violation(f"event {e.event.index}: data is not JSON ({e.json_error})",
                                            ctx.at_event(e.event))))
        elif not isinstance(e.value, dict):
            found.append((parsed, Violation(f"event {e.event.index}: data is JSON but not an object",
                                            ctx.at_event(e.event))))
        elif e.type is None and not e.is_error:
            found.append((False, Violation(
                f"event {e.event.index}: the object has no string 'type' ({render(e.value.get('type'))})",
                ctx.at_event(e.event))))
    return found


@rule("AEV-002")
def event_json(ctx: Context) -> Iterator[Violation]:
    return (v for parsed, v in ctx.derived(_data_flaws) if parsed)


@rule("AEV-015")
def event_objects(ctx: Context) -> Iterator[Violation]:
    return (v for parsed, v in ctx.derived(_data_flaws) if not parsed)


@rule("AEV-003")
def event_schema(ctx: Context) -> Iterator[Violation]:
    for e in _typed(ctx):
        if e.is_error:
            continue  # AERR-001, AERR-003
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


grammar("AEV-004")


grammar("AEV-005")


grammar("AEV-006")


grammar("AEV-007")


grammar("AEV-008")


grammar("AEV-009")


grammar("AEV-013")


# --------------------------------------------------------------------------- tool_use blocks


def _tool_blocks(ctx: Context) -> Iterator[Block]:
    return (b for b in ctx.blocks if b.kind in TOOL_BLOCKS)


def _label(block: Block) -> str:
    return f"{block.kind} block {render(block.index)} ({render(block.content_block.get('name'))})"


@rule("AEV-010")
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


@rule("AEV-011")
def tool_input_not_a_string(ctx: Context) -> Iterator[Violation]:
    for block in _tool_blocks(ctx):
        value = block.content_block.get("input")
        if isinstance(value, str):
            yield Violation(f"{_label(block)} sends input as a string {shorten(value, 80)} (the client gets a str, "
                            "not an object); expected {}", ctx.at_event(block.start.event, actual=value))


@rule("AEV-012")
def tool_input_starts_empty(ctx: Context) -> Iterator[Violation]:
    for block in _tool_blocks(ctx):
        cb = block.content_block
        value = cb.get("input")
        if (isinstance(value, Mapping) and not value) or isinstance(value, str):
            continue
        what = "has no 'input'" if "input" not in cb else f"starts with input {render(value, 80)}"
        yield Violation(f"{_label(block)} {what}; expected {{}}", ctx.at_event(block.start.event, actual=value))
