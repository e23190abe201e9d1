"""The named conformance rules: the OpenAI chat-completions dialect, the Anthropic
Messages dialect, and upstream faults and misbehaving clients in both.

``evaluate`` judges one exchange against every applicable rule; ``compare_answers``
judges a streamed and a non-streamed answer to the same scenario; ``compare_item``
judges every answer of one test item together. All are pure and
never raise for anything a proxy sent: each broken rule becomes one
``ConformanceFailure``. An exchange of the anthropic profile is judged by the
Anthropic rules and the dialect-neutral ones, never by the chat-completion ones.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from harness.core.errors import ConformanceFailure
from harness.core.exchange import Exchange
from harness.core.scenario.model import Scenario

# Importing a group module registers its rules; the table order comes from report.py.
from harness.judge.rules import (
    abody,
    aerr,
    aev,
    asdk,
    atool,
    body,
    calls,
    chunk,
    eq,
    err,
    fault,
    http,
    iso,
    resp,
    sdk,
    sse,
    text,
    tool,
    up,
    usage,
    vtc,
)
from harness.judge.rules.context import Context, effective_options
from harness.judge.rules.registry import ENTRIES, Entry, Rule, Violation
from harness.judge.rules.report import ordered_ids, rules_markdown
from harness.judge.rules.terms import Options

__all__ = ["Options", "RULES", "Rule", "compare_answers", "compare_item", "compare_round", "evaluate", "iso",
           "registry", "rules_markdown"]

RULES: Mapping[str, Rule] = MappingProxyType({rule_id: ENTRIES[rule_id].rule for rule_id in ordered_ids()})

_MORE = 5  # further violations listed in the evidence of one failure


def _failure(rule: Rule, violations: list[Violation]) -> ConformanceFailure:
    first = violations[0]
    message = first.message
    evidence: dict[str, Any] = dict(first.evidence)
    if len(violations) > 1:
        message += f" (and {len(violations) - 1} more)"
        evidence["count"] = len(violations)
        evidence["more"] = [v.message for v in violations[1 : 1 + _MORE]]
    return ConformanceFailure(rule.id, message, evidence)


def _run(entry: Entry, produce: Iterable[Violation]) -> ConformanceFailure | None:
    try:
        violations = list(produce)
    except Exception as exc:  # a rule that cannot judge says so instead of crashing the run
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        violations = [Violation(f"the rule could not be evaluated ({detail})", {"internal_error": detail})]
    return _failure(entry.rule, violations) if violations else None


def _judge(options: Options, start: Callable[[Entry], Iterable[Violation] | None]) -> list[ConformanceFailure]:
    """Every rule ``options`` ask for, in table order, one failure per rule broken;
    ``start`` runs an entry's check, or gives None where the entry has no say."""
    failures: list[ConformanceFailure] = []
    for rule_id in ordered_ids():
        entry = ENTRIES[rule_id]
        if not entry.enabled(options):
            continue
        produce = start(entry)
        if produce is None:
            continue
        failure = _run(entry, produce)
        if failure is not None:
            failures.append(failure)
    return failures


def evaluate(scenario: Scenario, exchange: Exchange, options: Options) -> list[ConformanceFailure]:
    """Every applicable rule broken by ``exchange``, one failure per rule, in table order."""
    options = effective_options(options, exchange)
    ctx = Context(scenario, exchange, options)

    def start(entry: Entry) -> Iterable[Violation] | None:
        if entry.check is None or not ctx.in_stage(entry.stage) or (entry.ending and ctx.error_accepted):
            return None
        return entry.check(ctx)

    return _judge(options, start)


def compare_answers(
    scenario: Scenario, streamed: Exchange, plain: Exchange, options: Options
) -> list[ConformanceFailure]:
    """The stream-vs-non-stream rules. Runs only when both answers arrived with status
    200 (otherwise each exchange's own failures say why) and the scenario allows it."""
    if not scenario.stream_equivalence:
        return []
    options = effective_options(options, streamed)
    a, b = Context(scenario, streamed, options), Context(scenario, plain, options)
    if not (a.in_stage("answer") and b.in_stage("answer")):
        return []
    return _judge(options, lambda entry: None if entry.pair_check is None else entry.pair_check(a, b))


def compare_item(
    exchanges: Sequence[tuple[str, Scenario, Exchange]], options: Options
) -> list[ConformanceFailure]:
    """The rules on all the answers of one test item together: (label, scenario as
    played, exchange) for each. Answers that did not arrive with status 200 take no part."""
    if not exchanges:
        return []
    options = effective_options(options, exchanges[0][2])
    answers = [(label, ctx) for label, scenario, exchange in exchanges
               if (ctx := Context(scenario, exchange, options)).in_stage("answer")]
    if len(answers) < 2:
        return []
    return _judge(options, lambda entry: None if entry.item_check is None else entry.item_check(answers))


def compare_round(round_: iso.Round, options: Options) -> list[ConformanceFailure]:
    """The isolation rules on a round of exchanges of one scenario (``harness.run.isolation``)."""
    if not round_.alone:
        return []
    return _judge(options, lambda entry: None if entry.round_check is None else entry.round_check(round_))
