"""Generated cases played side by side, in worker processes.

One example spends most of its time waiting (the mock pauses between the writes of a torn
event so that each reaches the proxy as a read of its own; an answer is played streamed
and again without streaming), and one interpreter plays the client, the mock and the
proxy under one lock. So ``fuzz`` plays the examples hypothesis draws in a pool of
processes, each with a mock backend and reference proxies of its own (the proxy under
test and the run's mock when the user names a proxy), and hypothesis itself stays in
the command's process: it only draws, and shrinks a failure there, one case at a time.

The workers are forked before the command starts any server thread, from a process
that has already imported what playing needs, so a worker costs no start-up of its own.
"""

from __future__ import annotations

import dataclasses
import importlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cache
from multiprocessing.context import BaseContext
from multiprocessing.synchronize import Barrier
from pathlib import Path
from types import TracebackType
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, reject, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, ReadOnlyDatabase
from hypothesis.strategies import SearchStrategy, integers

from harness.core.dialects import DIALECTS, NotPortable, WireDialect
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.script import serve_as
from harness.core.errors import ProxyUnreachable
from harness.core.records import ScenarioRun
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.generate.fuzz.case import Case, scenario_data
from harness.judge.readers.sdk_compat import read_anthropic_stream, read_responses_stream, read_stream
from harness.run.embedded import EmbeddedServers, EmbeddedUrls, preload
from harness.run.runner import play
from harness.run.settings import RunSettings
from mock_backends.control import Control, MockControl


def scenario_of(case: Case, upstream: WireDialect | None = None) -> Scenario:
    """The scenario a case is, its backend served in ``upstream`` (``NotPortable`` when that
    dialect cannot say it)."""
    scenario = parse_scenario(scenario_data(case), family=case.family)
    return scenario if upstream is None else serve_as(scenario, upstream)


def judge(case: Case, settings: RunSettings, mock: Control, upstream: WireDialect | None = None) -> ScenarioRun:
    """Play one case as the suite plays a scenario (its backend served in ``upstream``;
    ``NotPortable`` when that dialect cannot say it)."""
    return play(scenario_of(case, upstream), settings=settings, mock=mock, profile=case.profile)


def default_jobs() -> int:
    """Worker processes by default: two per core (each waits for most of an example)."""
    return 2 * (os.cpu_count() or 1)


@dataclass(frozen=True)
class Verdict:
    """What playing one case in a worker gave: the rules it broke, or why it was no example."""

    failed_rules: tuple[str, ...] = ()
    not_portable: bool = False
    unreachable: str | None = None  # the proxy could not be reached: the message

    def raise_unreachable(self) -> None:
        if self.unreachable is not None:
            raise ProxyUnreachable(self.unreachable)


@dataclass(frozen=True)
class _Task:
    """One case as it crosses to a worker: its profile by name (a worker's registry holds the
    same objects, and the rules compare profiles by identity), the rest as drawn."""

    profile: str
    parts: dict[str, Any]
    settings: RunSettings
    upstream: str | None  # the dialect the case's backend is served in (None: its own)
    mock_url: str | None  # the run's mock (a proxy of the user's calls it); None: the worker's own

    @classmethod
    def of(cls, case: Case, settings: RunSettings, upstream: str | None, mock_url: str | None) -> _Task:
        parts = {f.name: getattr(case, f.name) for f in dataclasses.fields(case) if f.name != "profile"}
        return cls(case.profile.name, parts, settings, upstream, mock_url)

    def case(self) -> Case:
        return Case(profile=CLIENTS[self.profile], **self.parts)


class CasePool:
    """``jobs`` worker processes that play cases; ``own`` names the reference proxies each
    worker serves (by the upstream dialect each calls, as ``EmbeddedServers`` takes them), or
    is None when the proxy under test is the user's."""

    def __init__(self, jobs: int, own: Sequence[str] | None) -> None:
        self.jobs = jobs
        self.own = tuple(own) if own is not None else None
        self._executor: ProcessPoolExecutor | None = None
        self._busy: list[Future[Verdict]] = []  # submitted, maybe not done

    def start(self) -> CasePool:
        # Forked while this process runs no other thread (the command starts its pool before its
        # servers): a worker begins with every module imported here. A process that already runs
        # threads (servers of its own, a test's) forks its workers from a clean fork server.
        warm_up()
        context: BaseContext
        if threading.active_count() == 1:
            context = multiprocessing.get_context("fork")
        else:
            server = multiprocessing.get_context("forkserver")
            server.set_forkserver_preload([__name__, *_FIRST_USE])
            context = server
        # Each worker starts its servers in the one ``_ready`` it takes (it waits there for the
        # others), so that start-up is paid before the first example, not within the examples' time.
        everyone = context.Barrier(self.jobs)
        self._executor = ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_begin,
                                             initargs=(self.own, everyone))
        for done in [self._executor.submit(_ready) for _ in range(self.jobs)]:
            done.result()
        return self

    def submit(self, case: Case, settings: RunSettings, upstream: WireDialect | None, mock_url: str) -> Future[Verdict]:
        """Play ``case`` in a worker: through the worker's own reference proxy for ``upstream``, or
        the proxy of ``settings`` and the mock at ``mock_url`` when the proxy is the user's."""
        assert self._executor is not None, "the pool is not started"
        task = _Task.of(case, settings, upstream.name if upstream is not None else None,
                        None if self.own is not None else mock_url)
        played = self._executor.submit(_play, task)
        self._busy.append(played)
        return played

    def wait_for_room(self) -> None:
        """Block while two cases per worker are submitted and not played yet: the workers stay
        busy, and drawing stays a few cases ahead of them."""
        self._busy = [f for f in self._busy if not f.done()]
        while len(self._busy) >= 2 * self.jobs:
            wait(self._busy, return_when=FIRST_COMPLETED)
            self._busy = [f for f in self._busy if not f.done()]

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def __enter__(self) -> CasePool:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


