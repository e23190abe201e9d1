"""The session's results as data: each item's record (JSON-able, so it crosses from a pytest-xdist worker
to the controller), and the scores, causes and coverage the score card is rendered from."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects import WireDialect
from harness.core.dialects.clients import CLIENTS, ClientProfile
from harness.core.dialects.servers import ServerProfile
from harness.core.records import ScenarioRun
from harness.core.scenario.model import Scenario
from harness.judge.readers.transcript import Position, clip
from harness.judge.rules import RULES, Rule


def shown(value: Any) -> str:
    """A configuration value as a person reads it in a report: yes/no, none, a list joined."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    if value is None or value == "" or value == 0:
        return "none"
    return str(value)


def rules_by_id() -> dict[str, Rule]:
    return dict(RULES)


def rule_groups() -> list[str]:
    """Every rule group, in the order the rules are declared."""
    return list(dict.fromkeys(rule.group for rule in RULES.values()))


# --------------------------------------------------------------------------- session summary


@dataclass(frozen=True)
class FailureRecord:
    rule: str
    group: str
    severity: str
    attempt: str
    message: str
    expected: bool  # listed in the known-failures file
    where: str = ""  # where in the answer it happened (event, byte, character), when the rule says


@dataclass(frozen=True)
class ItemRecord:
    """One item's result as it crosses from worker to controller (JSON): the profile and the
    dialect by name, as reports print them."""

    scenario: str
    family: str
    profile: str
    outcome: str  # passed, failed, xfailed, skipped, error, inconclusive (played while the proxy was down)
    reason: str = ""
    failures: tuple[FailureRecord, ...] = ()
    notes: tuple[str, ...] = ()
    known_entries: tuple[int, ...] = ()  # known-failure entries (by number) that covered a failure here
    stale_entries: tuple[int, ...] = ()  # entries for this scenario whose failure did not happen
    upstream: str = ""  # the dialect the backend was served in
    cause: str = ""  # a cause the failure may share with others (an HTTP status, an unhealthy proxy)
    own_profile: bool = True  # played by the client the scenario was written for
    replay: str = ""  # the command that replays the first failing exchange
    server: str = ""  # the real server whose habits the backend streamed with ("": the ideal one)

    @property
    def pair(self) -> str:
        """The dialect pair played, client → upstream."""
        return f"{self.client_dialect} → {self.upstream or '?'}"

    @property
    def label(self) -> str:
        """The scenario id, with the pair when it is not the scenario's own: the backend served
        in another dialect than the client's, or another client than the one it was written for."""
        own = self.upstream in ("", self.client_dialect) and self.own_profile
        label = self.scenario if own else f"{self.scenario} [{self.pair}]"
        return f"{label} [{self.server} server]" if self.server else label

    @property
    def file_stem(self) -> str:
        """The name of the item's HAR file and transcript (and its anchor in the HTML report),
        one per item: the scenario id, with the client profile, the upstream dialect and the
        server when the item is not the scenario played as written, so that the other pairs
        of a scenario do not overwrite its files."""
        if self.label == self.scenario:
            return self.scenario
        played = f"{self.profile}-to-{self.upstream or 'unknown'}" + (f".{self.server}" if self.server else "")
        return f"{self.scenario}." + re.sub(r"[^A-Za-z0-9_.-]", "_", played)

    @property
    def client_dialect(self) -> str:
        """The dialect the client read answers in (its profile's name, for a profile no longer known)."""
        played = CLIENTS.get(self.profile)
        return played.answers.name if played is not None else self.profile

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "family": self.family,
            "profile": self.profile,
            "upstream": self.upstream,
            "server": self.server,
            "cause": self.cause,
            "outcome": self.outcome,
            "reason": self.reason,
            "failures": [f.__dict__ for f in self.failures],
            "notes": list(self.notes),
            "known_entries": list(self.known_entries),
            "stale_entries": list(self.stale_entries),
            "replay": self.replay,
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
            replay=data.get("replay", ""),
            server=data.get("server", ""),
        )


def item_record(
    scenario: Scenario,
    profile: ClientProfile,
    outcome: str,
    *,
    run: ScenarioRun | None = None,
    reason: str = "",
    expected_rules: Iterable[str] = (),
    notes: Iterable[str] = (),
    upstream: WireDialect | None = None,
    cause: str = "",
    server: ServerProfile | None = None,
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
                where=position.describe() if (position := Position.of(failure.evidence)).known else "",
            )
        )
    return ItemRecord(scenario.id, scenario.family, profile.name, outcome, reason, tuple(failures), tuple(notes),
                      upstream=(upstream or scenario.backend.dialect).name, cause=cause,
                      own_profile=profile is scenario.client.profile, server=server.name if server else "")


@dataclass
class FamilyScore:
    passed: int = 0
    failed: int = 0
    xfailed: int = 0
    skipped: int = 0
    error: int = 0
    inconclusive: int = 0  # played while the proxy was unhealthy, which never recovered: neither passed nor failed

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

    def _scores(self, key: Callable[[ItemRecord], str],
                which: Callable[[ItemRecord], bool] = lambda i: True) -> dict[str, FamilyScore]:
        out: dict[str, FamilyScore] = {}
        for item in sorted(filter(which, self.items), key=key):
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
    def servers(self) -> dict[str, FamilyScore]:
        """Scores per upstream server profile, of the items played under one."""
        return self._scores(lambda i: i.server, lambda i: bool(i.server))

    @property
    def coverage(self) -> str:
        """The coverage line: how many of the run's text formats the proxy claims to rescue."""
        from harness.generate.coverage import NOT_CLAIMED, coverage_line, format_families

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
            total.inconclusive += score.inconclusive
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
        if item.outcome in ("error", "inconclusive"):
            return item.outcome
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
