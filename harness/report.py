"""What users read: one item's failure explained, and the session's score card.

Pure text and data: the plugin and the CLI hand in what happened and print or write
what comes back. Item results travel between pytest-xdist workers and the
controller as plain JSON-able mappings (``item_record``), so the summary is built
from the same data however the run was split.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.anthropic_events import answer_from_message, assemble_anthropic_stream, read_events
from harness.assemble import Answer, answer_from_exchange, parse_body, response_kind
from harness.compare import fold_ws
from harness.exchange import Exchange
from harness.rechunk import describe_split
from harness.rules import RULES, Rule
from harness.runner import Attempt, ScenarioRun
from harness.scenario import Scenario
from harness.sse import parse_events
from harness.transcript import Position, clip, transcript
from harness.xml_calls import parse_xml_calls, tool_vocabulary


def rules_by_id() -> dict[str, Rule]:
    return dict(RULES)


def rule_groups() -> list[str]:
    """Every rule group, in the order the rules are declared."""
    return list(dict.fromkeys(rule.group for rule in RULES.values()))


# --------------------------------------------------------------------------- one failing item


def _pretty_arguments(arguments: Any) -> list[str]:
    """Arguments as indented JSON lines; raw text when they are not JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return [f"(not JSON) {clip(repr(arguments))}"]
    return json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _call_lines(calls: Iterable[tuple[str, Any]]) -> list[str]:
    lines: list[str] = []
    for i, (name, arguments) in enumerate(calls, 1):
        lines.append(f"#{i} {name}")
        lines.extend("   " + line for line in _pretty_arguments(arguments))
    return lines or ["(no tool calls)"]


def _received_calls(scenario: Scenario, exchange: Exchange, answer: Answer) -> tuple[list[tuple[str, Any]], str]:
    """The calls a client of this profile reads, and the content left around them."""
    if exchange.profile == "vtc":
        parsed = parse_xml_calls(answer.content, tool_vocabulary(exchange.request_body))
        return [(c.name, dict(c.params)) for c in parsed.calls], parsed.outside
    return [(c.name, c.arguments) for c in answer.tool_calls], answer.content


def read_answer(exchange: Exchange) -> Answer:
    """What the client of this exchange's dialect reads from it."""
    if exchange.profile != "anthropic":
        return answer_from_exchange(exchange)
    if response_kind(exchange) == "sse":
        return assemble_anthropic_stream(read_events(parse_events(exchange.raw).events))
    return answer_from_message(parse_body(exchange.raw)[0])


def answer_diff(scenario: Scenario, exchange: Exchange) -> list[str]:
    """Expected vs received answer, only the parts that differ; empty when they agree."""
    try:
        answer = read_answer(exchange)
    except Exception as exc:  # noqa: BLE001 - a display aid must never hide the failure itself
        return [f"(the answer could not be read: {exc})"]
    calls, content = _received_calls(scenario, exchange, answer)
    expect = scenario.expect
    out: list[str] = []
    expected_lines = _call_lines((c.name, c.arguments) for c in expect.tool_calls)
    received_lines = _call_lines(calls)
    if expected_lines != received_lines:
        via = " (read as XML from the content, vtc profile)" if exchange.profile == "vtc" else ""
        out.append(f"tool calls{via} (- expected, + received):")
        diff = difflib.unified_diff(expected_lines, received_lines, lineterm="", n=len(expected_lines) + len(received_lines))
        out.extend("  " + line[0] + " " + line[1:] for line in list(diff)[3:])
    if expect.content is not None:
        wanted = expect.content if expect.content_exact else fold_ws(expect.content)
        got = content if expect.content_exact else fold_ws(content)
        if wanted != got:
            out.append("content" + (" (byte for byte)" if expect.content_exact else " (white space folded)") + ":")
            out.append(f"  - expected {clip(repr(wanted), 300)}")
            out.append(f"  + received {clip(repr(got), 300)}")
    elif expect.content_regex is not None:
        out.append(f"content must match /{expect.content_regex}/; received {clip(repr(content), 300)}")
    if expect.finish_reason is not None and answer.finish_reason != expect.finish_reason:
        label = "stop_reason" if exchange.profile == "anthropic" else "finish_reason"
        out.append(f"{label}: expected {expect.finish_reason!r}, received {answer.finish_reason!r}")
    if answer.error is not None:
        out.append(f"the proxy reported an error: {clip(json.dumps(answer.error, ensure_ascii=False), 300)}")
    return out


