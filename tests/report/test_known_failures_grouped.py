"""The known-failures file a person can keep: entries written per cause and family (a glob where
the cause broke several scenarios of a family), rules as a list, and globs that go stale only when
none of their scenarios fails any more."""

from __future__ import annotations

import pytest
import yaml

from harness.judge.rules import RULES
from harness.report.causes import group_failures
from harness.report.known_failures import (
    entries_from_causes,
    judge,
    parse_known_failures,
    render_known_failures,
    stale_globs,
)
from harness.report.summary import FailureRecord, ItemRecord


def _item(scenario: str, family: str, *rules: str) -> ItemRecord:
    failures = tuple(FailureRecord(r, RULES[r].group, RULES[r].severity, "streaming", f"{r}: what went wrong", False)
                     for r in rules)
    return ItemRecord(scenario, family, "openai", "failed", failures=failures)


def test_one_cause_across_families_is_one_entry_per_family_with_one_reason() -> None:
    items = ([_item(f"hermes-{n}", "hermes", "TEXT-001", "TEXT-003") for n in range(20)]
             + [_item("hermes-two", "hermes", "CALLS-001", "TEXT-001")]
             + [_item("plain-one", "plain", "TEXT-001", "TEXT-003")])
    played = {"hermes": [i.scenario for i in items[:21]] + ["hermes-passes"], "plain": ["plain-one", "plain-ok"]}
    entries = entries_from_causes(group_failures(items, list(RULES)), played, None)
    assert [(e.scenario, e.rules) for e in entries] == [
        ("hermes-*", ("TEXT-001", "TEXT-003", "CALLS-001")),
        ("plain-one", ("TEXT-001", "TEXT-003")),  # one scenario of a family that passes others: named
    ]
    assert {e.reason for e in entries} == {"TEXT-001: TEXT-001: what went wrong"}
    written = yaml.safe_load(render_known_failures(entries, name="k.yaml", origin="test"))
    assert written[0] == {"scenario": "hermes-*", "rule": ["TEXT-001", "TEXT-003", "CALLS-001"],
                          "reason": "TEXT-001: TEXT-001: what went wrong"}
    again = parse_known_failures(written, known_rules=set(RULES))
    assert again.entries[0].rules == ("TEXT-001", "TEXT-003", "CALLS-001") and again.entries[1].rules == (
        "TEXT-001", "TEXT-003")


def test_a_kept_reason_survives_a_rewrite() -> None:
    known = parse_known_failures([{"scenario": "hermes-*", "rule": "TEXT-001", "reason": "Hermes not rescued yet"}])
    items = [_item("hermes-a", "hermes", "TEXT-001"), _item("hermes-b", "hermes", "TEXT-001")]
    entries = entries_from_causes(group_failures(items, list(RULES)), {"hermes": ["hermes-a", "hermes-b"]}, known)
    assert [(e.scenario, e.reason) for e in entries] == [("hermes-*", "Hermes not rescued yet")]


KNOWN = parse_known_failures([
    {"scenario": "hermes-*", "rule": ["TEXT-001", "TEXT-003"], "reason": "Hermes not rescued"},
    {"scenario": "plain-one", "rule": ["SSE-004"], "reason": "no [DONE]"},
], known_rules=set(RULES))

JUDGE_CASES = [
    # scenario, failed rules -> outcome, unexpected, stale entries
    ("hermes-a", ["TEXT-001", "TEXT-003"], "xfailed", [], 0),
    ("hermes-a", ["TEXT-001", "CALLS-001"], "failed", ["CALLS-001"], 0),
    ("hermes-b", [], "passed", [], 0),  # a glob's scenario that passes: not stale by itself
    ("plain-one", [], "failed", [], 1),  # a named scenario that passes: stale at once
]


@pytest.mark.parametrize(("scenario", "failed", "outcome", "unexpected", "stale"), JUDGE_CASES)
def test_a_rule_list_covers_each_of_its_rules(scenario: str, failed: list[str], outcome: str,
                                              unexpected: list[str], stale: int) -> None:
    judgement = judge(scenario, failed, KNOWN)
    assert (judgement.outcome, list(judgement.unexpected), len(judgement.stale)) == (outcome, unexpected, stale)


def test_a_glob_is_stale_when_none_of_its_scenarios_fails() -> None:
    assert [e.number for e in stale_globs(KNOWN, used=(), played=["hermes-a", "plain-one"])] == [1]
    assert stale_globs(KNOWN, used=(1,), played=["hermes-a"]) == []
    assert stale_globs(KNOWN, used=(), played=["plain-one"]) == []  # the run played none of its scenarios


def test_a_rule_list_is_checked_like_a_rule() -> None:
    with pytest.raises(Exception, match=r"unknown rule 'NOPE-001'"):
        parse_known_failures([{"scenario": "x", "rule": ["TEXT-001", "NOPE-001"], "reason": "r"}],
                             known_rules=set(RULES))
    with pytest.raises(Exception, match=r"'rule' must be a rule id or a list of them"):
        parse_known_failures([{"scenario": "x", "rule": [], "reason": "r"}], known_rules=set(RULES))
