"""Rules for a single (non-streaming) answer body."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.judge.readers.assemble import choice_zero
from harness.judge.compare import render, shown
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group
from harness.judge.rules.schemas import body_object, malformed_entries, schema_violations

rule = rule_group("body", "BODY", stage="single")


def _message(ctx: Context) -> tuple[str, Mapping[str, Any]] | None:
    """The message of choice 0 of a single answer (the one a client reads), and its JSON pointer."""
    body = ctx.body[0]
    found = choice_zero(body.get("choices")) if isinstance(body, Mapping) else None
    if found is None or not isinstance(found[1].get("message"), Mapping):
        return None
    return f"/choices/{found[0]}/message", found[1]["message"]


@rule("BODY-001")
def body_shape(ctx: Context) -> Iterator[Violation]:
    body = body_object(ctx)
    if isinstance(body, Violation):
        yield body
        return
    excerpt = ctx.excerpt
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        if "error" in body:
            what = f"an error report with status 200: {excerpt!r}"
        else:
            what = f"'choices' is {render(choices, 60)}"
        yield Violation(
            f"{what}; expected a non-empty 'choices' array",
            {"actual": choices, "excerpt": excerpt, "json_path": "/choices" if "choices" in body else ""},
        )
        return
    yield from malformed_entries(choices, "choices",
                                 lambda c: isinstance(c, Mapping) and isinstance(c.get("message"), Mapping),
                                 "has no 'message' object")


@rule("BODY-002")
def body_schema(ctx: Context) -> Iterator[Violation]:
    body = ctx.body[0]
    if isinstance(body, Mapping) and "error" not in body:
        yield from schema_violations(body, "chat_completion")


@rule("BODY-003")
def body_calls(ctx: Context) -> Iterator[Violation]:
    found = _message(ctx)
    if found is None:
        return
    path, message = found
    calls = message.get("tool_calls")
    if calls is None:
        return
    if not isinstance(calls, list):
        yield Violation(
            f"message.tool_calls is {render(calls, 80)}, not an array",
            {"actual": calls, "json_path": f"{path}/tool_calls"},
        )
        return
    for i, call in enumerate(calls):
        problems: list[str] = []
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(call, Mapping):
            problems.append("not an object")
        else:
            if not isinstance(call.get("id"), str) or not call["id"]:
                problems.append(shown(call, "id"))
            if call.get("type") != "function":
                problems.append(shown(call, "type"))
            if not isinstance(fn, Mapping):
                problems.append("no 'function' object")
            else:
                if not isinstance(fn.get("name"), str) or not fn["name"]:
                    problems.append(shown(fn, "name", "function.name"))
                if not isinstance(fn.get("arguments"), str):
                    problems.append(f"function.arguments is {render(fn.get('arguments'), 60)}, not a string")
        if problems:
            yield Violation(
                f"tool_calls[{i}]: " + ", ".join(problems), {"actual": call, "json_path": f"{path}/tool_calls/{i}"}
            )