def evidence_lines(evidence: Mapping[str, Any]) -> list[str]:
    out = []
    for key in ("expected", "actual"):
        if key in evidence:
            value = evidence[key]
            plain = isinstance(value, str) and "\n" not in value and value.strip() == value and value
            text = value if plain else json.dumps(value, ensure_ascii=False, default=repr)
            out.append(f"{key}: {clip(text, 300)}")
    more = evidence.get("more")
    if isinstance(more, list) and more:
        out.append("also:")
        out.extend(f"  - {clip(str(m), 200)}" for m in more)
    return out


def rule_heading(rule_id: str, rules: Mapping[str, Rule]) -> str:
    rule = rules.get(rule_id)
    if rule is None:
        return f"rule {rule_id}"
    return f"rule {rule.id} [{rule.severity}, {rule.group}]: {rule.statement}"


def render_failures(
    run: ScenarioRun,
    *,
    reproduce: Callable[[Attempt], str],
    known: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    full: bool = True,
) -> str:
    """Every failure of one item, grouped by exchange, with a command to replay each.

    ``known`` maps rule ids listed in the known-failures file to their reason. Without
    ``full``, each finding says where in the answer it is instead of showing the raw
    answer around it (``--tb=long`` shows it)."""
    rules = rules_by_id()
    known = known or {}
    scenario = run.scenario
    out = [
        f"rules broken: {', '.join(run.failed_rules)} (profile {run.profile})",
        f"{scenario.id}: {scenario.title}",
        *notes,
    ]
    for attempt in run.attempts:
        if not attempt.failures:
            continue
        out.append("")
        out.append(f"=== {attempt.label} ===")
        if attempt.kind == "equivalence" and attempt.other is not None:
            out.append("streamed answer vs the expectation:")
            out.extend("  " + line for line in answer_diff(scenario, attempt.other) or ["(matches)"])
            if attempt.exchange is not None:
                out.append("non-streamed answer vs the expectation:")
                out.extend("  " + line for line in answer_diff(scenario, attempt.exchange) or ["(matches)"])
        elif attempt.exchange is not None:
            out.extend(answer_diff(scenario, attempt.exchange))
        unplaced = False
        shown: set[Position] = set()
        for failure in attempt.failures:
            out.append("")
            out.append(rule_heading(failure.rule_id, rules))
            if failure.rule_id in known:
                out.append(f"  (known failure: {known[failure.rule_id]})")
            out.extend("  " + line for line in failure.message.splitlines())
            out.extend("  " + line for line in evidence_lines(failure.evidence))
            position = Position.of(failure.evidence)
            if attempt.kind == "equivalence" or attempt.exchange is None:
                continue
            if not position.known:
                unplaced = True
            elif not full:
                out.append(f"  at {position.describe()}")
            elif position in shown:
                out.append(f"  at {position.describe()}, marked above")
            else:
                shown.add(position)
                out.extend("  " + line for line in transcript(attempt.exchange, position))
        if unplaced and attempt.exchange is not None and full:
            out.append("")
            out.extend(transcript(attempt.exchange))
        if attempt.variant is not None:
            out.append("")
            out.extend(_variant_lines(attempt))
        out.append("")
        out.append(f"reproduce: {reproduce(attempt)}")
    if not full:
        out += ["", "the raw answer around each finding: --tb=long"]
    return "\n".join(out)


def _variant_lines(attempt: Attempt) -> list[str]:
    variant = attempt.variant
    assert variant is not None
    out = [f"re-chunk seed {variant.seed}, variant {variant.index} ({variant.strategy})"]
    shrunk = attempt.shrunk
    if shrunk is None:
        return out
    rules = ", ".join(attempt.shrunk_rules)
    if not shrunk.splits:
        out.append(f"shrinking: {rules} fails with the content in one frame too: not a boundary problem "
                   f"({shrunk.runs} re-run(s))")
        return out
    state = "minimal" if shrunk.complete else f"reduced, stopped after {shrunk.runs} re-runs (may not be minimal)"
    out.append(f"smallest split still breaking {rules}: {len(shrunk.splits)} boundary(ies), {state}; "
               f"{shrunk.runs} re-run(s)")
    out.extend(describe_split(attempt.scenario, shrunk.splits))
    return out


# --------------------------------------------------------------------------- session summary


@dataclass(frozen=True)
class FailureRecord:
    rule: str
    group: str
    severity: str
    attempt: str
    message: str
    expected: bool  # listed in the known-failures file


