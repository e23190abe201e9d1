"""What spans every module of rule cases, read through ``tests/rule_proofs.py``: each rule is
broken by some case and judges some correct answer, findings name their place, each client
rule cites the clients it breaks, and docs/rules.md is the registry and the proofs as they
are now. The case modules do not import the proofs, so nothing here imports in a circle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rule_proofs import families, proofs

from harness.core.exchange import Exchange
from harness.judge.readers.sse import parse_events
from harness.judge.readers.transcript import Position
from harness.judge.rules import RULES, evaluate, locate, rules_markdown
from harness.judge.rules.citations import CLIENTS, Breaks
from harness.judge.rules.context import Context, effective_options
from harness.judge.rules.registry import ENTRIES, Violation
from harness.judge.rules.report import check_location

ROOT = Path(__file__).resolve().parents[2]

# Rules on one exchange; the others judge two or all answers of an item (test_compare_answers, test_compare_item).
SINGLE_RULES = frozenset(i for i in RULES if ENTRIES[i].check is not None)


def test_every_rule_is_broken_by_some_case() -> None:
    caught = {i for _, broken, _ in families().values() for c in broken for i in c.fails}
    assert SINGLE_RULES - caught == set()


def test_every_rule_is_broken_where_a_correct_answer_passes() -> None:
    """Each rule fails some answer to a scenario whose correct answer passes: the rule
    tells the two answers apart, it does not reject the question."""
    unmatched = set(SINGLE_RULES)
    for accepted, broken, _ in families().values():
        answered = [c.scenario for c in accepted]
        for c in broken:
            if any(c.scenario == s for s in answered):
                unmatched -= c.fails
    assert unmatched == set()


def test_a_rule_that_always_fails_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rule judges at least one correct answer: with every check replaced by one
    that always fails, each rule fails some acceptable case (all of which pass with
    the real checks, see each file's test_rule_case)."""

    def always_fails(ctx: Context) -> list[Violation]:
        return [Violation("always fails")]

    for rule_id, entry in list(ENTRIES.items()):
        if entry.check is not None:
            monkeypatch.setitem(ENTRIES, rule_id, replace(entry, check=always_fails))
    caught = {
        f.rule_id
        for accepted, _, options in families().values()
        for c in accepted
        for f in evaluate(c.scenario, c.exchange, options(c))
    }
    assert SINGLE_RULES - caught == set()



# Rules whose findings have no place in the answer: the HTTP exchange, what reached the
# backend, the SDK's own reading, a pattern that matched nowhere, the survival probe.
UNPLACED = frozenset({"HTTP-001", "HTTP-002", "HTTP-003", "HTTP-004", "HTTP-005", "HTTP-006", "UP-001", "UP-002",
                      "UP-003", "UP-004", "UP-005", "UP-006", "UP-007", "UP-008", "UP-009", "SDK-001", "SDK-002", "ASDK-001", "ASDK-002", "RESP-009", "RESP-012", "TEXT-002", "FAULT-005", "FAULT-007"})


def _may_be_unplaced(exchange: Exchange, rule_id: str) -> bool:
    """Findings that may name no place: the rules above; an error status (the whole
    body is the finding)."""
    return rule_id in UNPLACED or exchange.status != 200


def test_every_finding_that_has_a_place_names_it() -> None:
    """Failure output trims the transcript around the offending event: every broken rule
    that can say where (a stream event, a byte, a member of a single body) does."""
    unplaced = [
        (c.id, f.rule_id)
        for _, broken, options in families().values()
        for c in broken
        for f in evaluate(c.scenario, c.exchange, options(c))
        if not Position.of(f.evidence).known and not _may_be_unplaced(c.exchange, f.rule_id)
    ]
    assert unplaced == []


