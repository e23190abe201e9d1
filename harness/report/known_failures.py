"""Known failures: the list a proxy's CI keeps of what it does not do yet.

A YAML file of entries ``{scenario: id-or-glob, rule: id or [ids] (optional), reason: text}``,
either as the whole document or under a top-level ``known_failures:`` key. A failure
an entry covers is reported as expected; any other failure fails the run as usual. An
entry whose failure no longer happens fails the run too (strict), so the file never
silently rots: an entry naming one scenario as soon as that scenario passes, an entry
with a glob (``hermes-*``, one cause across a family) once no scenario it names fails
its rules any more.

The writer proposes entries a person can keep: one per cause (``harness.report.causes``)
and family, a glob where the cause breaks several scenarios of a family, with one reason
taken from the failure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from harness.core.errors import ConformanceError
from harness.report.causes import Cause

_KEYS = ("scenario", "rule", "reason")


class KnownFailuresError(ConformanceError):
    """The known-failures file is unusable; the message names file, entry and field."""


_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class KnownFailure:
    scenario: str  # an id or an fnmatch glob
    rules: tuple[str, ...]  # empty: any rule
    reason: str
    number: int  # 1-based position in the file, for messages
    line: int | None = None

    def matches(self, scenario_id: str) -> bool:
        return fnmatch.fnmatchcase(scenario_id, self.scenario)

    def covers(self, rule_id: str) -> bool:
        return not self.rules or rule_id in self.rules

    @property
    def glob(self) -> bool:
        """Names a family of scenarios, some of which may pass: stale only when none fails."""
        return bool(_GLOB & set(self.scenario))

    def describe(self) -> str:
        rule = f", rule {', '.join(self.rules)}" if self.rules else ", any rule"
        return f"entry {self.number} (scenario {self.scenario}{rule}: {self.reason})"


@dataclass(frozen=True)
class KnownFailures:
    path: str
    entries: tuple[KnownFailure, ...]

    def for_scenario(self, scenario_id: str) -> list[KnownFailure]:
        return [e for e in self.entries if e.matches(scenario_id)]

    def unmatched(self, scenario_ids: Iterable[str]) -> list[KnownFailure]:
        """Entries naming no scenario of ``scenario_ids`` (a typo, or a removed case)."""
        ids = list(scenario_ids)
        return [e for e in self.entries if not any(e.matches(i) for i in ids)]


def parse_known_failures(
    data: Any, *, path: str = "<inline>", known_rules: Collection[str] | None = None,
    lines: Sequence[int | None] = (),
) -> KnownFailures:
    """Validate parsed YAML; every problem is collected and raised together."""
    if isinstance(data, dict) and set(data) == {"known_failures"}:
        data = data["known_failures"]
    if data is None:
        data = []
    if not isinstance(data, list):
        raise KnownFailuresError(
            f"{path}: expected a list of entries (scenario, rule, reason), "
            f"or a mapping with the single key 'known_failures'; got {type(data).__name__}"
        )
    problems: list[str] = []
    entries: list[KnownFailure] = []
    for i, item in enumerate(data, 1):
        line = lines[i - 1] if i - 1 < len(lines) else None
        where = f"{path}:{line}: entry {i}" if line else f"{path}: entry {i}"
        if not isinstance(item, dict):
            problems.append(f"{where}: expected a mapping with keys {', '.join(_KEYS)}, got {type(item).__name__}")
            continue
        unknown = sorted(str(k) for k in item if k not in _KEYS)
        if unknown:
            problems.append(f"{where}: unknown key(s) {', '.join(unknown)} (allowed: {', '.join(_KEYS)})")
        scenario, rule, reason = item.get("scenario"), item.get("rule"), item.get("reason")
        if not isinstance(scenario, str) or not scenario.strip():
            problems.append(f"{where}: 'scenario' must be a scenario id or glob")
        named = [rule] if isinstance(rule, str) else rule if isinstance(rule, list) and rule else None
        if rule is not None and (named is None or not all(isinstance(r, str) and r.strip() for r in named)):
            problems.append(f"{where}: 'rule' must be a rule id or a list of them (leave it out to cover any rule)")
            named = None
        for one in named or ():
            if known_rules is not None and one.strip() not in known_rules:
                close = ", ".join(sorted(r for r in known_rules if r.split("-")[0] == one.split("-")[0])[:12])
                hint = f" (rules of that group: {close})" if close else ""
                problems.append(f"{where}: unknown rule {one!r}{hint}")
        if not isinstance(reason, str) or not reason.strip():
            problems.append(f"{where}: 'reason' must say why this failure is accepted")
        if isinstance(scenario, str) and isinstance(reason, str) and (rule is None or named is not None):
            entries.append(KnownFailure(scenario.strip(), tuple(r.strip() for r in named or ()), reason.strip(), i,
                                        line))
    if problems:
        raise KnownFailuresError("invalid known-failures file:\n" + "\n".join(problems))
    return KnownFailures(path, tuple(entries))


def load_known_failures(path: str | Path, *, known_rules: Collection[str] | None = None) -> KnownFailures:
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnownFailuresError(f"{p}: cannot read the known-failures file: {exc}") from exc
    try:
        data = yaml.safe_load(text)
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise KnownFailuresError(f"{p}: not valid YAML: {exc}") from exc
    if isinstance(root, yaml.MappingNode) and len(root.value) == 1:
        root = root.value[0][1]
    lines: list[int | None] = []
    if isinstance(root, yaml.SequenceNode):
        lines = [node.start_mark.line + 1 for node in root.value]
    return parse_known_failures(data, path=str(p), known_rules=known_rules, lines=lines)


Outcome = Literal["passed", "failed", "xfailed"]


@dataclass(frozen=True)
class Judgement:
    """How one item's failures read against the file."""

    outcome: Outcome
    expected: dict[str, KnownFailure]  # failed rule id -> the entry covering it
    unexpected: tuple[str, ...]  # failed rule ids no entry covers
    stale: tuple[KnownFailure, ...]  # entries for this scenario whose failure did not happen

    def xpass_message(self, path: str) -> str:
        lines = [f"[XPASS(strict)] listed in {path} but no longer failing:"]
        lines += [f"  {e.describe()}" for e in self.stale]
        lines.append(f"the proxy passes now: remove or narrow these entries in {path}")
        return "\n".join(lines)

    @property
    def xfail_reason(self) -> str:
        reasons = dict.fromkeys(f"{rule}: {entry.reason}" for rule, entry in self.expected.items())
        return "known failure: " + "; ".join(reasons)


