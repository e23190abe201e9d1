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
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, reject, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, ReadOnlyDatabase
from hypothesis.errors import Flaky
from hypothesis.strategies import SearchStrategy

from harness.core.dialects import NotPortable, WireDialect
from harness.core.dialects.clients import DEFAULT_PROFILE, Profile
from harness.core.errors import ProxyUnreachable
from harness.core.records import ScenarioRun
from harness.core.redact import Redactor
from harness.generate.fuzz.case import NATIVE, Case, scenario_data
from harness.generate.fuzz.strategies import cases, profiles_for
from harness.generate.fuzz.yaml_out import dump_scenario
from harness.report.failure import render_failures
from harness.run.fuzz_pool import CasePool, Verdict, judge, scenario_of
from harness.run.settings import RunSettings
from mock_backends.control import MockControl


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

    @property
    def elapsed(self) -> float:
        return sum(r.elapsed for r in self.results)


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
    mock: MockControl,
    *,
    replay_command: Callable[[str, Case], str],
    progress: Callable[[FormatResult], None] | None = None,
    observe: Callable[[Case], None] | None = None,
    pool: CasePool | None = None,
) -> FuzzReport:
    """Every format in turn, ``config.examples`` examples each (fewer when time runs out);
    ``observe`` sees every case the run plays, in order; ``pool`` plays a format's examples
    side by side (the same cases, verdicts and findings as one at a time)."""
    report = FuzzReport()
    deadline = None if config.max_time is None else time.monotonic() + config.max_time
    for format_id in config.formats:
        result = fuzz_format(format_id, config, mock, deadline=deadline, replay_command=replay_command,
                             observe=observe, pool=pool)
        report.results.append(result)
        if progress is not None:
            progress(result)
    return report


def fuzz_format(
    format_id: str,
    config: FuzzSettings,
    mock: MockControl,
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
    result = FormatResult(format_id)
    formats = [] if format_id == NATIVE else [format_id]
    profiles = profiles_for(format_id, config.profiles)
    missing = sorted({f for p in profiles for f in p.features} - config.run.features)
    if missing:
        result.stopped = (f"skipped: its client profile needs feature {', '.join(missing)} "
                          f"(--features {','.join(missing)})")
        return result
    strategy = cases(formats, profiles, native=format_id == NATIVE)
    start = time.monotonic()
    passed: set[str] = set()  # cases the pool played that passed, by their repr
    drawn: set[str] = set()  # every case the pool was given (drawn before the time limit)
    if pool is not None:
        ahead = _play_ahead(strategy, format_id, profiles, config, mock, pool, deadline)
        if ahead.complete:
            if observe is not None:
                for case in ahead.cases:
                    observe(case)
            result.examples, result.stopped = ahead.examples, ahead.stopped
            result.elapsed = time.monotonic() - start
            return result
        passed, drawn = ahead.passed, {repr(case) for case in ahead.cases}
    first: list[_Broken] = []
    unreachable: list[ProxyUnreachable] = []

    seen: dict[str, _Broken | None] = {}  # every case played while shrinking, by its repr
    shrinking = [0]  # cases played while shrinking
    shrink_until = [0.0]
    best: list[_Broken] = []  # the latest (so smallest) failure of the first failure's rule

    def check(case: Case) -> None:
        case = _with_seed(case, config.seed)
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

    test = _hypothesis_test(check, strategy, format_id, profiles, config, _database(config.database))
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


def _hypothesis_test(check: Callable[[Case], None], strategy: SearchStrategy[Case], format_id: str,
                     profiles: Sequence[Profile], config: FuzzSettings,
                     database: ExampleDatabase | None) -> Callable[[], None]:
    """``check`` as hypothesis runs it over a format's cases: the run's seed, example count and database."""
    # The seed first: hypothesis's seed decorator turns the database off, and the
    # settings applied over it turn it back on (a seed and a database together).
    test = seed(config.seed)(given(strategy)(check))
    test = settings(
        max_examples=config.examples,
        deadline=None,
        database=database,
        derandomize=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow],
        phases=tuple(Phase),
    )(test)
    # One database key per format and dialect set: a stored failure is replayed where it was found.
    test.hypothesis.inner_test._hypothesis_internal_add_digest = (  # type: ignore[attr-defined]
        f"{format_id}:{','.join(p.name for p in profiles)}".encode())
    return test


@dataclass
class _Ahead:
    """What the pool played of a format: the cases drawn, in order, and those that passed."""

    cases: list[Case] = field(default_factory=list)
    passed: set[str] = field(default_factory=set)  # by repr: the cases before the first that did not pass
    complete: bool = False  # every case drawn passed: the format's run is over
    examples: int = 0  # counted as the run one at a time counts them
    stopped: str | None = None


def _play_ahead(strategy: SearchStrategy[Case], format_id: str, profiles: Sequence[Profile], config: FuzzSettings,
                mock: MockControl, pool: CasePool, deadline: float | None) -> _Ahead:
    """Hypothesis draws the format's cases as a run one at a time would (told every case
    passed), and the pool plays them as they come, a few ahead of the slowest; drawing stops
    at the first case that did not pass (broke a rule, or could not be played)."""
    ahead = _Ahead()
    playing: list[Future[Verdict] | None] = []  # per case drawn: its verdict to come (None: rejected)

    def good(verdict: Future[Verdict]) -> bool:
        if verdict.exception() is not None:
            return False
        outcome = verdict.result()
        return not (outcome.failed_rules or outcome.not_portable or outcome.unreachable)

    def draw(case: Case) -> None:
        case = _with_seed(case, config.seed)
        if deadline is not None and time.monotonic() > deadline:
            ahead.stopped = "the time limit was reached"
            raise _Stop()
        ahead.examples += 1
        ahead.cases.append(case)
        try:
            scenario_of(case, config.upstream)
        except NotPortable:
            playing.append(None)
            reject()  # as the run one at a time does: no example
        busy = [f for f in playing if f is not None and not f.done()]
        if len(busy) >= 2 * pool.jobs:  # a few ahead of the slowest, no more
            wait(busy, return_when=FIRST_COMPLETED)
        if any(f is not None and f.done() and not good(f) for f in playing):
            playing.append(None)
            raise _Stop()
        playing.append(pool.submit(case, config.run, config.upstream, mock.base_url))

    # The database is read, never written: a stored failure is drawn first, and this pass
    # (which judges nothing) must not drop it as one that no longer fails.
    stored = _database(config.database)
    test = _hypothesis_test(draw, strategy, format_id, profiles, config,
                            ReadOnlyDatabase(stored) if stored is not None else None)
    stopped = False
    try:
        test()
    except _Stop:
        stopped = True
    finally:
        wait([f for f in playing if f is not None])
    for case, verdict in zip(ahead.cases, playing):
        if verdict is not None and not good(verdict):
            return ahead
        if verdict is not None:
            ahead.passed.add(repr(case))
    ahead.complete = not stopped or ahead.stopped is not None
    return ahead


def _with_seed(case: Case, value: int) -> Case:
    from dataclasses import replace

    return replace(case, seed=value)


def _database(path: Path | None) -> ExampleDatabase | None:
    return None if path is None else DirectoryBasedExampleDatabase(str(path))


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
