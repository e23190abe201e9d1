"""Chunk rules: the JSON of each streamed chunk and how chunks follow each other."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.judge.readers.assemble import Payload
from harness.judge.compare import render
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


@rule("CHUNK-001")
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


@rule("CHUNK-002")
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


@rule("CHUNK-003")
def chunk_schema(ctx: Context) -> Iterator[Violation]:
    for p, chunk in ctx.chunks:
        errors = schema_errors(chunk, "chat_completion_chunk")
        if errors:
            yield Violation(f"event {p.event.index}: " + "; ".join(errors), ctx.at(p, actual=errors))


@rule("CHUNK-004")
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


@rule("CHUNK-005")
def role_value(ctx: Context) -> Iterator[Violation]:
    for p, _, choice in choices_of(ctx):
        delta = _delta(choice)
        if "role" in delta and delta["role"] is not None and delta["role"] != "assistant":
            yield Violation(
                f"event {p.event.index}: role is {render(delta['role'])}",
                ctx.at(p, expected="assistant", actual=delta["role"]),
            )


@rule("CHUNK-006")
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


@rule("CHUNK-007", ending=True)
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


@rule("CHUNK-008")
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


@rule("CHUNK-009")
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


@rule("CHUNK-011")
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


@rule("CHUNK-010")
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


@rule("CHUNK-012")
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