# --------------------------------------------------------------------------- drawing ahead


def hypothesis_test(check: Callable[[Case], None], strategy: SearchStrategy[Case], key: str, seed_value: int,
                    examples: int, database: ExampleDatabase | None) -> Callable[[], None]:
    """``check`` as hypothesis runs it over a format's cases: the run's seed, example count and
    database, under the database ``key`` of the format (a stored failure is replayed where it
    was found)."""
    # The seed first: hypothesis's seed decorator turns the database off, and the
    # settings applied over it turn it back on (a seed and a database together).
    test = seed(seed_value)(given(strategy)(check))
    test = settings(
        max_examples=examples,
        deadline=None,
        database=database,
        derandomize=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow],
        phases=tuple(Phase),
    )(test)
    test.hypothesis.inner_test._hypothesis_internal_add_digest = key.encode()  # type: ignore[attr-defined]
    return test


def database_at(path: Path | None) -> ExampleDatabase | None:
    return None if path is None else DirectoryBasedExampleDatabase(str(path))


class _Enough(BaseException):
    """Drawing stops: the time is up, or a case did not pass."""


@dataclass
class Ahead:
    """What the pool plays of a format: the cases drawn, in order, and the verdicts to come."""

    started: float
    cases: list[Case] = field(default_factory=list)
    playing: list[Future[Verdict] | None] = field(default_factory=list)  # per case: its verdict (None: not played)
    examples: int = 0  # counted as the run one at a time counts them
    stopped: str | None = None  # the time limit stopped the drawing
    cut_short: bool = False  # drawing stopped at a case that did not pass
    passed: set[str] = field(default_factory=set)  # by repr: the cases before the first that did not pass
    complete: bool = False  # every case drawn passed: the format's run is over
    finished: float = 0.0  # when the last verdict came in (or the drawing ended, if later)

    def _arrived(self, _verdict: Future[Verdict]) -> None:
        self.finished = max(self.finished, time.monotonic())

    @property
    def settled(self) -> bool:
        """Every verdict is in."""
        return all(f is None or f.done() for f in self.playing)

    def settle(self) -> None:
        """Wait for every verdict; the cases that passed before the first that did not."""
        wait([f for f in self.playing if f is not None])
        for case, verdict in zip(self.cases, self.playing):
            if verdict is not None and not _good(verdict):
                return
            if verdict is not None:
                self.passed.add(repr(case))
        self.complete = not self.cut_short


def _good(verdict: Future[Verdict]) -> bool:
    if verdict.exception() is not None:
        return False
    outcome = verdict.result()
    return not (outcome.failed_rules or outcome.not_portable or outcome.unreachable)


def draw_ahead(strategy: SearchStrategy[Case], key: str, *, seed_value: int, examples: int, database: Path | None,
               settings_: RunSettings, upstream: WireDialect | None, mock_url: str, pool: CasePool,
               deadline: float | None) -> Ahead:
    """Hypothesis draws a format's cases as a run one at a time would (told every case passed),
    and the pool plays them as they come, a few ahead of the slowest; drawing stops at the first
    case that did not pass (broke a rule, or could not be played)."""
    ahead = Ahead(time.monotonic())
    playing = ahead.playing
    unseen: list[Future[Verdict]] = []  # submitted, their verdict not yet looked at (a verdict seen good stays good)

    def draw(case: Case) -> None:
        case = dataclasses.replace(case, seed=seed_value)
        if deadline is not None and time.monotonic() > deadline:
            ahead.stopped = "the time limit was reached"
            raise _Enough()
        ahead.examples += 1
        ahead.cases.append(case)
        if upstream is not None:  # only serving it in another dialect can make a case no example
            try:
                scenario_of(case, upstream)
            except NotPortable:
                playing.append(None)
                reject()  # as the run one at a time does: no example
        pool.wait_for_room()
        # Only the verdicts not looked at yet: looking at every one each time cost a run of
        # n cases n²/2 looks, milliseconds an example by the thousandth.
        done = [f for f in unseen if f.done()]
        unseen[:] = [f for f in unseen if f not in done]
        if any(not _good(f) for f in done):
            playing.append(None)
            ahead.cut_short = True
            raise _Enough()
        verdict = pool.submit(case, settings_, upstream, mock_url)
        verdict.add_done_callback(ahead._arrived)
        playing.append(verdict)
        unseen.append(verdict)

    # The database is read, never written: a stored failure is drawn first, and this pass
    # (which judges nothing) must not drop it as one that no longer fails.
    stored = database_at(database)
    test = hypothesis_test(draw, strategy, key, seed_value, examples,
                           ReadOnlyDatabase(stored) if stored is not None else None)
    try:
        test()
    except _Enough:
        pass
    ahead.finished = max(ahead.finished, time.monotonic())
    return ahead


