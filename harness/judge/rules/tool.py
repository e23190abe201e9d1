"""Tool-call rules: how structured calls are streamed and what they hold."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.dialects.clients import OPENAI_CLIENT
from harness.core.dialects.frames import EventFrame, RawFrame, ToolCallFrame, ToolUseFrame
from harness.core.scenario.model import Scenario
from harness.judge.compare import parse_object, render, shorten, shown
from harness.judge.readers.assemble import Payload
from harness.judge.readers.sse import parse_events
from harness.judge.rules import locate
from harness.judge.rules.chunk import choices_of
from harness.judge.rules.citations import (
    AI_SDK_CHANGELOG,
    AI_SDK_CHAT,
    AI_SDK_EMPTY_ARGUMENTS,
    AI_SDK_TRACKER,
    CODEX_CHAT,
    COPILOT_SSE,
    OPENAI_ACCUMULATE,
    OPENAI_DELTAS,
    OPENAI_PARSING,
    Breaks,
)
from harness.judge.rules.context import Context
from harness.judge.rules.json_completion import JsonCompletion
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group

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


@rule(
    "TOOL-001",
    "Every `tool_calls[]` delta entry has an integer `index` and a `function` object.",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python's accumulator raises ``RuntimeError: Expected "
                  "list delta entry to have an `index` key`` (``TypeError: … `index` value is not an integer; "
                  "None`` for a null one) and fails an assertion without `function`; the AI SDK's chunk schema "
                  "requires both", (OPENAI_DELTAS, AI_SDK_CHAT),
                  versions="openai-python 3.57.0 (current), read by SDK-001's real-client check; AI SDK: "
                  "@ai-sdk/openai-compatible 3.0.92 (current) and earlier"),
)
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


@rule(
    "TOOL-002",
    'The first delta of each call carries a non-empty `id`, `type: "function"` and the whole `function.name`.',
    severity="client",
    breaks=Breaks(("Vercel AI SDK", "OpenCode", "Codex CLI", "VS Code Copilot"), "the AI SDK (OpenCode's provider) "
                  "raises `Expected 'function.name' to be a string.` on a first delta without a name (releases "
                  "before its streaming tool-call tracker also `Expected 'id' to be a string.`; current ones make "
                  "up a missing id), and keeps the first name: a split name calls `get_` (`Model tried to call "
                  "unavailable tool 'get_'`); Codex CLI keeps a name's first fragment, Copilot its last",
                  (AI_SDK_TRACKER, CODEX_CHAT, COPILOT_SSE),
                  versions="AI SDK: @ai-sdk/openai-compatible 1.0.61, 2.0.92 and 3.0.92 (current) for the name; "
                  "Codex CLI (codex-rs/core/src/chat_completions.rs at 0775d1b) and VS Code Copilot "
                  "(src/platform/networking/node/stream.ts at 31acd00, 2026-03-29), read"),
)
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


@rule(
    "TOOL-003",
    "Later deltas of a call never send `id` or `function.name` again, nor `type` as anything but `\"function\"` "
    "(a null `id` or `name` is left as it was by the clients, and judged by the schema, CHUNK-003; an empty one, as "
    "LM Studio sends, adds nothing to what they concatenate).",
    severity="client",
    breaks=Breaks(("openai-python",), "its accumulator concatenates strings: a repeated id becomes `call_1call_1`, "
                  "a name `get_weatherget_weather`; a later `type: null` fails an assertion (`type: \"function\"` "
                  "is replaced, harmlessly)", (OPENAI_DELTAS, OPENAI_ACCUMULATE),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
)
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


@rule(
    "TOOL-004",
    "Call indices start at 0 and each new call takes the next index.",
    severity="client",
    breaks=Breaks(("openai-python",), "it puts each call at its `index`: a first call at index 1 raises "
                  "`IndexError: list index out of range`, and a new call on a used index is merged into that call "
                  "(`call_1call_2`, `get_weatherget_time`)", (OPENAI_DELTAS, OPENAI_ACCUMULATE),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
)
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


@rule(
    "TOOL-005",
    "Parallel calls have distinct ids.",
    severity="client",
    breaks=Breaks(("VS Code Copilot",), "Copilot starts a new call only at a different id: two calls sharing one "
                  "become one call with both calls' arguments joined", (COPILOT_SSE,),
                  versions="VS Code Copilot: src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
    stage="answer",
)
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


@rule(
    "TOOL-006",
    "Each call's arguments join into exactly one JSON object (a call cut short by an in-stream error the "
    "scenario accepts is never run by a client, and is not judged; nor is a native call whose arguments the "
    "backend itself sent as no JSON object, passed on exactly as sent: no object a proxy made of them would be "
    "the model's call).",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python hands the application `arguments` its "
                  "`json.loads` rejects, and its own `chat.completions.parse()` and `.stream()` helpers raise a "
                  "pydantic `ValidationError` (`Invalid JSON`) for a strict function tool; the AI SDK before "
                  "@ai-sdk/openai-compatible 1.0.57 (AI SDK 5) and 2.0.58 (AI SDK 6) completed a call only once "
                  "its arguments parsed as JSON, so one whose arguments never parse never ran",
                  (OPENAI_PARSING, AI_SDK_CHAT, AI_SDK_CHANGELOG),
                  versions="openai-python: every release with the parsing helpers, 2.54.0 and 3.57.0 (current) "
                  "tried; AI SDK: @ai-sdk/openai-compatible up to 1.0.56 and 2.0.57 (current releases finish the "
                  "call at the end of the stream)"),
    stage="answer",
)
def arguments_one_object(ctx: Context) -> Iterator[Violation]:
    for position, call in enumerate(ctx.answer.tool_calls):
        if call.arguments.strip() and parse_object(call.arguments) is None and ctx.runs(call.arguments):
            yield Violation(
                f"call {call.index} ({call.name}): arguments are not one JSON object: {shorten(call.arguments)}",
                {"actual": call.arguments, **locate.call(ctx, position)},
            )


@rule(
    "TOOL-007",
    "No earlier prefix of a call's argument stream is complete JSON by itself "
    "(no `{}` placeholder before the real arguments).",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python joins the fragments as they come, so the "
                  "application's `json.loads` of a `{}` placeholder followed by the real arguments fails (`Extra "
                  "data`); the AI SDK before @ai-sdk/openai-compatible 1.0.57 (AI SDK 5) and 2.0.58 (AI SDK 6) "
                  "completed a call once its arguments parsed as JSON, so the placeholder ran the tool with no "
                  "arguments and the real ones were ignored", (OPENAI_ACCUMULATE, AI_SDK_CHANGELOG, AI_SDK_TRACKER),
                  versions="openai-python 3.57.0 (current) and earlier; AI SDK: @ai-sdk/openai-compatible up to "
                  "1.0.56 and 2.0.57 (1.0.61, 2.0.92 and 3.0.92, the current releases, finish a call only at the "
                  "end of the stream)"),
)
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


@rule(
    "TOOL-008",
    "A call without arguments sends `\"{}\"`, not an empty string (an empty string from the backend is not JSON "
    "either, so relaying it unchanged passes the defect on).",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python's own `chat.completions.parse()` and "
                  "`chat.completions.stream()` read a strict function tool's arguments as JSON and raise a pydantic "
                  "`ValidationError` (`Invalid JSON: EOF while parsing a value`) for `\"\"`, streamed or whole; an "
                  "application's own `json.loads` fails the same way. AI SDK 4.x lost such a call (vercel/ai#5658). "
                  "Agent frameworks read `\"\"` as `{}` and run the tool: the OpenAI Agents SDK 0.24.0, LangChain "
                  "(langchain-openai 1.7.4, langchain-core 1.8.3), LlamaIndex (llama-index-llms-openai 0.8.3), "
                  "Pydantic AI 2.68.0, and AI SDK 5 to 7", (OPENAI_PARSING, AI_SDK_EMPTY_ARGUMENTS),
                  versions="openai-python 2.54.0 and 3.57.0 (current), with strict function tools; AI SDK 4.x"),
    stage="answer",
)
def empty_arguments(ctx: Context) -> Iterator[Violation]:
    for position, call in enumerate(ctx.answer.tool_calls):
        if not call.arguments.strip():
            yield Violation(
                f"call {call.index} ({call.name}) has arguments {call.arguments!r}; a call without arguments "
                'sends "{}"',
                {"expected": "{}", "actual": call.arguments, **locate.call(ctx, position)},
            )


@rule.item(
    "TOOL-010",
    "Call ids are unique across requests: no two answers of one test item (streamed, not streamed, re-chunked) "
    "give a call the same id (Messages: tool_use id), unless the backend itself sent that id.",
    severity="client",
    breaks=Breaks(("Claude Code",), "agents send their history back; the Messages API refuses one with two tool "
                  "calls of one id (`` `tool_use` ids must be unique ``), and Claude Code stops there",
                  versions="Claude Code 2.1.332 (current): its bundle (@anthropic-ai/claude-code-linux-x64) read, it "
                  "reports the API's refusal as `API Error: 400 duplicate tool_use ID in conversation "
                  "history`"),
    profiles=EVERY_PROFILE,
)
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


@rule(
    "TOOL-009",
    '`finish_reason` is `"tool_calls"` when calls were made.',
    severity="client",
    breaks=Breaks(("Codex CLI",), "Codex CLI emits a streamed call only at `finish_reason: \"tool_calls\"`; at "
                  "`stop` it ends the turn with the text alone and never runs the call", (CODEX_CHAT,),
                  versions="Codex CLI: codex-rs/core/src/chat_completions.rs at 0775d1b, read"),
    stage="answer",
    profiles=(OPENAI_CLIENT,),
    ending=True,
)
def finish_tool_calls(ctx: Context) -> Iterator[Violation]:
    answer = ctx.answer
    if answer.tool_calls and answer.finish_reason != "tool_calls":
        yield Violation(
            f"{len(answer.tool_calls)} call(s) made but finish_reason is {render(answer.finish_reason)}",
            {"expected": "tool_calls", "actual": answer.finish_reason, **locate.finish(ctx)},
        )
