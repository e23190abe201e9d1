"""Rules of the xml-client profile: clients that read tool calls as XML in the content (Cline, Roo Code,
Kilo Code) get their calls as XML there. The rule ids keep their first prefix, VTC ("virtual tool calling"),
and the module is named for it, as every rule module is named for its prefix."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from harness.core.dialects.clients import XML_CLIENT
from harness.judge.compare import diff_calls, first_call_mismatch, render, shorten
from harness.judge.readers.xml_calls import escaped_entities, rendered, value_matches
from harness.judge.rules import locate
from harness.judge.rules.calls import finish_differs
from harness.judge.rules.chunk import choices_of
from harness.judge.rules.context import Context
from harness.judge.rules.registry import Violation, rule_group

rule = rule_group("xml-client", "VTC", profiles=(XML_CLIENT,))


@rule("VTC-001")
def no_structured_calls(ctx: Context) -> Iterator[Violation]:
    if ctx.kind == "sse":
        for p, _, choice in choices_of(ctx):
            delta = choice.get("delta")
            calls = delta.get("tool_calls") if isinstance(delta, Mapping) else None
            if calls:
                yield Violation(f"event {p.event.index} carries tool_calls {render(calls, 80)}", ctx.at(p))
                return
    elif ctx.answer.tool_calls:
        yield Violation(
            f"the message carries {len(ctx.answer.tool_calls)} structured tool call(s)",
            {"actual": [c.name for c in ctx.answer.tool_calls], **locate.call(ctx, 0)},
        )


@rule("VTC-002")
def expected_xml_calls(ctx: Context) -> Iterator[Violation]:
    lines = diff_calls(ctx.expected_calls, ctx.received_calls, value_matches)
    position = first_call_mismatch(ctx.expected_calls, ctx.received_calls, value_matches)
    incomplete = [i for i, c in enumerate(ctx.xml.calls) if not c.complete]
    if incomplete:
        lines.append("unclosed call(s): " + ", ".join(ctx.xml.calls[i].name for i in incomplete))
        position = min(position, incomplete[0])
    if lines:
        yield Violation(
            "; ".join(lines),
            {
                "expected": [
                    {"name": n, "arguments": {k: rendered(v) for k, v in a.items()}} for n, a in ctx.expected_calls
                ],
                "actual": [{"name": c.name, "arguments": dict(c.params)} for c in ctx.xml.calls],
                "excerpt": shorten(ctx.answer.content, 300),
                **locate.received_call(ctx, position),
            },
        )


def _expected_value(ctx: Context, position: int, name: str, param: str) -> Any:
    if position < len(ctx.expected_calls):
        exp_name, args = ctx.expected_calls[position]
        if exp_name == name and param in args:
            return args[param]
    return None


@rule("VTC-003")
def raw_values(ctx: Context) -> Iterator[Violation]:
    for position, call in enumerate(ctx.xml.calls):
        for param, value in call.params.items():
            entities = escaped_entities(value)
            if not entities:
                continue
            expected = _expected_value(ctx, position, call.name, param)
            meant = rendered(expected) if expected is not None else ""
            unexpected = [e for e in entities if e not in meant]
            if unexpected:
                yield Violation(
                    f"{call.name}.{param} holds entity reference(s) {', '.join(sorted(set(unexpected)))}: "
                    f"{shorten(value, 100)}",
                    {"actual": value, "expected": meant or None, **locate.received_call(ctx, position)},
                )


@rule("VTC-004", ending=True)
def finish_stop(ctx: Context) -> Iterator[Violation]:
    yield from finish_differs(ctx, ctx.expected_finish)