@dataclass(frozen=True)
class ItemRecord:
    """One item's result as it crosses from worker to controller (JSON)."""

    scenario: str
    family: str
    profile: str
    outcome: str  # passed, failed, xfailed, skipped
    reason: str = ""
    failures: tuple[FailureRecord, ...] = ()
    notes: tuple[str, ...] = ()
    known_entries: tuple[int, ...] = ()  # known-failure entries (by number) that covered a failure here
    stale_entries: tuple[int, ...] = ()  # entries for this scenario whose failure did not happen
    upstream: str = ""  # the dialect the backend was served in
    cause: str = ""  # a cause the failure may share with others (an HTTP status, an unhealthy proxy)

    @property
    def pair(self) -> str:
        """The dialect pair played, client → upstream."""
        client = "openai" if self.profile == "vtc" else self.profile
        return f"{client} → {self.upstream or '?'}"

    @property
    def label(self) -> str:
        """The scenario id, with the pair when the backend was served in another dialect than the client's."""
        client = "openai" if self.profile == "vtc" else self.profile
        return self.scenario if self.upstream in ("", client) else f"{self.scenario} [{self.pair}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "family": self.family,
            "profile": self.profile,
            "upstream": self.upstream,
            "cause": self.cause,
            "outcome": self.outcome,
            "reason": self.reason,
            "failures": [f.__dict__ for f in self.failures],
            "notes": list(self.notes),
            "known_entries": list(self.known_entries),
            "stale_entries": list(self.stale_entries),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ItemRecord:
        return cls(
            scenario=data["scenario"],
            family=data["family"],
            profile=data["profile"],
            outcome=data["outcome"],
            reason=data.get("reason", ""),
            failures=tuple(FailureRecord(**f) for f in data.get("failures", ())),
            notes=tuple(data.get("notes", ())),
            known_entries=tuple(int(n) for n in data.get("known_entries", ())),
            stale_entries=tuple(int(n) for n in data.get("stale_entries", ())),
            upstream=data.get("upstream", ""),
            cause=data.get("cause", ""),
        )


def item_record(
    scenario: Scenario,
    profile: str,
    outcome: str,
    *,
    run: ScenarioRun | None = None,
    reason: str = "",
    expected_rules: Iterable[str] = (),
    notes: Iterable[str] = (),
    upstream: str = "",
    cause: str = "",
) -> ItemRecord:
    rules = rules_by_id()
    known = set(expected_rules)
    failures = []
    for attempt, failure in run.failures if run is not None else ():
        rule = rules.get(failure.rule_id)
        failures.append(
            FailureRecord(
                rule=failure.rule_id,
                group=rule.group if rule else "other",
                severity=rule.severity if rule else "spec",
                attempt=attempt.label,
                message=clip(failure.message, 400),
                expected=failure.rule_id in known,
            )
        )
    return ItemRecord(scenario.id, scenario.family, profile, outcome, reason, tuple(failures), tuple(notes),
                      upstream=upstream or scenario.backend.dialect, cause=cause)


@dataclass
class FamilyScore:
    passed: int = 0
    failed: int = 0
    xfailed: int = 0
    skipped: int = 0
    error: int = 0

    @property
    def ran(self) -> int:
        return self.passed + self.failed + self.xfailed + self.error

    @property
    def score(self) -> str:
        return f"{self.passed}/{self.ran}" if self.ran else "-"


