"""The wire schemas (OpenAI, Anthropic and OpenAI Responses) the rules validate against, JSON Schema files beside the scenario schema."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import jsonschema
import jsonschema_rs

from harness.judge.compare import render
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation
from harness.judge.readers.transcript import json_pointer

SchemaName = Literal[
    "chat_completion_chunk",
    "chat_completion",
    "openai_error",
    "client_error",
    "anthropic_stream_event",
    "anthropic_message",
    "anthropic_error",
    "responses_stream_event",
]


@cache
def _schema(name: SchemaName) -> dict[str, Any]:
    text = resources.files("harness").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def validator(name: SchemaName) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_schema(name))


@cache
def _compiled(name: SchemaName) -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(_schema(name))


def _surely_valid(instance: Any, name: SchemaName) -> bool:
    """Whether the compiled validator passes ``instance``: a few microseconds where jsonschema's own
    search for problems takes a few hundred, and a stream is checked chunk by chunk. A value it
    cannot take (an integer past 64 bits, NaN) is left to jsonschema."""
    try:
        return bool(_compiled(name).is_valid(instance))
    except (ValueError, OverflowError):
        return False


def schema_problems(instance: Any, name: SchemaName, limit: int = 3) -> list[tuple[str, str]]:
    """Up to ``limit`` problems of ``instance`` against schema ``name``: (JSON pointer, message)."""
    if _surely_valid(instance, name):
        return []
    out: list[tuple[str, str]] = []
    for error in sorted(validator(name).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        where = json_pointer(error.absolute_path)
        message = error.message if len(error.message) <= 160 else error.message[:159] + "…"
        out.append((where, message))
        if len(out) >= limit:
            break
    return out


def schema_errors(instance: Any, name: SchemaName, limit: int = 3) -> list[str]:
    """Up to ``limit`` readable problems of ``instance`` against schema ``name``."""
    return _described(schema_problems(instance, name, limit))


def _described(problems: list[tuple[str, str]]) -> list[str]:
    """Schema problems as readable lines (the root written ``/``)."""
    return [f"{where or '/'}: {message}" for where, message in problems]


def schema_violation(instance: Any, name: SchemaName, lead: str = "", **evidence: Any) -> Violation | None:
    """The problems of a whole body against schema ``name`` as one finding, placed at
    the first problem's JSON pointer; None when it validates."""
    problems = schema_problems(instance, name)
    if not problems:
        return None
    errors = _described(problems)
    return Violation(lead + "; ".join(errors), {"actual": errors, **evidence, "json_path": problems[0][0]})


def schema_violations(instance: Any, name: SchemaName, lead: str = "", **evidence: Any) -> Iterator[Violation]:
    """``schema_violation`` as a rule yields it: nothing when the body validates."""
    found = schema_violation(instance, name, lead, **evidence)
    if found is not None:
        yield found


def error_body(ctx: Context, status: int | None, lead: str, name: SchemaName) -> Iterator[Violation]:
    """An error answer's body against schema ``name`` (``lead`` opens the finding), or that it is no JSON."""
    body, problem = ctx.body
    if problem is not None:
        yield Violation(f"status {status} with a body that is not JSON: {ctx.excerpt!r}", {"excerpt": ctx.excerpt})
        return
    yield from schema_violations(body, name, lead, excerpt=ctx.excerpt)


def error_body_violations(ctx: Context, name: SchemaName, *, typed: bool) -> Iterator[Violation]:
    """An error before the stream, in either dialect: a non-2xx status whose JSON body validates
    against the dialect's error schema ``name``, and no error body with a 2xx status (``typed``:
    the dialect also marks an error body by ``"type": "error"``)."""
    status = ctx.exchange.status
    body = ctx.body[0]
    if status is not None and 200 <= status < 300:
        marked = "error" in body or (typed and body.get("type") == "error") if isinstance(body, Mapping) else False
        if ctx.kind == "json" and marked:
            yield Violation(f"an error body comes with status {status}: {ctx.excerpt!r}",
                            {"actual": status, "json_path": "/error" if "error" in body else "/type"})
        return
    yield from error_body(ctx, status, f"status {status} error body: ", name)


def body_object(ctx: Context) -> Mapping[str, Any] | Violation:
    """A single answer's body when it is a JSON object, else the violation that quotes its start."""
    body, error = ctx.body
    if error is not None or not isinstance(body, Mapping):
        return Violation(f"the body is not a JSON object: {ctx.excerpt!r}", {"excerpt": ctx.excerpt})
    return body


def malformed_entries(entries: Sequence[Any], name: str, fits: Callable[[Any], bool], what: str) -> Iterator[Violation]:
    """A violation for each entry of the array ``name`` that does not fit: ``name[i] {what}: <entry>``."""
    for i, entry in enumerate(entries):
        if not fits(entry):
            yield Violation(f"{name}[{i}] {what}: {render(entry, 100)}", {"actual": entry, "json_path": f"/{name}/{i}"})
