"""Generated cases played through a proxy, on hypothesis: search, shrink, save.

Hypothesis draws each case (``strategies.cases``), the runner plays it exactly as it
plays a scenario of the library (streamed, then without streaming, and both answers
compared), and the rules judge it against the expectation the case carries. A broken
rule fails the example; hypothesis shrinks it to the smallest case that still breaks
the same rule (each rule fails with its own exception type, so shrinking never wanders
to another defect) and the minimal case is written as a scenario file. Seeds and the
example database make a run reproducible: the same seed draws the same cases, and a
database replays the failures it saw first.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import reject
from hypothesis.errors import Flaky

from harness.core.dialects import NotPortable, WireDialect
from harness.core.dialects.clients import DEFAULT_PROFILE, Profile
from harness.core.errors import ProxyUnreachable
from harness.core.records import ScenarioRun
from harness.core.redact import Redactor
from harness.generate.fuzz.case import NATIVE, Case, scenario_data
from harness.generate.fuzz.strategies import cases, profiles_for
from harness.generate.fuzz.yaml_out import dump_scenario
from harness.report.failure import render_failures
from harness.run.fuzz_pool import Ahead, CasePool, database_at, draw_ahead, hypothesis_test, judge
from harness.run.settings import RunSettings
from mock_backends.control import Control


@dataclass(frozen=True)
class FuzzSettings:
    """One fuzz run: what to generate, how much, and where findings go."""

    run: RunSettings  # the proxy, features, strictness, timeout: as for the suite
    formats: tuple[str, ...]  # text formats to write calls in; "native" for structured calls
    profiles: tuple[Profile, ...] = (DEFAULT_PROFILE,)
    # The dialect the proxy calls upstream, every case's backend served in it (None: the client's
    # own), so a translating proxy is fuzzed through its translation.
    upstream: WireDialect | None = None
    examples: int = 100  # per format
    seed: int = 0
    max_time: float | None = None  # seconds for the whole run
    # Cases played while shrinking one failure (each is a few exchanges): a count, the same on
    # any machine, so the same seed shrinks to the same case however loaded the host is.
    shrink_budget: int = 100
    shrink_seconds: float = 600.0  # a guard against a proxy that slows down; a finding it cut short says so
    database: Path | None = None
    out: Path = Path("conformance-findings")


@dataclass(frozen=True)
class Finding:
    """The minimal failing case of one format, written as a scenario file."""

    format_id: str
    case: Case
    rules: tuple[str, ...]
    path: Path
    scenario_id: str
    run: ScenarioRun
    shrunk: bool  # False when hypothesis could not reproduce the failure to shrink it
    timed_out: bool = False  # shrinking stopped at the time guard, not the budget: another run may shrink further


@dataclass
class FormatResult:
    format_id: str
    examples: int = 0
    elapsed: float = 0.0
    finding: Finding | None = None
    stopped: str | None = None  # why generation stopped early (max time)

    @property
    def rate(self) -> float:
        return self.examples / self.elapsed if self.elapsed > 0 else 0.0


@dataclass
class FuzzReport:
    results: list[FormatResult] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [r.finding for r in self.results if r.finding is not None]

    @property
    def examples(self) -> int:
        return sum(r.examples for r in self.results)

    wall: float | None = None  # the run's own time (formats played side by side overlap)

    @property
    def elapsed(self) -> float:
        return self.wall if self.wall is not None else sum(r.elapsed for r in self.results)


class _Broken(Exception):
    """An example broke rules; one subclass per first rule (hypothesis keeps each apart)."""

    def __init__(self, case: Case, run: ScenarioRun) -> None:
        super().__init__(f"{case.describe()}: broke {', '.join(run.failed_rules)}")
        self.case = case
        self.run = run


_BROKEN: dict[str, type[_Broken]] = {}


def _broken(rule_id: str) -> type[_Broken]:
    if rule_id not in _BROKEN:
        _BROKEN[rule_id] = type(f"Broke_{rule_id.replace('-', '_')}", (_Broken,), {})
    return _BROKEN[rule_id]


class _Stop(BaseException):
    """Generation stops at once (time is up, the proxy is gone): not a failure to shrink.
    When shrinking ran out of budget it carries the smallest failure found so far."""

    def __init__(self, best: _Broken | None = None, timed_out: bool = False) -> None:
        super().__init__()
        self.best = best
        self.timed_out = timed_out


def fuzz(
    config: FuzzSettings,
    mock: Control,
    *,
    replay_command: Callable[[str, Case], str],
    progress: Callable[[FormatResult], None] | None = None,
    observe: Callable[[Case], None] | None = None,
    pool: CasePool | None = None,
) -> FuzzReport:
    """Every format in turn, ``config.examples`` examples each (fewer when time runs out);
    ``observe`` sees every case the run plays, in order; ``pool`` plays the examples side by
    side (the same cases, verdicts and findings as one at a time), the next format's drawn
    while the last of the one before are still playing. A format's time runs from its first
    draw to its last verdict, so side by side the formats' times overlap, and the report's
    is the run's own."""
    report = FuzzReport()
    began = time.monotonic()
    deadline = None if config.max_time is None else began + config.max_time
    waiting: deque[tuple[str, Ahead | None]] = deque()

    def finish(format_id: str, ahead: Ahead | None) -> None:
        started = time.monotonic() if ahead is None else ahead.started
        result = _finish_format(format_id, config, mock, ahead, started=started, deadline=deadline,
                                replay_command=replay_command, observe=observe)
        report.results.append(result)
        if progress is not None:
            progress(result)

    for format_id in config.formats:
        if pool is None:
            finish(format_id, None)
            continue
        waiting.append((format_id, _draw_ahead(format_id, config, mock, pool, deadline)))
        while waiting and (waiting[0][1] is None or waiting[0][1].settled):
            finish(*waiting.popleft())
    while waiting:
        finish(*waiting.popleft())
    report.wall = time.monotonic() - began
    return report