# (case, rule, where its evidence points: a piece of the named event's data, "json:" and
# the pointer of a member of a single body, or "end" for the end of the stream)
LOCATED = [
    ("tool-009-finish-stop-with-calls", "TOOL-009", '"finish_reason": "stop"'),
    ("calls-002-calls-cut-at-length", "CALLS-002", '"finish_reason": "length"'),
    ("chunk-007-no-finish", "CHUNK-007", "end"),
    ("chunk-007-no-finish", "CALLS-003", "end"),
    ("text-003-leaked-closing-tag", "TEXT-003", '"content": "</tools>"'),
    ("text-001-different", "TEXT-001", '"content": " there"'),
    ("text-001-newline-delta-lost", "TEXT-001", '"content": "Line two:  done."'),
    ("text-001-exact-trailing-space", "TEXT-001", '"content": " world "'),
    ("tool-005-same-id-twice", "TOOL-005", '"name": "get_time"'),
    ("tool-006-unclosed-arguments", "TOOL-006", '"id": "call_1"'),
    ("tool-008-empty-arguments-single", "TOOL-008", "json:/choices/0/message/tool_calls/0"),
    ("calls-001-wrong-value", "CALLS-001", '"id": "call_1"'),
    ("calls-001-duplicated-call", "CALLS-001", '"id": "call_2"'),
    ("calls-001-call-vanished", "CALLS-001", '"finish_reason": "stop"'),
    ("body-003-arguments-object", "BODY-003", "json:/choices/0/message/tool_calls/0"),
    ("body-003-choice-zero-listed-second", "BODY-003", "json:/choices/1/message/tool_calls/0"),
    ("body-002-missing-created", "BODY-002", "json:"),
    ("body-001-no-choices", "CALLS-003", "json:/choices"),
    ("tool-008-empty-arguments-single", "CALLS-001", "json:/choices/0/message/tool_calls/0"),
    ("err-002-wrong-shape", "ERR-002", "json:"),
    ("usage-001-missing", "USAGE-001", "[DONE]"),
    ("vtc-004-finish-tool-calls", "VTC-004", '"finish_reason": "tool_calls"'),
    ("vtc-002-wrong-path", "VTC-002", "<rea"),
    ("xml-client-text-001-text-lost", "TEXT-001", '"finish_reason": "stop"'),
    ("xml-client-text-003-stray-closing-tag", "TEXT-003", '"content": " </parameter>"'),
    ("xml-client-text-003-stray-closing-tag", "TEXT-001", '"content": "I will read it.'),
    ("atool-001-shared-id", "ATOOL-001", '"type": "tool_use"'),
    ("atool-003-end-turn-after-tool-use", "ATOOL-003", '"stop_reason": "end_turn"'),
    ("abody-003-input-as-string", "ABODY-003", "json:/content/1/input"),
]


@pytest.mark.parametrize(("case_id", "rule_id", "where"), LOCATED, ids=[f"{c}-{r}" for c, r, _ in LOCATED])
def test_evidence_points_at_the_offending_place(case_id: str, rule_id: str, where: str) -> None:
    c, options = next((c, o) for _, broken, o in families().values() for c in broken if c.id == case_id)
    failure = next(f for f in evaluate(c.scenario, c.exchange, options(c)) if f.rule_id == rule_id)
    position = Position.of(failure.evidence)
    if where.startswith("json:"):
        assert position.json_path == where.removeprefix("json:")
    elif where == "end":
        assert position.byte_offset == len(c.exchange.raw)
    else:
        assert position.event_index is not None
        event = parse_events(c.exchange.raw).events[position.event_index]
        assert where in event.data and position.byte_offset == event.byte_offset


POSITION_KEYS = frozenset({"event_index", "byte_offset", "text_offset", "json_path"})


def test_locating_names_a_position_only() -> None:
    """What ``locate`` returns joins a rule's own evidence: it may add position keys
    only, never replace what the rule said (its excerpt, expected, actual)."""
    for _, broken, options in families().values():
        for c in broken:
            ctx = Context(c.scenario, c.exchange, effective_options(options(c), c.exchange))
            for offset in (0, 3, len(ctx.visible_text)):
                for where in (locate.content(ctx, offset), locate.visible(ctx, offset), locate.finish(ctx),
                              locate.call(ctx, offset), locate.received_call(ctx, offset)):
                    assert set(where) <= POSITION_KEYS, (c.id, where)



def test_every_client_rule_cites_known_clients_and_the_docs_show_it() -> None:
    table = rules_markdown(proofs())
    for rule_id, rule in RULES.items():
        if rule.severity != "client":
            assert rule.breaks is None, rule_id
            continue
        assert isinstance(rule.breaks, Breaks), f"{rule_id} is a client rule without a citation"
        assert rule.breaks.clients and set(rule.breaks.clients) <= set(CLIENTS), rule_id
        section = table.split(f"### {rule_id}\n", 1)[1].split("\n### ", 1)[0]
        assert f"- **Breaks:** {', '.join(rule.breaks.clients)}" in section
        assert rule.breaks.how.rstrip(".") in section


def test_docs_rules_md_is_generated() -> None:
    """docs/rules.md is the registry and the proofs as they are now (``python tests/rule_proofs.py``)."""
    assert (ROOT / "docs" / "rules.md").read_text("utf-8") == rules_markdown(proofs())


def test_every_rule_has_its_function_a_breaking_case_and_a_mutant() -> None:
    """One hop from a rule id to the function judging it (in the module named for its
    prefix), the cases breaking it and the mutants it catches: a rule missing any of them
    fails here."""
    found = proofs()
    for rule_id in RULES:
        path, function = check_location(rule_id)
        assert path == f"harness/judge/rules/{rule_id.split('-')[0].lower()}.py", f"{rule_id} lives in {path}, not in its prefix's module"
        assert (ROOT / path).is_file() and f"def {function.rsplit('.', 1)[-1]}(" in (ROOT / path).read_text("utf-8")
        assert found[rule_id].cases, f"{rule_id}: no unit case breaks it"
        assert found[rule_id].mutants, f"{rule_id}: no mutant proxy is caught by it"