def judge(scenario_id: str, failed_rules: Sequence[str], known: KnownFailures | None) -> Judgement:
    """Strict expected-failure semantics for one item that ran (not skipped)."""
    entries = known.for_scenario(scenario_id) if known is not None else []
    failed = list(dict.fromkeys(failed_rules))
    expected: dict[str, KnownFailure] = {}
    for rule in failed:
        entry = next((e for e in entries if e.rules and rule in e.rules), None) or next(
            (e for e in entries if not e.rules), None)
        if entry is not None:
            expected[rule] = entry
    unexpected = tuple(r for r in failed if r not in expected)
    # A glob names scenarios some of which may pass; whether it still covers anything is the run's to say.
    stale = tuple(e for e in entries if not e.glob and not any(e.covers(r) for r in failed))
    outcome: Outcome
    if unexpected or stale:
        outcome = "failed"
    elif expected:
        outcome = "xfailed"
    else:
        outcome = "passed"
    return Judgement(outcome, expected, unexpected, stale)


# --------------------------------------------------------------------------- writing the file


@dataclass(frozen=True)
class Entry:
    """One entry as written: what ``run --write-known-failures`` records for a cause."""

    scenario: str
    rules: tuple[str, ...]  # empty: any rule
    reason: str


HEADER = """\
# Known failures of the proxy under test: 'toolcall-conformance run --expect-failures {name}'
# reports these as expected and fails on anything new (and on an entry that passes now).
# {origin}
"""


def render_known_failures(entries: Iterable[Entry], *, name: str, origin: str) -> str:
    """The YAML text of a known-failures file (one flow mapping per entry, so that a
    diff in review shows one line per accepted failure)."""
    lines = [HEADER.format(name=name, origin=origin).rstrip("\n")]
    for entry in entries:
        item: dict[str, str | list[str]] = {"scenario": entry.scenario}
        if entry.rules:
            item["rule"] = entry.rules[0] if len(entry.rules) == 1 else list(entry.rules)
        item["reason"] = entry.reason
        lines.append("- " + yaml.safe_dump(item, default_flow_style=True, sort_keys=False, allow_unicode=True,
                                           width=10_000).strip())
    if len(lines) == 1:
        lines.append("[]")
    return "\n".join(lines) + "\n"


def stale_globs(known: KnownFailures, used: Collection[int], played: Iterable[str]) -> list[KnownFailure]:
    """The glob entries that name a scenario the run played but covered none of its failures."""
    ids = list(played)
    return [e for e in known.entries if e.glob and e.number not in used and any(e.matches(i) for i in ids)]


def reason_from(message: str, rule: str) -> str:
    """A reason a person can read, from a failure: the rule and what went wrong, in one line."""
    first = message.splitlines()[0] if message else ""
    return f"{rule}: {first}" if first else f"breaks {rule}"


def entries_from_causes(causes: Sequence[Cause], played: Mapping[str, Sequence[str]],
                        known: KnownFailures | None) -> list[Entry]:
    """One entry per cause and family: ``family-*`` with the cause's rules when the cause
    broke two or more of the family's scenarios (or every one it played), else the
    scenario's id; one reason for the cause, taken from its first failure (an existing
    entry's reason is kept). ``played`` lists the scenarios played per family."""
    out: list[Entry] = []
    for cause in causes:
        first = cause.items[0]
        own = next((f for f in first.failures if f.rule == cause.rule), first.failures[0])
        reason = reason_from(own.message, cause.rule)
        families: dict[str, list[str]] = {}
        for item in cause.items:
            families.setdefault(item.family, []).append(item.scenario)
        for family, scenarios in families.items():
            ids = list(dict.fromkeys(scenarios))
            rules = tuple(sorted({f.rule for i in cause.items if i.family == family for f in i.failures},
                                 key=list(cause.rules).index))
            glob = f"{family}-*"
            whole = all(fnmatch.fnmatchcase(s, glob) for s in ids) and (
                len(ids) > 1 or set(played.get(family, ())) <= set(ids))
            names = [glob] if whole else ids
            for name in names:
                kept = next((e.reason for e in (known.entries if known else ())
                             if e.scenario == name or (not e.glob and e.matches(name))), None)
                out.append(Entry(name, rules, kept or reason))
    return out


def pruned(known: KnownFailures, dropped: Collection[int]) -> list[Entry]:
    """The file's entries without those numbered in ``dropped``."""
    return [Entry(e.scenario, e.rules, e.reason) for e in known.entries if e.number not in dropped]
