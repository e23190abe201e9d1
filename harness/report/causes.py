"""Failures grouped by cause: one defect of a proxy breaks the same rule in dozens of scenarios, and a
person needs its explanation once, one scenario in full and the names of the others, not the same
transcript thirty times. The console's default view and the HTML report both read these groups.

A group is a rule and a cause (an HTTP status, an unhealthy proxy; empty when the rule says it all)
that failed items share: the rule broken by the most of them first, so that a defect breaking a
text rule in thirty scenarios, and a call rule too in two of them, is one group, not two. The
group's first scenario is a typical one (it broke the rules most of the group broke). Pure: lines
come back with a style name that the shell turns into colour, or not, as the terminal allows."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from harness.judge.rules import Rule
from harness.report.summary import FailureRecord, ItemRecord

# How many scenarios of a group, after the first, are listed one line each unless asked for all (-v).
SHOWN = 3

# The styles a line may ask for; the terminal shell maps them to pytest's markup names.
Style = str
PLAIN: Style = ""
HEADING: Style = "heading"  # a group's first line
BAD: Style = "bad"
HINT: Style = "hint"


@dataclass(frozen=True)
class Line:
    text: str
    style: Style = PLAIN


@dataclass(frozen=True)
class Cause:
    """Failed items that share their first broken rule and their cause."""

    rule: str
    cause: str
    items: tuple[ItemRecord, ...]

    @property
    def rules(self) -> dict[str, int]:
        """Every rule the group's items broke, first the group's own, and in how many items."""
        counts = Counter(r for i in self.items for r in {f.rule for f in unexpected(i)})
        return {r: counts[r] for r in dict.fromkeys([self.rule, *(f.rule for i in self.items for f in unexpected(i))])}


def unexpected(item: ItemRecord) -> list[FailureRecord]:
    """The failures of an item no known-failure entry covers."""
    return [f for f in item.failures if not f.expected]


def group_failures(items: Iterable[ItemRecord], rule_order: Sequence[str]) -> list[Cause]:
    """The failed items that broke a rule, grouped; the largest group first."""
    rank = {rule: n for n, rule in enumerate(rule_order)}
    left = [i for i in items if i.outcome == "failed" and unexpected(i)]
    causes: list[Cause] = []
    while left:
        shared = Counter((f.rule, i.cause) for i in left for f in dict((f.rule, f) for f in unexpected(i)).values())
        (rule, cause), _ = min(shared.items(), key=lambda kv: (-kv[1], rank.get(kv[0][0], len(rank)), kv[0][1]))
        members = [i for i in left if i.cause == cause and any(f.rule == rule for f in unexpected(i))]
        left = [i for i in left if i not in members]
        typical = Counter(_rule_set(i) for i in members).most_common(1)[0][0]
        members.sort(key=lambda i: _rule_set(i) != typical)  # stable: a typical one first, the order kept
        causes.append(Cause(rule, cause, tuple(members)))
    return causes


def _rule_set(item: ItemRecord) -> tuple[str, ...]:
    return tuple(sorted({f.rule for f in unexpected(item)}))


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


def rule_line(rule_id: str, rules: Mapping[str, Rule], share: str = "") -> str:
    """A rule in one line: id, in how many of the group (``share``), severity, who it breaks, what it says."""
    rule = rules.get(rule_id)
    if rule is None:
        return rule_id + share
    breaks = f", breaks {', '.join(rule.breaks.clients)}" if rule.breaks is not None else ""
    return f"{rule.id}{share} [{rule.severity}{breaks}]: {rule.statement}"


def finding(failure: FailureRecord) -> str:
    """One failure as one line: the rule, its first message line, where."""
    message = failure.message.splitlines()[0] if failure.message else ""
    where = f" at {failure.where}" if failure.where else ""
    return f"{failure.rule}{where}: {message}"


def render_causes(causes: Sequence[Cause], *, rules: Mapping[str, Rule], width: int = 100,
                  every: bool = False) -> list[Line]:
    """The console's view of the failures: per group its rules once, its first scenario's
    findings and replay command, then one line per other scenario (the first ``SHOWN``
    unless ``every``). Each line fits ``width``, but for commands, which must stay whole."""
    width = max(width, 40)
    out: list[Line] = []
    explained: set[str] = set()
    for n, cause in enumerate(causes, 1):
        count = len(cause.items)
        because = f", {cause.cause}" if cause.cause else ""
        number = f"cause {n} of {len(causes)}: " if len(causes) > 1 else ""
        out.append(Line(_fit(f"{number}{cause.rule} broken in {count} scenario(s){because}", width), HEADING))
        again = [r for r in cause.rules if r in explained]
        for rule_id, times in cause.rules.items():
            if rule_id not in explained:
                share = f" (in {times})" if times != count else ""
                out.append(Line(_fit(f"  {rule_line(rule_id, rules, share)}", width)))
                explained.add(rule_id)
        if again:
            out.append(Line(_fit(f"  also {', '.join(again)} (above)", width)))
        first, rest = cause.items[0], cause.items[1:]
        out.append(Line(_fit(f"  {first.label}:", width), BAD))
        attempt = ""
        for failure in unexpected(first):
            if failure.attempt != attempt:
                attempt = failure.attempt
                out.append(Line(_fit(f"   {attempt}:", width)))
            out.append(Line(_fit(f"    {finding(failure)}", width)))
        if first.replay:
            for command in first.replay.splitlines():
                out.extend(Line(part, HINT) for part in textwrap.wrap(
                    command, width, initial_indent="   replay: ", subsequent_indent="     ",
                    break_on_hyphens=False, break_long_words=False))
        typical = {f.rule for f in unexpected(first)}
        shown = rest if every else rest[:SHOWN]
        for item in shown:
            failures = unexpected(item)
            own = next((f for f in failures if f.rule == cause.rule), failures[0])
            message = own.message.splitlines()[0] if own.message else ""
            more = [r for r in dict.fromkeys(f.rule for f in failures) if r not in typical]
            extra = f" (also {', '.join(more)})" if more else ""
            out.append(Line(_fit(f"  {item.label}{extra}: {message}", width), BAD))
        if len(rest) > len(shown):
            out.append(Line(_fit(f"  … and {len(rest) - len(shown)} more (-v lists each)", width), HINT))
    return out


def detail_hint(causes: Sequence[Cause], width: int = 100) -> list[Line]:
    """Where the full detail is, after the groups."""
    if not causes:
        return []
    text = "more: -v (every scenario), --tb=short (each in full), --tb=long (raw answers)"
    return [Line(part, HINT) for part in textwrap.wrap(text, max(width, 40))]
