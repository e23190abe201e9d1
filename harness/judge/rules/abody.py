"""Rules for a single (non-streaming) Anthropic Messages answer."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from harness.judge.compare import render, shorten
from harness.judge.rules.context import Context
from harness.judge.rules.registry import ANTHROPIC, Violation, rule_group
from harness.judge.rules.schemas import body_object, malformed_entries, schema_violations

rule = rule_group("anthropic_body", "ABODY", stage="single", profiles=ANTHROPIC)


@rule("ABODY-001")
def message_shape(ctx: Context) -> Iterator[Violation]:
    body = body_object(ctx)
    if isinstance(body, Violation):
        yield body
        return
    excerpt = ctx.excerpt
    if body.get("type") == "error" or "error" in body:
        yield Violation(f"an error report with status 200: {excerpt!r}",
                        {"excerpt": excerpt, "json_path": "/error" if "error" in body else "/type"})
        return
    if body.get("type") != "message":
        yield Violation(
            f"type is {render(body.get('type'))}, expected \"message\"", {"actual": body.get("type"), "json_path": "/type"}
        )
    content = body.get("content")
    if not isinstance(content, list):
        yield Violation(
            f"content is {render(content, 60)}, expected an array of blocks", {"actual": content, "json_path": "/content"}
        )
        return
    yield from malformed_entries(content, "content", lambda b: isinstance(b, Mapping) and isinstance(b.get("type"), str),
                                 "is not a block with a type")


@rule("ABODY-002")
def message_schema(ctx: Context) -> Iterator[Violation]:
    body = ctx.body[0]
    if isinstance(body, Mapping) and body.get("type") != "error" and "error" not in body:
        yield from schema_violations(body, "anthropic_message")


@rule("ABODY-003")
def tool_input_object(ctx: Context) -> Iterator[Violation]:
    body = ctx.body[0]
    content = body.get("content") if isinstance(body, Mapping) else None
    for i, block in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(block, Mapping) or block.get("type") != "tool_use":
            continue
        value = block.get("input")
        if isinstance(value, Mapping):
            continue
        what = f"a string {shorten(value, 100)}" if isinstance(value, str) else render(value, 100)
        yield Violation(
            f"content[{i}] ({render(block.get('name'))}): input is {what}, not an object",
            {"actual": value, "json_path": f"/content/{i}/input"},
        )