# --------------------------------------------------------------------------- workers

# What playing a case imports on first use: the official SDKs that read a stream as a client does.
_FIRST_USE = ("anthropic", "anthropic.lib.streaming", "anthropic.types", "httpx2", "openai",
              "openai.lib.streaming.chat", "openai.lib.streaming.responses", "openai.types.chat",
              "openai.types.chat.parsed_chat_completion", "openai.types.responses")


@cache
def warm_up() -> None:
    """Pay, once and before the first example, what the first example would otherwise pay: the
    imports a worker would make for itself (seconds each on a host that keeps no bytecode), the
    SDK clients the rules read streams with, and hypothesis's first draw in this process (it
    gathers the constants of every module of the project; they are those of the modules loaded
    when a case is drawn, gathered now or then alike, so a seed draws the same cases). The draw
    is of integers: a text strategy would build hypothesis's character map, which no case needs."""
    for name in _FIRST_USE:
        importlib.import_module(name)
    preload()
    for read in (read_stream, read_anthropic_stream, read_responses_stream):
        read(b"")

    @seed(0)
    @settings(max_examples=1, database=None, deadline=None, phases=(Phase.generate,), verbosity=Verbosity.quiet,
              suppress_health_check=list(HealthCheck))
    @given(integers())
    def first_draw(_: int) -> None:
        pass

    first_draw()


# --------------------------------------------------------------------------- in a worker

_OWN: tuple[str, ...] | None = None
_EVERYONE: Barrier | None = None  # every worker of the pool, met once at start
_READY_LIMIT = 120.0  # seconds a worker waits for the others to start (a broken pool says so, never hangs)
_SERVERS: EmbeddedServers | None = None  # this worker's own servers, started when the pool starts
_MOCKS: dict[str, MockControl] = {}  # a control per mock URL of a run's own (the proxy under test is the user's)


def _begin(own: tuple[str, ...] | None, everyone: Barrier) -> None:
    global _OWN, _EVERYONE
    _OWN, _EVERYONE = own, everyone
    # The command's process is the only one drawing cases, and every worker waits for what it
    # draws: the workers give way to it (at an equal share of two cores it drew too slowly to keep
    # them busy).
    os.nice(10)


def _ready() -> None:
    """This worker's own servers started (when it serves the proxy under test), once every
    worker has taken a ``_ready`` of its own."""
    if _OWN is not None:
        _urls()
    assert _EVERYONE is not None
    _EVERYONE.wait(timeout=_READY_LIMIT)


def _urls() -> EmbeddedUrls:
    global _SERVERS
    if _SERVERS is None:
        assert _OWN is not None
        _SERVERS = EmbeddedServers(upstream_dialects=_OWN)
        return _SERVERS.start()
    assert _SERVERS.urls is not None
    return _SERVERS.urls


def _mock(url: str) -> MockControl:
    if url not in _MOCKS:
        _MOCKS[url] = MockControl(url)
    return _MOCKS[url]


def _play(task: _Task) -> Verdict:
    settings = task.settings
    mock: Control
    if task.mock_url is None:
        urls = _urls()
        # The worker's reference proxy that calls the case's upstream ("native": each client's own API).
        settings = dataclasses.replace(settings, proxy_url=urls.proxy_urls[task.upstream or "native"])
        assert _SERVERS is not None
        mock = _SERVERS.control()  # its own mock, armed on its registry
    else:
        mock = _mock(task.mock_url)
    upstream = DIALECTS[task.upstream] if task.upstream is not None else None
    try:
        run = judge(task.case(), settings, mock, upstream)
    except NotPortable:
        return Verdict(not_portable=True)
    except ProxyUnreachable as exc:
        return Verdict(unreachable=str(exc))
    return Verdict(tuple(run.failed_rules))


__all__ = ["Ahead", "CasePool", "Verdict", "database_at", "default_jobs", "draw_ahead", "hypothesis_test", "judge",
           "scenario_of", "warm_up"]
