"""Tool-call rules: how structured calls are streamed and what they hold."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.dialects.frames import EventFrame, RawFrame, ToolCallFrame, ToolUseFrame
from harness.core.scenario.model import Scenario
from harness.judge.compare import parse_object, render, shorten, shown
from harness.judge.readers.assemble import Payload
from harness.judge.readers.sse import parse_events
from harness.judge.rules import locate
from harness.judge.rules.calls import CALLS_FINISH, calls_finish_wrong, calls_lost
from harness.judge.rules.chunk import choices_of
from harness.judge.rules.context import Context
from harness.judge.rules.json_completion import JsonCompletion
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group

rule = rule_group("tool_calls", "TOOL", stage="stream")


@dataclass(frozen=True, slots=True)
class CallDelta:
    """One ``tool_calls[]`` entry of one chunk."""

    payload: Payload
    choice: int
    entry: Any
    index: int | None  # None when the entry has no integer index
    first: bool  # the first entry seen for (choice, index)


def call_deltas(ctx: Context) -> list[CallDelta]:
    out: list[CallDelta] = []
    seen: set[tuple[int, int]] = set()
    for p, choice_index, choice in choices_of(ctx):
        delta = choice.get("delta")
        entries = delta.get("tool_calls") if isinstance(delta, dict) else None
        if not isinstance(entries, list):
            continue
        for entry in entries:
            index = entry.get("index") if isinstance(entry, dict) else None
            if not isinstance(index, int) or isinstance(index, bool):
                out.append(CallDelta(p, choice_index, entry, None, False))
                continue
            key = (choice_index, index)
            out.append(CallDelta(p, choice_index, entry, index, key not in seen))
            seen.add(key)
    return out


def _fn(entry: Any) -> dict[str, Any]:
    fn = entry.get("function") if isinstance(entry, dict) else None
    return fn if isinstance(fn, dict) else {}


@rule("TOOL-001")
def entry_shape(ctx: Context) -> Iterator[Violation]:
    for p, _, choice in choices_of(ctx):
        delta = choice.get("delta")
        entries = delta.get("tool_calls") if isinstance(delta, dict) else None
        if entries is not None and not isinstance(entries, list):
            yield Violation(f"event {p.event.index}: tool_calls is {render(entries, 80)}, not an array", ctx.at(p))
    for d in call_deltas(ctx):
        problems: list[str] = []
        if not isinstance(d.entry, dict):
            problems.append("the entry is not an object")
        else:
            if d.index is None:
                problems.append(f"index is {render(d.entry.get('index'))}")
            if not isinstance(d.entry.get("function"), dict):
                problems.append("no 'function' object")
        if problems:
            yield Violation(
                f"event {d.payload.event.index}: {', '.join(problems)}: {render(d.entry, 100)}",
                ctx.at(d.payload, actual=d.entry),
            )


@rule("TOOL-002")
def first_delta_complete(ctx: Context) -> Iterator[Violation]:
    names: dict[tuple[int, int], Any] = {}
    for d in call_deltas(ctx):
        if d.index is None or not isinstance(d.entry, dict):
            continue
        key = (d.choice, d.index)
        name = _fn(d.entry).get("name")
        if d.first:
            names[key] = name
            missing = []
            if not isinstance(d.entry.get("id"), str) or not d.entry["id"]:
                missing.append(shown(d.entry, "id"))
            if d.entry.get("type") != "function":
                missing.append(shown(d.entry, "type"))
            if not isinstance(name, str) or not name:
                missing.append(shown(_fn(d.entry), "name", "function.name"))
            if missing:
                yield Violation(
                    f"event {d.payload.event.index}: call {d.index} starts without what clients need: "
                    + ", ".join(missing),
                    ctx.at(d.payload, actual=d.entry),
                )
        elif isinstance(name, str) and name and name != names.get(key):
            yield Violation(
                f"event {d.payload.event.index}: call {d.index}'s name is split across deltas: "
                f"{render(names.get(key))} then {render(name)}",
                ctx.at(d.payload, actual=name),
            )


@rule("TOOL-003")
def no_repeats(ctx: Context) -> Iterator[Violation]:
    for d in call_deltas(ctx):
        if d.first or d.index is None or not isinstance(d.entry, dict):
            continue
        repeated = ["id"] if d.entry.get("id") not in (None, "") else []
        if "type" in d.entry and d.entry["type"] != "function":
            repeated.append("type")
        if _fn(d.entry).get("name") not in (None, ""):
            repeated.append("function.name")
        if repeated:
            shown = ", ".join(
                f"{k}={render(_fn(d.entry).get('name') if k == 'function.name' else d.entry[k])}" for k in repeated
            )
            yield Violation(
                f"event {d.payload.event.index}: a later delta of call {d.index} sends {shown} again",
                ctx.at(d.payload, actual=d.entry),
            )


@rule("TOOL-004")
def contiguous_indices(ctx: Context) -> Iterator[Violation]:
    expected: dict[int, int] = {}
    for d in call_deltas(ctx):
        if d.index is None or not d.first:
            continue
        want = expected.get(d.choice, 0)
        if d.index != want:
            yield Violation(
                f"event {d.payload.event.index}: a new call takes index {d.index}, expected {want}",
                ctx.at(d.payload, expected=want, actual=d.index),
            )
        expected[d.choice] = max(want, d.index + 1)


@rule("TOOL-005", stage="answer")
def distinct_ids(ctx: Context) -> Iterator[Violation]:
    seen: dict[str, int] = {}
    for position, call in enumerate(ctx.answer.tool_calls):
        if not call.id:
            continue
        if call.id in seen:
            yield Violation(
                f"calls {seen[call.id]} and {call.index} share the id {call.id!r}",
                {"actual": call.id, **locate.call(ctx, position)},
            )
        else:
            seen[call.id] = call.index


@rule("TOOL-006", stage="answer")
def arguments_one_object(ctx: Context) -> Iterator[Violation]:
    for position, call in enumerate(ctx.answer.tool_calls):
        if call.arguments.strip() and parse_object(call.arguments) is None and ctx.runs(call.arguments):
            yield Violation(
                f"call {call.index} ({call.name}): arguments are not one JSON object: {shorten(call.arguments)}",
                {"actual": call.arguments, **locate.call(ctx, position)},
            )


@rule("TOOL-007")
def no_complete_prefix(ctx: Context) -> Iterator[Violation]:
    fragments: dict[tuple[int, int], list[tuple[Payload, str]]] = {}
    for d in call_deltas(ctx):
        args = _fn(d.entry).get("arguments")
        if d.index is not None and isinstance(args, str):
            fragments.setdefault((d.choice, d.index), []).append((d.payload, args))
    for (_, index), parts in fragments.items():
        last_content = max((n for n, (_, f) in enumerate(parts) if f.strip()), default=-1)
        progress = JsonCompletion()
        for n, (payload, fragment) in enumerate(parts):
            if progress.feed(fragment) and n < last_content:
                prefix = "".join(progress.text)
                rest = "".join(f for _, f in parts[n + 1 :])
                yield Violation(
                    f"event {payload.event.index}: call {index}'s arguments are already complete JSON "
                    f"{shorten(prefix, 60)} before more arrives ({shorten(rest, 60)})",
                    ctx.at(payload, actual=prefix),
                )
                break
            if progress.closed or progress.scalar:
                break


@rule("TOOL-008", stage="answer")
def empty_arguments(ctx: Context) -> Iterator[Violation]:
    for position, call in enumerate(ctx.answer.tool_calls):
        if not call.arguments.strip():
            yield Violation(
                f"call {call.index} ({call.name}) has arguments {call.arguments!r}; a call without arguments "
                'sends "{}"',
                {"expected": "{}", "actual": call.arguments, **locate.call(ctx, position)},
            )


@rule.item("TOOL-010", profiles=ANTHROPIC)
def ids_unique_across_requests(answers: Sequence[tuple[str, Context]]) -> Iterator[Violation]:
    first: dict[str, str] = {}  # id -> the answer it was first seen in
    reported: set[str] = set()
    for label, ctx in answers:
        relayed = backend_call_ids(ctx.scenario)
        for call in ctx.answer.tool_calls:
            if not call.id or call.id in relayed:
                continue
            seen = first.setdefault(call.id, label)
            if seen != label and call.id not in reported:
                reported.add(call.id)
                yield Violation(
                    f"the call id {call.id!r} is given again: in {seen} and in {label} (a client keeping its "
                    "history holds two calls with one id, and matches tool results to the wrong one)",
                    {"actual": call.id, "answers": [seen, label]},
                )


def backend_call_ids(scenario: Scenario) -> frozenset[str]:
    """The call ids the mock backend sends for ``scenario``, from its native frames, the
    ``toolUseId`` of its event frames (Kiro) and the tool_use blocks and tool_calls entries of
    its raw frames: a proxy may pass them on."""
    ids: set[str] = set()
    for frame in scenario.backend.frames:
        if isinstance(frame, (ToolCallFrame, ToolUseFrame)) and frame.id is not None:
            ids.add(frame.id)
        elif isinstance(frame, EventFrame) and isinstance(frame.payload, dict):
            payload = frame.payload.get(frame.event, frame.payload)  # a payload may sit under its event's name
            if isinstance(payload, dict) and isinstance(payload.get("toolUseId"), str):
                ids.add(payload["toolUseId"])
        elif isinstance(frame, RawFrame):
            for event in parse_events(frame.raw.encode("utf-8", "replace")).events:
                try:
                    ids.update(_call_ids(json.loads(event.data)))
                except (ValueError, RecursionError):
                    continue
    return frozenset(ids)


def _call_ids(value: Any) -> Iterator[str]:
    """The ids of every tool_use block and tool_calls entry anywhere in a parsed event."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "tool_use" and isinstance(item.get("id"), str):
                yield item["id"]
            entries = item.get("tool_calls")
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                    yield entry["id"]
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


@rule("TOOL-009", stage="answer", profiles=CALLS_FINISH, ending=True)
def finish_tool_calls(ctx: Context) -> Iterator[Violation]:
    answer = ctx.answer
    if calls_finish_wrong(ctx) and not calls_lost(ctx):
        yield Violation(
            f"{len(answer.tool_calls)} call(s) made but finish_reason is {render(answer.finish_reason)}",
            {"expected": "tool_calls", "actual": answer.finish_reason, **locate.finish(ctx)},
        )