def fuzz_format(
    format_id: str,
    config: FuzzSettings,
    mock: Control,
    *,
    deadline: float | None,
    replay_command: Callable[[str, Case], str],
    observe: Callable[[Case], None] | None = None,
    pool: CasePool | None = None,
) -> FormatResult:
    """One format's examples, then the smallest failure shrunk and saved.

    With ``pool``, hypothesis first only draws, and the workers play what it draws side by
    side; when every case passed, that was the run. Otherwise hypothesis draws the same
    cases again (same seed, same database, and the same verdicts so far), the cases that
    passed are not played again, and from the first that did not, everything is played
    here one at a time, shrinking included, exactly as without a pool."""
    started = time.monotonic()
    ahead = _draw_ahead(format_id, config, mock, pool, deadline) if pool is not None else None
    return _finish_format(format_id, config, mock, ahead, started=started, deadline=deadline,
                          replay_command=replay_command, observe=observe)


def _key(format_id: str, profiles: Sequence[Profile]) -> str:
    """A format's key in the example database: its id and its client profiles."""
    return f"{format_id}:{','.join(p.name for p in profiles)}"


def _draw_ahead(format_id: str, config: FuzzSettings, mock: Control, pool: CasePool,
                deadline: float | None) -> Ahead | None:
    """A format's cases drawn and handed to the pool (None: the format is skipped)."""
    if _skipped(format_id, config) is not None:
        return None
    profiles = profiles_for(format_id, config.profiles)
    strategy = cases([] if format_id == NATIVE else [format_id], profiles, native=format_id == NATIVE)
    return draw_ahead(strategy, _key(format_id, profiles), seed_value=config.seed, examples=config.examples,
                      database=config.database, settings_=config.run, upstream=config.upstream,
                      mock_url=mock.base_url, pool=pool, deadline=deadline)


def _skipped(format_id: str, config: FuzzSettings) -> str | None:
    """Why a format is not played: its client profile needs a feature the run does not claim."""
    profiles = profiles_for(format_id, config.profiles)
    missing = sorted({f for p in profiles for f in p.features} - config.run.features)
    if not missing:
        return None
    return f"skipped: its client profile needs feature {', '.join(missing)} (--features {','.join(missing)})"


