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

from harness.compare import json_equal, render
from harness.dialects import DIALECTS
from harness.rules.citations import SPEC_CHAT, SPEC_MESSAGES, Breaks
from harness.rules.context import Context
from harness.rules.registry import EVERY_PROFILE, Violation, rule_group
from harness.scenario import UpstreamAssertion

rule = rule_group("upstream", "UP")


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
                if token == "-1":
                    nxt.extend(value[-1:])
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


@rule(
    "UP-001",
    "Every `expect.upstream` assertion holds on the last request the proxy sent upstream "
    "(feature-bound assertions only when the proxy claims the feature).",
    severity="client",
    breaks=Breaks(("Vercel AI SDK",), "the assertions hold the request parts a client depends on; e.g. the AI "
                  "SDK's `generateObject` forces its tool with `tool_choice`, and when that never reaches the "
                  "backend (passed on or emulated) the model may answer in text, which fails the client with "
                  "`AI_NoObjectGeneratedError: No object generated: the tool was not called.` instead of an "
                  "object"),
    stage="always",
    profiles=EVERY_PROFILE,
)
def upstream_assertions(ctx: Context) -> Iterator[Violation]:
    active = [a for a in ctx.expect.upstream if set(a.requires) <= ctx.options.features]
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


@rule(
    "UP-002",
    "A proxy claiming `loop-guard` sends exactly `expect.upstream_requests` requests to the backend: none when "
    "it answers a runaway tool loop itself, one below its threshold (a client cannot see the count, so it is the "
    "feature's promise, not a client's need).",
    severity="feature",
    features=("loop-guard",),
    stage="always",
    profiles=EVERY_PROFILE,
)
def upstream_count(ctx: Context) -> Iterator[Violation]:
    wanted = ctx.expect.upstream_requests
    got = len(ctx.exchange.upstream)
    if wanted is not None and got != wanted and ctx.exchange.transport_error is None:
        yield Violation(f"{got} request(s) reached the backend, expected {wanted}", {"expected": wanted, "actual": got})


# Sampling parameters of each API. Between the two APIs only these keep their name and meaning.
_SAMPLING: dict[str, frozenset[str]] = {
    "openai": frozenset({"temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop",
                         "presence_penalty", "frequency_penalty", "logit_bias", "n"}),
    "anthropic": frozenset({"temperature", "top_p", "top_k", "max_tokens", "stop_sequences"}),
}
_SHARED_SAMPLING = frozenset({"temperature", "top_p"})


def _upstream_dialect(path: str) -> str | None:
    """The API (of those whose sampling parameters are known) whose endpoint ``path`` is."""
    tail = path.rstrip("/")
    return next((name for name in _SAMPLING if tail.endswith(DIALECTS[name].endpoint)), None)


@rule(
    "UP-003",
    "The client's sampling parameters reach the backend as sent, and the proxy adds none the client did not "
    "send (a translating proxy is held to the parameters both APIs share: `temperature`, `top_p`).",
    severity="spec",
    source=(SPEC_CHAT, SPEC_MESSAGES),
    stage="always",
)
def sampling_unchanged(ctx: Context) -> Iterator[Violation]:
    ex = ctx.exchange
    sent = ex.request_body
    if not ex.upstream or not isinstance(sent, Mapping) or ctx.scenario.client.raw_body is not None:
        return
    last = ex.upstream[-1]
    upstream = _upstream_dialect(last.path)
    if not isinstance(last.body, Mapping) or upstream is None:
        return
    keys = _SAMPLING[ctx.dialect] if upstream == ctx.dialect else _SHARED_SAMPLING
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