@dataclass
class Summary:
    items: list[ItemRecord]
    groups: list[str]
    context: Mapping[str, Any] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)  # every rule id, in catalogue order

    def _scores(self, key: Callable[[ItemRecord], str]) -> dict[str, FamilyScore]:
        out: dict[str, FamilyScore] = {}
        for item in sorted(self.items, key=key):
            score = out.setdefault(key(item), FamilyScore())
            setattr(score, item.outcome, getattr(score, item.outcome) + 1)
        return out

    @property
    def families(self) -> dict[str, FamilyScore]:
        return self._scores(lambda i: i.family)

    @property
    def pairs(self) -> dict[str, FamilyScore]:
        """Scores per dialect pair (client → upstream)."""
        return self._scores(lambda i: i.pair)

    @property
    def coverage(self) -> str:
        """The coverage line: how many of the run's text formats the proxy claims to rescue."""
        from harness.coverage import NOT_CLAIMED, coverage_line, format_families

        formats = set(format_families())
        seen: dict[str, bool] = {}
        for item in self.items:
            if item.family not in formats:
                continue
            unclaimed = item.outcome == "skipped" and item.reason.startswith(NOT_CLAIMED)
            if item.outcome == "skipped" and not unclaimed:
                continue  # skipped for another reason (a client profile): says nothing about the claim
            seen[item.family] = seen.get(item.family, False) or not unclaimed
        return coverage_line(sorted(seen.items()))

    @property
    def total(self) -> FamilyScore:
        total = FamilyScore()
        for score in self.families.values():
            total.passed += score.passed
            total.failed += score.failed
            total.xfailed += score.xfailed
            total.skipped += score.skipped
            total.error += score.error
        return total

    @property
    def broken_rules(self) -> list[str]:
        """The rules some scenario failed (expectedly or not), in catalogue order."""
        failed = {f.rule for item in self.items for f in item.failures}
        return [r for r in self.rules if r in failed]

    @property
    def failing_items(self) -> list[ItemRecord]:
        """The items with a broken rule: the rows of the scenario × rule table."""
        return [i for i in self.items if i.failures]

    @property
    def causes(self) -> list[tuple[str, int]]:
        """Causes several failed or errored items share, most common first, each said once."""
        counts: dict[str, int] = {}
        for item in self.items:
            if item.cause and item.outcome in ("failed", "error"):
                counts[item.cause] = counts.get(item.cause, 0) + 1
        return sorted(((c, n) for c, n in counts.items() if n > 1), key=lambda cn: -cn[1])

    @property
    def nothing_checked(self) -> bool:
        """Items were collected but none ran: every one was skipped."""
        return bool(self.items) and self.total.ran == 0

    def skip_reason(self) -> tuple[str, int]:
        """The most common reason a scenario was skipped, and how many it skipped."""
        reasons = Counter(i.reason for i in self.items if i.outcome == "skipped")
        return reasons.most_common(1)[0] if reasons else ("", 0)

    def cell(self, item: ItemRecord, group: str) -> str:
        """pass / FAIL / xfail (known) / skip / error for one item and one rule group."""
        return self._cell(item, [f for f in item.failures if f.group == group])

    def rule_cell(self, item: ItemRecord, rule_id: str) -> str:
        """pass / FAIL / xfail (known) / skip / error for one item and one rule."""
        return self._cell(item, [f for f in item.failures if f.rule == rule_id])

    @staticmethod
    def _cell(item: ItemRecord, hits: Sequence[FailureRecord]) -> str:
        if item.outcome == "skipped":
            return "skip"
        if item.outcome == "error":
            return "error"
        if not hits:
            return "pass"
        return "xfail" if all(f.expected for f in hits) else "FAIL"


def summarize(records: Iterable[ItemRecord], context: Mapping[str, Any] | None = None) -> Summary:
    items = sorted(records, key=lambda r: (r.family, r.scenario))
    groups = rule_groups()
    rules = list(RULES)
    for item in items:  # rule ids the catalogue does not know still get a column
        for failure in item.failures:
            if failure.group not in groups:
                groups.append(failure.group)
            if failure.rule not in rules:
                rules.append(failure.rule)
    return Summary(items, groups, dict(context or {}), rules)


_TEXT_CELLS = {"pass": ".", "FAIL": "F", "xfail": "x", "skip": "s", "error": "E"}
_MD_CELLS = {"pass": " ", "FAIL": "❌", "xfail": "⚠️", "skip": "⏭️", "error": "💥"}


def _verdict(summary: Summary) -> str:
    """One sentence on the run as a whole, or "" when the table says it. Only items
    that passed count as passing: an error, or a known failure that no longer fails,
    broke no rule but did not pass either."""
    ran = summary.total.ran
    if summary.nothing_checked:
        reason, count = summary.skip_reason()
        return (f"nothing was checked: all {len(summary.items)} scenario(s) were skipped; "
                f"most often ({count} of them): {reason}")
    clean = sum(1 for i in summary.items if i.outcome == "passed" and not i.failures)
    if clean and clean == ran:
        return f"every rule passes for every scenario that ran ({ran})"
    return f"the other {clean} scenario(s) that ran pass every rule" if clean else ""


def _left_out(summary: Summary) -> list[tuple[str, str]]:
    """What the table does not show, as (scenario, what): skips, errors, items failed
    for a stale known failure, notes. Both reports list exactly these."""
    out: list[tuple[str, str]] = []
    for item in summary.items:
        if item.outcome in ("skipped", "error"):
            out.append((item.label, f"{item.outcome}: {item.reason}"))
        elif item.outcome == "failed" and not item.failures:
            out.append((item.label, "failed: listed as a known failure, but no longer fails"))
    for item in summary.items:
        out.extend((item.label, note) for note in item.notes)
    return out


def _score_line(name: str, score: FamilyScore, width: int) -> str:
    extra = [f"{n} {k}" for k, n in (("failed", score.failed), ("known", score.xfailed), ("skipped", score.skipped)) if n]
    return f"  {name:<{width}}  {score.score:>7}  {', '.join(extra)}".rstrip()