def _finish_format(format_id: str, config: FuzzSettings, mock: Control, ahead: Ahead | None, *,
                   started: float, deadline: float | None, replay_command: Callable[[str, Case], str],
                   observe: Callable[[Case], None] | None) -> FormatResult:
    """A format's run, one case at a time from the first that the pool's did not pass (all of
    it without a pool)."""
    result = FormatResult(format_id)
    skipped = _skipped(format_id, config)
    if skipped is not None:
        result.stopped = skipped
        return result
    formats = [] if format_id == NATIVE else [format_id]
    profiles = profiles_for(format_id, config.profiles)
    strategy = cases(formats, profiles, native=format_id == NATIVE)
    start = started
    passed: set[str] = set()  # cases the pool played that passed, by their repr
    drawn: set[str] = set()  # every case the pool was given (drawn before the time limit)
    if ahead is not None:
        ahead.settle()
        if ahead.complete:
            if observe is not None:
                for case in ahead.cases:
                    observe(case)
            result.examples, result.stopped = ahead.examples, ahead.stopped
            result.elapsed = ahead.finished - start
            return result
        passed, drawn = ahead.passed, {repr(case) for case in ahead.cases}
    first: list[_Broken] = []
    unreachable: list[ProxyUnreachable] = []

    seen: dict[str, _Broken | None] = {}  # every case played while shrinking, by its repr
    shrinking = [0]  # cases played while shrinking
    shrink_until = [0.0]
    best: list[_Broken] = []  # the latest (so smallest) failure of the first failure's rule

    def check(case: Case) -> None:
        case = replace(case, seed=config.seed)
        key = repr(case)
        if not first:
            if deadline is not None and key not in drawn and time.monotonic() > deadline:
                result.stopped = "the time limit was reached"
                raise _Stop()
            result.examples += 1
            if key in passed:  # played side by side already, and passed
                if observe is not None:
                    observe(case)
                return
        if first:
            # Shrinking: a case played before gives its verdict again (hypothesis replays
            # the smallest one at the end); past the budget the smallest failure so far
            # is the finding.
            if key in seen:
                known = seen[key]
                if known is not None:
                    raise known
                return
            if not shrinking[0]:
                shrink_until[0] = time.monotonic() + config.shrink_seconds
            if shrinking[0] >= config.shrink_budget or time.monotonic() > shrink_until[0]:
                raise _Stop(best[-1] if best else first[0], timed_out=shrinking[0] < config.shrink_budget)
            shrinking[0] += 1
        if observe is not None:
            observe(case)
        try:
            run = judge(case, config.run, mock, config.upstream)
        except NotPortable:
            reject()  # an answer the upstream dialect cannot carry is no example
        except ProxyUnreachable as exc:
            unreachable.append(exc)
            raise _Stop() from exc
        broken = _broken(run.failed_rules[0])(case, run) if run.failed_rules else None
        if first:
            seen[key] = broken
        if broken is not None:
            if not first:
                first.append(broken)
                seen[key] = broken
            if type(broken) is type(first[0]):
                best.append(broken)
            raise broken

    test = hypothesis_test(check, strategy, _key(format_id, profiles), config.seed, config.examples,
                           database_at(config.database))
    broken: _Broken | None = None
    shrunk, timed_out = True, False
    try:
        test()
    except _Stop as stop:
        broken, timed_out = stop.best, stop.timed_out
    except _Broken as exc:
        broken = exc
    except Flaky:
        broken, shrunk = (first[0] if first else None), False
    finally:
        result.elapsed = time.monotonic() - start
    if unreachable:
        raise unreachable[0]
    if broken is not None:
        result.finding = _save(format_id, broken, shrunk, timed_out, config, replay_command)
    return result


def _save(format_id: str, broken: _Broken, shrunk: bool, timed_out: bool, config: FuzzSettings,
          replay_command: Callable[[str, Case], str]) -> Finding:
    rules = tuple(broken.run.failed_rules)
    data = scenario_data(broken.case, rules=rules)
    scenario_id = str(data["id"])
    family = broken.case.family
    folder = config.out / family
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{scenario_id.removeprefix(family + '-')}.yaml"
    header = [
        f"generated by toolcall-conformance fuzz --seed {config.seed} (format {format_id})",
        f"breaks: {', '.join(rules)}" + ("" if shrunk else " (not shrunk: the failure did not happen again)")
        + (f" (shrinking stopped after {config.shrink_seconds:g} s, before its budget: another run may shrink "
           "further)" if timed_out else ""),
        f"replay: {replay_command(scenario_id, broken.case)}",
    ]
    path.write_text(dump_scenario(data, header), encoding="utf-8")
    return Finding(format_id, broken.case, rules, path, scenario_id, broken.run, shrunk, timed_out)


__all__ = ["Finding", "FormatResult", "FuzzReport", "FuzzSettings", "fuzz", "fuzz_format"]


def finding_lines(finding: Finding, replay: str, redactor: Redactor) -> list[str]:
    """A finding as printed, secrets redacted by ``redactor``."""
    text = redactor.text(render_failures(finding.run, reproduce=lambda attempt: replay))
    return [
        f"  scenario written to {finding.path} (id {finding.scenario_id})",
        f"  replay: {redactor.text(replay)}",
        *("    " + line for line in text.splitlines()),
    ]
