"""Rules for a single (non-streaming) answer body."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.judge.readers.assemble import choice_zero
from harness.judge.compare import render, shown
from harness.judge.rules.citations import AI_SDK_CHAT, SPEC_CHAT, Breaks
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


@rule(
    "BODY-001",
    "A single answer is a JSON object with a `choices` array whose choices each hold a `message` object.",
    severity="client",
    breaks=Breaks(("openai-python", "Vercel AI SDK"), "openai-python does not validate the body, so without "
                  "`choices` the application's `completion.choices[0]` raises `TypeError: 'NoneType' object is not "
                  "subscriptable`; the AI SDK's response schema rejects it (`AI_TypeValidationError`)",
                  (AI_SDK_CHAT,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); AI SDK: ai 7.0.173 with "
                  "@ai-sdk/openai-compatible 3.0.92 (current), run on the rule's cases (`AI_APICallError: Invalid JSON "
                  "response`)"),
)
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


@rule(
    "BODY-002",
    "A single answer validates against `chat_completion.schema.json`.",
    severity="spec",
    source=SPEC_CHAT,
)
def body_schema(ctx: Context) -> Iterator[Violation]:
    body = ctx.body[0]
    if isinstance(body, Mapping) and "error" not in body:
        yield from schema_violations(body, "chat_completion")


@rule(
    "BODY-003",
    'Each call in a single answer has a non-empty `id`, `type: "function"`, a `function.name` and '
    "`function.arguments` as a string.",
    severity="client",
    breaks=Breaks(("Vercel AI SDK", "openai-python"), "the AI SDK's response schema requires `function.name` and "
                  "`function.arguments` as strings (`AI_TypeValidationError` otherwise); an application on "
                  "openai-python answers each call with a `tool` message naming its `id`, which it cannot do "
                  "without one", (AI_SDK_CHAT,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current), for a call without `id`; AI SDK: "
                  "@ai-sdk/openai-compatible 3.0.92 (current), for arguments that are no string (it makes up a missing id)"),
)
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