def render_text(summary: Summary) -> str:
    """Scores per family and the scenario × rule table of failures, for the terminal."""
    out = ["scores per family (passed/ran; known failures and skips not counted as passed):"]
    fams = summary.families
    width = max([len(f) for f in fams] + [5])
    out.extend(_score_line(family, score, width) for family, score in fams.items())
    total = summary.total
    out.append(f"  {'total':<{width}}  {total.score:>7}")
    pairs = summary.pairs
    if len(pairs) > 1 or any(not p.endswith("?") for p in pairs):
        out.append("scores per dialect pair (client → upstream):")
        pw = max(len(p) for p in pairs)
        out.extend(_score_line(pair, score, pw) for pair, score in pairs.items())
    coverage = summary.coverage
    if coverage:
        out.append(coverage)
    if not summary.items:
        return "\n".join(out)
    out.append("")
    rules, rows = summary.broken_rules, summary.failing_items
    if rules:
        id_width = max(len(i.label) for i in rows)
        out.append("rules failed per scenario (F fail, x known failure, . not broken; "
                   "scenarios without a failure left out):")
        out.append(f"  {'':<{id_width}}  " + "  ".join(rules))
        for item in rows:
            cells = "  ".join(f"{_TEXT_CELLS[summary.rule_cell(item, r)]:^{len(r)}}" for r in rules)
            out.append(f"  {item.label:<{id_width}}  {cells}")
    verdict = _verdict(summary)
    if verdict:
        out.append(verdict)
    out.extend(f"{n} scenario(s): {cause}" for cause, n in summary.causes)
    out.extend(f"  {scenario}: {what}" for scenario, what in _left_out(summary))
    return "\n".join(out)


def render_markdown(summary: Summary) -> str:
    """The same, as Markdown fit for a CI job summary."""
    total = summary.total
    out = ["## Tool-call conformance", ""]
    for key, value in summary.context.items():
        if value not in (None, "", [], ()):
            shown = ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
            out.append(f"- **{key}**: {shown}")
    out += ["", f"**Score: {total.score}** passed"
            + (f", {total.failed} failed" if total.failed else "")
            + (f", {total.xfailed} known failure(s)" if total.xfailed else "")
            + (f", {total.skipped} skipped" if total.skipped else ""), ""]
    out += ["| family | passed/ran | failed | known | skipped |", "| --- | ---: | ---: | ---: | ---: |"]
    for family, score in summary.families.items():
        out.append(f"| {family} | {score.score} | {score.failed} | {score.xfailed} | {score.skipped} |")
    rules = summary.broken_rules
    if rules:
        out += ["", "| scenario | " + " | ".join(rules) + " |", "| --- | " + " | ".join(":---:" for _ in rules) + " |"]
        for item in summary.failing_items:
            cells = " | ".join(_MD_CELLS[summary.rule_cell(item, r)] for r in rules)
            out.append(f"| `{item.label}` | {cells} |")
        out += ["", "❌ fail · ⚠️ known failure · empty: not broken (passed, or the rule does not apply); "
                "scenarios without a failure left out."]
    verdict = _verdict(summary)
    if verdict:
        sentence = verdict[0].upper() + verdict[1:] + "."
        out += ["", f"**{sentence}**" if summary.nothing_checked else sentence]
    details = [
        f"- `{item.label}` **{f.rule}**{' (known)' if f.expected else ''} [{f.severity}] in {f.attempt}: "
        f"{f.message.splitlines()[0] if f.message else ''}"
        for item in summary.failing_items
        for f in item.failures
    ]
    details += [f"- `{scenario}` {what}" for scenario, what in _left_out(summary)]
    if details:
        out += ["", "<details><summary>Failures, skips and checks left out</summary>", "", *details, "", "</details>"]
    return "\n".join(out) + "\n"


def render_json(summary: Summary) -> dict[str, Any]:
    rules = rules_by_id()
    broken = summary.broken_rules
    return {
        "context": dict(summary.context),
        "totals": {**summary.total.__dict__, "score": summary.total.score},
        "checked": not summary.nothing_checked,
        "families": {f: {**s.__dict__, "score": s.score} for f, s in summary.families.items()},
        "pairs": {p: {**s.__dict__, "score": s.score} for p, s in summary.pairs.items()},
        "coverage": summary.coverage,
        "groups": summary.groups,
        "failed_rules": broken,
        "scenarios": [
            {
                **item.to_json(),
                "groups": {g: summary.cell(item, g) for g in summary.groups},
                "rules": {r: summary.rule_cell(item, r) for r in broken},
            }
            for item in summary.items
        ],
        "rules": [
            {"id": r.id, "statement": r.statement, "severity": r.severity, "group": r.group}
            for r in rules.values()
        ],
    }
