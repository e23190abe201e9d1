"""Upstream rules: what the proxy sent to the backend, as the scenario demands.

Pointers are JSON pointers with two extensions: ``*`` matches every item or value at
its level (the result is the list of matches) and ``-1`` is the last item. Text checks
read message content however a correct proxy may write it: a string, or a list of
text parts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from harness.core.dialects import WireDialect, posted_to
from harness.core.dialects.request import mapping
from harness.core.scenario.model import FEATURES, UpstreamAssertion
from harness.judge.compare import json_equal, render
from harness.judge.rules import carried
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, OPENAI_PROFILES, Violation, rule_group

rule = rule_group("upstream", "UP", stage="always", profiles=EVERY_PROFILE)


def _tokens(pointer: str) -> list[str]:
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


def resolve(document: Any, pointer: str) -> tuple[bool, Any]:
    """(found, value). With a ``*`` the value is the list of matches and found means
    at least one match."""
    current: list[Any] = [document]
    wildcard = False
    for token in _tokens(pointer):
        nxt: list[Any] = []
        for value in current:
            if token == "*":
                wildcard = True
                if isinstance(value, list):
                    nxt.extend(value)
                elif isinstance(value, Mapping):
                    nxt.extend(value.values())
            elif isinstance(value, Mapping):
                if token in value:
                    nxt.append(value[token])
            elif isinstance(value, list):
                if token.startswith("-") and token[1:].isdigit() and 0 < int(token[1:]) <= len(value):
                    nxt.append(value[int(token)])  # counted from the end: -1 the last, -2 the one before
                elif token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < len(value):
                    nxt.append(value[int(token)])
        current = nxt
    if wildcard:
        return bool(current), current
    return (True, current[0]) if current else (False, None)


def _part_text(part: Any) -> str | None:
    """The text of one content part: a text part's ``text``, a tool result's content."""
    if not isinstance(part, Mapping):
        return None
    text = part.get("text")
    if isinstance(text, str):
        return text
    return _content_text(part.get("content")) if part.get("type") == "tool_result" else None


def _content_text(value: Any) -> str | None:
    """The text a message content carries, however it is written: a string, or a list of
    parts (``[{"type": "text", "text": ...}, ...]``, valid in both dialects) read as their
    texts joined. None for anything else, so other lists keep their own meaning."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(p, Mapping) and "type" in p for p in value):
        return "\n".join(t for t in map(_part_text, value) if t is not None)
    return None


def _text_contains(value: Any, item: Any) -> bool:
    text = _content_text(value)
    return isinstance(item, str) and text is not None and item in text


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return _text_contains(container, item)
    if isinstance(container, list):
        return _text_contains(container, item) or any(
            json_equal(el, item) or _text_contains(el, item) for el in container
        )
    if isinstance(container, Mapping):
        return isinstance(item, str) and item in container
    return False


def _matches(value: Any, pattern: str) -> bool:
    texts = [_content_text(value)]
    if texts[0] is None and isinstance(value, list):
        texts = [_content_text(el) for el in value]
    return any(text is not None and re.search(pattern, text) is not None for text in texts)


def check_assertion(a: UpstreamAssertion, upstream: Any, request: Any) -> str | None:
    """Why the assertion fails on ``upstream`` (the body sent upstream), or None."""
    found, value = resolve(upstream, a.path)
    seen = render(value, 160) if found else "nothing"
    if a.op == "absent":
        ok = not found
    elif a.op == "present":
        ok = found
    elif a.op == "equals":
        ok = found and json_equal(value, a.value)
    elif a.op == "equals_request":
        req_found, req_value = resolve(request, a.path)
        ok = found == req_found and (not found or json_equal(value, req_value))
        if not ok:
            wanted = render(req_value, 160) if req_found else "nothing (absent in the request)"
            return f"{a.path} equals_request: the client sent {wanted}, upstream got {seen}"
    elif a.op == "contains":
        ok = found and _contains(value, a.value)
    elif a.op == "not_contains":
        ok = not (found and _contains(value, a.value))
    elif a.op == "matches":
        ok = found and _matches(value, str(a.value))
    else:
        return f"{a.path}: unknown check {a.op!r}"
    if ok:
        return None
    shown = "" if a.op in ("absent", "present") else f" {render(a.value, 120)}"
    return f"{a.path} {a.op}{shown}: found {seen}"


