"""Chunk rules: the JSON of each streamed chunk and how chunks follow each other."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.judge.readers.assemble import Payload
from harness.judge.compare import render
from harness.judge.rules.citations import (
    AI_SDK_CHANGELOG, AI_SDK_CHAT, AI_SDK_EVENTS, CODEX_CHAT, COPILOT_SSE, OPENAI_ACCUMULATE, OPENAI_DELTAS, OPENAI_SSE,
    SPEC_CHAT_STREAMING, Breaks,
)
from harness.judge.rules.context import Context
from harness.judge.rules.locate import end_of_stream
from harness.judge.rules.registry import Violation, rule_group
from harness.judge.rules.schemas import schema_errors

rule = rule_group("chunks", "CHUNK", stage="stream")


def choices_of(ctx: Context) -> Iterator[tuple[Payload, int, dict[str, Any]]]:
    """(payload, choice index, choice) for every well-formed choice of every chunk."""
    for payload, chunk in ctx.chunks:
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            continue
        for choice in choices:
            if isinstance(choice, dict):
                index = choice.get("index", 0)
                yield payload, index if isinstance(index, int) else 0, choice


def _delta(choice: dict[str, Any]) -> dict[str, Any]:
    delta = choice.get("delta")
    return delta if isinstance(delta, dict) else {}


def _carries_output(delta: dict[str, Any]) -> bool:
    return any(bool(delta.get(k)) for k in ("content", "tool_calls", "refusal")) or isinstance(delta.get("role"), str)


@rule(
    "CHUNK-001",
    "Every data payload other than `[DONE]` is one JSON object.",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python raises `JSONDecodeError: Expecting value: "
                  "line 1 column 1 (char 0)` on a payload that is not JSON; the AI SDK ends the stream with an "
                  "`AI_JSONParseError`", (OPENAI_SSE, AI_SDK_EVENTS),
                  versions="openai-python 3.57.0 (current), read by SDK-001's real-client check; AI SDK: "
                  "@ai-sdk/provider-utils 5.0.81 (current) and earlier"),
)
def payload_is_json(ctx: Context) -> Iterator[Violation]:
    for p in ctx.payloads:
        if p.json_error is not None:
            yield Violation(f"event {p.event.index}: data is not JSON ({p.json_error})", ctx.at(p))
        elif not isinstance(p.value, dict):
            yield Violation(f"event {p.event.index}: data is JSON but not an object", ctx.at(p))


def _provider_extra(chunk: Mapping[str, Any]) -> bool:
    """Azure OpenAI's first chunk, ``{"object": "", "choices": [], "prompt_filter_results": [...]}``: relayed
    unchanged it breaks no client (the openai SDKs skip a chunk without choices)."""
    return chunk.get("object") == "" and chunk.get("choices") == []


@rule(
    "CHUNK-002",
    'Every chunk has a `choices` array and `object: "chat.completion.chunk"` (or, with `choices: []`, an '
    'empty `object`, as Azure OpenAI sends its prompt-filter chunk and the official SDKs accept).',
    severity="client",
    breaks=Breaks(("openai-python",), "without `choices` its stream accumulator raises `TypeError: 'NoneType' "
                  "object is not iterable`; a chunk whose `object` is not `chat.completion.chunk` is skipped "
                  "(`_is_valid_chat_completion_chunk_weak`), losing the text or call it carries",
                  (OPENAI_ACCUMULATE,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
)
def chunk_shape(ctx: Context) -> Iterator[Violation]:
    for p, chunk in ctx.chunks:
        if not isinstance(chunk.get("choices"), list):
            got = "no 'choices'" if "choices" not in chunk else f"'choices' is {render(chunk['choices'], 40)}"
            yield Violation(f"event {p.event.index}: {got}", ctx.at(p, expected="an array"))
        if chunk.get("object") != "chat.completion.chunk" and not _provider_extra(chunk):
            yield Violation(
                f"event {p.event.index}: object is {render(chunk.get('object'))}",
                ctx.at(p, expected="chat.completion.chunk", actual=chunk.get("object")),
            )


@rule(
    "CHUNK-003",
    "Every chunk validates against `chat_completion_chunk.schema.json` (id, created and model present; "
    "no `null` or empty `tool_calls` where the spec does not allow them).",
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)
def chunk_schema(ctx: Context) -> Iterator[Violation]:
    for p, chunk in ctx.chunks:
        errors = schema_errors(chunk, "chat_completion_chunk")
        if errors:
            yield Violation(f"event {p.event.index}: " + "; ".join(errors), ctx.at(p, actual=errors))


@rule(
    "CHUNK-004",
    "`id` and `model` are the same on every chunk of a stream.",
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)
def constant_identity(ctx: Context) -> Iterator[Violation]:
    for key in ("id", "model"):
        first: tuple[Payload, Any] | None = None
        for p, chunk in ctx.chunks:
            if key not in chunk:
                continue
            if first is None:
                first = (p, chunk[key])
            elif chunk[key] != first[1]:
                yield Violation(
                    f"event {p.event.index}: {key} {render(chunk[key])} differs from {render(first[1])} "
                    f"(event {first[0].event.index})",
                    ctx.at(p, expected=first[1], actual=chunk[key]),
                )
                break


@rule(
    "CHUNK-005",
    'A `delta.role`, when sent, is `"assistant"` (never `""`).',
    severity="client",
    breaks=Breaks(("Vercel AI SDK",), "AI SDK 5's chunk schema allows `role` to be `\"assistant\"` or absent "
                  "only: a chunk with `role: \"\"` fails validation (`AI_TypeValidationError`) and the stream ends "
                  "with an error (@ai-sdk/openai-compatible 3.0.0 accepts `\"\"`: its CHANGELOG, \"accept empty "
                  "string `role` in streaming delta chunks\")", (AI_SDK_CHAT, AI_SDK_CHANGELOG),
                  versions="AI SDK 5: @ai-sdk/openai-compatible 1.x, 1.0.61 (the current 1.x) included; 2.0.92 and "
                  "3.0.92 (AI SDK 6 and 7, current) accept `\"\"`"),
)
def role_value(ctx: Context) -> Iterator[Violation]:
    for p, _, choice in choices_of(ctx):
        delta = _delta(choice)
        if "role" in delta and delta["role"] is not None and delta["role"] != "assistant":
            yield Violation(
                f"event {p.event.index}: role is {render(delta['role'])}",
                ctx.at(p, expected="assistant", actual=delta["role"]),
            )


@rule(
    "CHUNK-006",
    "The role is sent at most once per choice.",
    severity="client",
    breaks=Breaks(("openai-python",), "its accumulator concatenates string fields, so a repeated role makes the "
                  "message's role `\"assistantassistant\"`, a role no API accepts when the application sends the "
                  "message back", (OPENAI_DELTAS,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
)
def role_once(ctx: Context) -> Iterator[Violation]:
    role_seen: dict[int, int] = {}
    for p, index, choice in choices_of(ctx):
        if isinstance(_delta(choice).get("role"), str):
            if index in role_seen:
                yield Violation(
                    f"event {p.event.index}: the role is sent again (first in event {role_seen[index]})", ctx.at(p)
                )
            else:
                role_seen[index] = p.event.index


@rule(
    "CHUNK-007",
    "Every choice gets a `finish_reason`.",
    severity="client",
    breaks=Breaks(("VS Code Copilot", "Codex CLI"), "both hand streamed tool calls on only when a finish reason "
                  "arrives (Copilot at `tool_calls` or `stop`, Codex CLI at `tool_calls`): a choice that never "
                  "gets one ends without its calls", (COPILOT_SSE, CODEX_CHAT),
                  versions="VS Code Copilot: src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read; "
                  "Codex CLI: codex-rs/core/src/chat_completions.rs at 0775d1b, read"),
    ending=True,
)
def finish_sent(ctx: Context) -> Iterator[Violation]:
    indices: set[int] = set()
    finished: set[int] = set()
    for _, index, choice in choices_of(ctx):
        indices.add(index)
        if choice.get("finish_reason") is not None:
            finished.add(index)
    for index in sorted((indices or {0}) - finished):
        yield Violation(
            f"choice {index} never gets a finish_reason", {"expected": "a finish_reason", **end_of_stream(ctx)}
        )


@rule(
    "CHUNK-008",
    "No content, tool call or role delta follows a choice's finish chunk.",
    severity="client",
    breaks=Breaks(("VS Code Copilot", "Codex CLI"), "Copilot closes a choice at its finish chunk and ignores every "
                  "later chunk of it, so text or calls sent after it are lost; Codex CLI emits a call with the "
                  "arguments it holds at the `tool_calls` finish, so arguments sent after it are lost",
                  (COPILOT_SSE, CODEX_CHAT),
                  versions="VS Code Copilot: src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read; "
                  "Codex CLI: codex-rs/core/src/chat_completions.rs at 0775d1b, read"),
)
def nothing_after_finish(ctx: Context) -> Iterator[Violation]:
    finished: dict[int, int] = {}
    for p, index, choice in choices_of(ctx):
        if index in finished and _carries_output(_delta(choice)):
            yield Violation(
                f"event {p.event.index}: choice {index} sends {render(_delta(choice), 80)} after its finish "
                f"chunk (event {finished[index]})",
                ctx.at(p),
            )
        if choice.get("finish_reason") is not None and index not in finished:
            finished[index] = p.event.index


@rule(
    "CHUNK-009",
    "`finish_reason` is non-null exactly once per choice, on the choice's last chunk.",
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)
def finish_once_last(ctx: Context) -> Iterator[Violation]:
    finished: dict[int, int] = {}
    for p, index, choice in choices_of(ctx):
        if index in finished:
            what = "a second finish_reason" if choice.get("finish_reason") is not None else "another chunk"
            yield Violation(
                f"event {p.event.index}: {what} for choice {index} after its finish (event {finished[index]})",
                ctx.at(p),
            )
        elif choice.get("finish_reason") is not None:
            finished[index] = p.event.index


@rule(
    "CHUNK-011",
    "A choice's `finish_reason`, once sent, never changes.",
    severity="client",
    breaks=Breaks(("VS Code Copilot",), "Copilot acts on a choice's first finish reason and ignores the rest of "
                  "the choice; it hands tool calls on only at a `tool_calls` or `stop` finish, so calls first "
                  "finished with another reason (`length`, then `tool_calls`) are lost, and the reason it reports "
                  "is always the first", (COPILOT_SSE,),
                  versions="VS Code Copilot: src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
)
def finish_unchanged(ctx: Context) -> Iterator[Violation]:
    first: dict[int, tuple[int, Any]] = {}
    for p, index, choice in choices_of(ctx):
        reason = choice.get("finish_reason")
        if reason is None:
            continue
        if index not in first:
            first[index] = (p.event.index, reason)
        elif reason != first[index][1]:
            yield Violation(
                f"event {p.event.index}: choice {index}'s finish_reason {render(reason)} replaces "
                f"{render(first[index][1])} (event {first[index][0]})",
                ctx.at(p, expected=first[index][1], actual=reason),
            )


@rule(
    "CHUNK-010",
    "The role, when sent, comes on the choice's first chunk (repeats are CHUNK-006).",
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)
def role_first(ctx: Context) -> Iterator[Violation]:
    seen: set[int] = set()
    with_role: set[int] = set()
    for p, index, choice in choices_of(ctx):
        if isinstance(_delta(choice).get("role"), str) and index not in with_role:
            with_role.add(index)
            if index in seen:
                yield Violation(
                    f"event {p.event.index}: the role arrives after the choice's first chunk", ctx.at(p)
                )
        seen.add(index)


@rule(
    "CHUNK-012",
    'Each choice of a stream carries `role: "assistant"` (on its first chunk: CHUNK-010).',
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)
def role_sent(ctx: Context) -> Iterator[Violation]:
    """The spec's stream opens each choice with its role; a role of the wrong value is CHUNK-005's."""
    first: dict[int, Payload] = {}
    with_role: set[int] = set()
    for p, index, choice in choices_of(ctx):
        first.setdefault(index, p)
        if isinstance(_delta(choice).get("role"), str):
            with_role.add(index)
    for index, p in sorted(first.items()):
        if index not in with_role:
            yield Violation(f"choice {index}: no chunk carries a role (its first is event {p.event.index})", ctx.at(p))
