"""Chat-completion answers that break the rules on what reached the backend (UP), case by case."""

from __future__ import annotations

import pytest
from support.chat_rules import (
    Case,
    GOOD_UPSTREAM,
    Options,
    S_LOOP,
    S_SAMPLING,
    S_UPSTREAM,
    TEXT_STREAM,
    UP_STREAMING,
    case,
    evaluate,
    exchange,
    failure_text,
    judge_case,
    scenario,
    upstream_request,
)

from harness.judge.rules.up import resolve

BROKEN: list[Case] = [
    # upstream
    case(
        "up-001-assertions-fail",
        S_UPSTREAM,
        TEXT_STREAM,
        {"UP-001", "UP-004"},  # the tools dropped upstream break UP-004 too
        upstream=(upstream_request({**GOOD_UPSTREAM, "model": "other", "tools": []}),),
    ),
    case(
        "up-009-feature-bound",
        S_UPSTREAM,
        TEXT_STREAM,
        {"UP-009"},
        features=("force-non-stream",),
        upstream=(upstream_request(UP_STREAMING),),
    ),
    case("up-001-nothing-reached-backend", S_UPSTREAM, TEXT_STREAM, {"UP-001"}),
    case("up-003-sampling-rewritten", S_SAMPLING, TEXT_STREAM, {"UP-003"},
         upstream=(upstream_request({**S_SAMPLING.client.request, "temperature": 1.0, "top_p": 1}),)),
    case("up-002-loop-guard-called-upstream", S_LOOP, TEXT_STREAM, {"UP-002"}, upstream=(upstream_request(dict(GOOD_UPSTREAM)),),
         features=("loop-guard",)),
]



@pytest.mark.parametrize("c", BROKEN, ids=[c.id for c in BROKEN])
def test_rule_case(c: Case) -> None:
    judge_case(c)


def test_feature_bound_assertion_needs_the_feature() -> None:
    c = next(c for c in BROKEN if c.id == "up-009-feature-bound")
    assert evaluate(c.scenario, c.exchange, Options()) == []
    failures = evaluate(c.scenario, c.exchange, Options(features=frozenset({"force-non-stream"})))
    assert [f.rule_id for f in failures] == ["UP-009"]
    assert "/stream_options absent" in failures[0].message and "/stream equals false" in failures[0].evidence["more"][0]


def test_failure_messages_are_readable() -> None:
    c = next(c for c in BROKEN if c.id == "up-001-assertions-fail")
    assert '/model matches "^m$": found "other"' in failure_text(c)


@pytest.mark.parametrize(("pointer", "found"), [
    ("/messages/-1/role", (True, "tool")),
    ("/messages/-3/role", (True, "user")),
    ("/messages/-4/role", (False, None)),  # before the first
    ("/messages/-0/role", (False, None)),
    ("/messages/*/role", (True, ["user", "assistant", "tool"])),
])
def test_an_index_counts_from_the_end_when_negative(pointer: str, found: tuple[bool, object]) -> None:
    """A real client puts messages of its own first: a case addresses its own ones from the end."""
    body = {"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}]}
    assert resolve(body, pointer) == found