@rule("UP-001")
def upstream_assertions(ctx: Context) -> Iterator[Violation]:
    yield from _assertions(ctx, [a for a in ctx.expect.upstream if not a.requires])


@rule("UP-009", features=FEATURES, any_feature=True)
def feature_upstream_assertions(ctx: Context) -> Iterator[Violation]:
    claimed = ctx.options.features
    yield from _assertions(ctx, [a for a in ctx.expect.upstream if a.requires and set(a.requires) <= claimed])


def _assertions(ctx: Context, active: list[UpstreamAssertion]) -> Iterator[Violation]:
    """The assertions on the last request sent upstream: the one the backend answered the client with."""
    if not active:
        return
    ex = ctx.exchange
    if not ex.upstream:
        if ex.transport_error is None:
            yield Violation(
                f"no request reached the backend, so {len(active)} upstream assertion(s) cannot hold",
                {"expected": [a.path for a in active]},
            )
        return
    last = ex.upstream[-1]
    if last.body is None:
        excerpt = (last.raw_body or "")[:200]
        yield Violation(f"the body sent upstream is not JSON: {excerpt!r}", {"excerpt": excerpt})
        return
    for a in active:
        problem = check_assertion(a, last.body, ex.request_body)
        if problem is not None:
            why = f" ({a.why})" if a.why else ""
            yield Violation(
                problem + why,
                {"path": a.path, "check": a.op, "expected": a.value, "actual": resolve(last.body, a.path)[1]},
            )


@rule("UP-002", features=("loop-guard",))
def upstream_count(ctx: Context) -> Iterator[Violation]:
    wanted = ctx.expect.upstream_requests
    got = sum(not (r.answer is not None and r.answer.status == 400) for r in ctx.exchange.upstream)
    if wanted is not None and got != wanted and ctx.exchange.transport_error is None:
        yield Violation(f"{got} request(s) reached the backend, expected {wanted}", {"expected": wanted, "actual": got})


# Between two APIs only these sampling parameters keep their name and meaning (each API's own
# are its dialect's ``sampling``).
_SHARED_SAMPLING = frozenset({"temperature", "top_p"})


def _upstream_dialect(path: str) -> WireDialect | None:
    """The API (of those whose sampling parameters are known) whose endpoint ``path`` is."""
    posted = posted_to(path)
    return posted if posted is not None and posted.sampling is not None else None


@rule("UP-003", profiles=OPENAI_PROFILES)
def sampling_unchanged(ctx: Context) -> Iterator[Violation]:
    ex = ctx.exchange
    sent = ex.request_body
    if not ex.upstream or not isinstance(sent, Mapping) or ctx.scenario.client.raw_body is not None:
        return
    last = ex.upstream[-1]
    upstream = _upstream_dialect(last.path)
    if not isinstance(last.body, Mapping) or upstream is None:
        return
    keys = upstream.sampling if upstream is ctx.dialect and upstream.sampling is not None else _SHARED_SAMPLING
    for key in sorted(keys):
        if key in sent and key not in last.body:
            yield Violation(f"the client sent {key}={render(sent[key])}; the request upstream has none",
                            {"path": f"/{key}", "expected": sent[key], "actual": None})
        elif key in sent and not json_equal(sent[key], last.body[key]):
            yield Violation(f"the client sent {key}={render(sent[key])}; upstream it is {render(last.body[key])}",
                            {"path": f"/{key}", "expected": sent[key], "actual": last.body[key]})
        elif key not in sent and key in last.body:
            yield Violation(f"the proxy added {key}={render(last.body[key])}, which the client did not send",
                            {"path": f"/{key}", "expected": None, "actual": last.body[key]})


# --------------------------------------------------------------------------- what a translation keeps
# Judged through the neutral readings of both requests (``harness.judge.rules.carried``), in every
# pair of dialects: a proxy relaying the client's request unchanged passes them all.


