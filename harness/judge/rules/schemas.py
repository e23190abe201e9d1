"""The wire schemas (OpenAI, Anthropic and OpenAI Responses) the rules validate against, JSON Schema files beside the scenario schema."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import jsonschema

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
def validator(name: SchemaName) -> jsonschema.Draft202012Validator:
    text = resources.files("harness").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return jsonschema.Draft202012Validator(schema)


def schema_problems(instance: Any, name: SchemaName, limit: int = 3) -> list[tuple[str, str]]:
    """Up to ``limit`` problems of ``instance`` against schema ``name``: (JSON pointer, message)."""
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


def error_body_violations(ctx: Context, name: SchemaName, *, typed: bool) -> Iterator[Violation]:
    """An error before the stream, in either dialect: a non-2xx status whose JSON body validates
    against the dialect's error schema ``name``, and no error body with a 2xx status (``typed``:
    the dialect also marks an error body by ``"type": "error"``)."""
    status = ctx.exchange.status
    body, problem = ctx.body
    excerpt = ctx.exchange.raw[:200].decode("utf-8", "replace")
    if status is not None and 200 <= status < 300:
        marked = "error" in body or (typed and body.get("type") == "error") if isinstance(body, Mapping) else False
        if ctx.kind == "json" and marked:
            yield Violation(f"an error body comes with status {status}: {excerpt!r}",
                            {"actual": status, "json_path": "/error" if "error" in body else "/type"})
        return
    if problem is not None:
        yield Violation(f"status {status} with a body that is not JSON: {excerpt!r}", {"excerpt": excerpt})
        return
    found = schema_violation(body, name, f"status {status} error body: ", excerpt=excerpt)
    if found is not None:
        yield found