@rule("UP-004")
def tools_offered(ctx: Context) -> Iterator[Violation]:
    read = carried.readings(ctx)
    if read is None or not read.client.tools:
        return
    offered = carried.first_by_name(read.upstream.tools)
    choice = read.client.tool_choice
    if choice.intent == "none" and all(not mapping(t.parameters).get("properties") for t in offered.values()):
        return  # nothing the model could fill in is offered
    for tool in read.client.tools:
        if choice.intent == "named" and tool.name != choice.name:
            continue  # only the named tool can be called: the others may be withheld
        got = offered.get(tool.name)
        if got is None:
            yield Violation(f"the client's tool {tool.name} is not offered upstream ({read.pair}); upstream offers "
                            f"{', '.join(offered) or 'no tool'}", {"tool": tool.name, "offered": list(offered)})
            continue
        differences = carried.schema_differences(tool, got)
        if differences:
            yield Violation(f"the tool {tool.name} reaches the backend with other parameters ({read.pair}): "
                            + "; ".join(differences),
                            {"tool": tool.name, "expected": tool.parameters, "actual": got.parameters})


@rule("UP-005")
def results_linked(ctx: Context) -> Iterator[Violation]:
    read = carried.readings(ctx)
    if read is None or ctx.options.profile.reads_xml:
        return
    answered = list(carried.answered_calls(read.client))
    upstream_calls = {call.id: call for call in reversed(read.upstream.calls) if call.id is not None}
    found = carried.find_in_order([r for r, _ in answered], read.upstream.results,
                                  lambda want, got: carried.carries(got, want))
    for (result, call), (_, got) in zip(answered, found):
        said = carried.call_text(call)
        about = {"call_id": result.call_id, "call": said, "text": render(result.text, 120)}
        if got is None:
            yield Violation(f"the result of {said} (text {render(result.text, 80)}) does not reach the backend "
                            f"({read.pair})", about)
            continue
        linked = upstream_calls.get(got.call_id) if got.call_id is not None else None
        if linked is None:
            yield Violation(f"the result of {said} reaches the backend answering the id "
                            f"{render(got.call_id)}, which no call of the upstream conversation has ({read.pair})",
                            {**about, "upstream_call_id": got.call_id})
        elif not carried.same_call(call, linked):
            other = carried.call_text(linked)
            yield Violation(f"the result of {said} reaches the backend answering another call, {other} "
                            f"({read.pair})", {**about, "upstream_call": other})


@rule("UP-006")
def calls_carried(ctx: Context) -> Iterator[Violation]:
    read = carried.readings(ctx)
    if read is None or ctx.options.profile.reads_xml:
        return
    upstream = read.upstream.calls
    for call, got in carried.find_in_order(read.client.calls, upstream, carried.same_call):
        if got is not None:
            continue
        said = carried.call_text(call)
        yield Violation(f"the assistant's call {said} does not reach the backend ({read.pair})"
                        f"{carried.namesakes(call, upstream)}",
                        {"call": said, "upstream_calls": [carried.call_text(c) for c in upstream]})


@rule("UP-007")
def tool_choice_kept(ctx: Context) -> Iterator[Violation]:
    read = carried.readings(ctx)
    if read is None or not read.client.tools:
        return
    want, got = read.client.tool_choice, read.upstream.tool_choice
    if want.intent == "other" or got.intent == "other" or carried.same_intent(want, got):
        return
    if want.intent == "none" and not read.upstream.tools:
        return
    emulated = got.intent == "absent" and want.intent in ("required", "named", "none")
    if emulated and "tool-choice" in ctx.options.features:
        return
    hint = " (a proxy that emulates tool_choice claims the tool-choice feature)" if emulated else ""
    asked, sent = carried.intent_text(want), carried.intent_text(got)
    yield Violation(f"the client asked tool_choice {asked}; upstream it is {sent} ({read.pair}){hint}",
                    {"expected": asked, "actual": sent})


@rule("UP-008")
def system_kept(ctx: Context) -> Iterator[Violation]:
    read = carried.readings(ctx)
    if read is None or not read.client.system:
        return
    # An API without a system role (Kiro) can only carry it in the first user turn.
    moved = "system-to-user" in ctx.options.features or not read.upstream_dialect.system_role
    places = carried.system_places(read.upstream, moved=moved)
    if not any(carried.in_order(read.client.system, place) for place in places):
        yield Violation(f"the client's system text {render(chr(10).join(read.client.system), 120)} does not reach the "
                        f"backend as system text ({read.pair})",
                        {"expected": list(read.client.system), "actual": list(read.upstream.system)})
