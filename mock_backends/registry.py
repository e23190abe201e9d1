"""Armed runs: which scenario answers a request, and what each run received.

No HTTP here. A run is found by the nonce the harness put in the request; it is
never consumed by a request (proxies retry, and a test may send several requests
to one run), and lives until it is disarmed or evicted as the oldest of too many.
A request whose proxy removed every copy of the nonce is served from a queue: the
oldest armed run that has not received a request yet takes it.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.core.errors import MockError
from harness.core.exchange import BackendActivity, RecordedAnswer, RecordedRequest
from harness.core.nonce import NONCE_HEADER, new_nonce
from harness.core.replay import anthropic as anthropic_replay
from harness.core.replay import kiro as kiro_replay
from harness.core.replay import ollama as ollama_replay
from harness.core.replay import openai as openai_replay
from harness.core.replay import responses as responses_replay
from harness.core.replay.wire import DEFAULT_MODEL
from harness.core.scenario.model import Backend, Fault, Scenario
from harness.core.scenario.steps import has_steps, side_scenario, step_scenarios
from mock_backends.lockstep import Lockstep, LockstepGroups

MAX_RUNS = 10_000
MAX_RECORDED = 10_000  # per run: a benchmark may send far more requests to one run
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # of one answer's body kept for the record; the rest is still sent

NONCE_SHAPE = "tcc-<32 lower-case hex digits>"


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Prepared:
    """A scenario with its replay precomputed, shared by all runs of it."""

    scenario: Scenario
    # The plan of its backend's dialect's replay planner (``OpenAIReplay`` for a Chat Completions
    # backend, ...): what that dialect's route serves from.
    replay: Any
    # A multi-step scenario's later steps (step 2 on) and its answer to side requests (``core.scenario.steps``).
    steps: tuple[Prepared, ...] = ()
    side: Prepared | None = None

    def replay_as(self, kind: type[T]) -> T:
        """Its replay, as the route of its backend's dialect reads it (``kind``, that dialect's plan)."""
        assert isinstance(self.replay, kind)
        return self.replay


# Each dialect's replay planner.
PLANNERS: Mapping[WireDialect, Callable[[Backend], Any]] = {
    OPENAI: openai_replay.prepare, ANTHROPIC: anthropic_replay.prepare, RESPONSES: responses_replay.prepare,
    KIRO: kiro_replay.prepare, OLLAMA: ollama_replay.prepare,
}


def prepare_scenario(scenario: Scenario) -> Prepared:
    if has_steps(scenario):
        first, *later = step_scenarios(scenario)
        return dataclasses.replace(_prepare_one(first), steps=tuple(_prepare_one(s) for s in later),
                                   side=_prepare_one(side_scenario(scenario)))
    return _prepare_one(scenario)


def _prepare_one(scenario: Scenario) -> Prepared:
    backend = scenario.backend
    return Prepared(scenario, PLANNERS[backend.dialect](backend))


@dataclass(eq=False, slots=True)
class AnswerLog:
    """One answer as the mock sends it: written by the response, read by the control API."""

    started: float  # time.monotonic() when the request arrived
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytearray = field(default_factory=bytearray)
    finished: float | None = None  # time.monotonic() when the answer ended
    finished_at: float | None = None  # time.time() then: comparable with another process's clock

    def start(self, status: int, headers: dict[str, str]) -> None:
        self.status, self.headers = status, headers

    def write(self, data: bytes) -> None:
        room = MAX_ANSWER_BYTES - len(self.body)
        if room > 0:
            self.body += data[:room]

    def end(self) -> None:
        if self.finished is None:
            self.finished, self.finished_at = time.monotonic(), time.time()

    def recorded(self) -> RecordedAnswer:
        seconds = None if self.finished is None else self.finished - self.started
        return RecordedAnswer(self.status, dict(self.headers), bytes(self.body), seconds)


@dataclass(eq=False, slots=True)
class Run:
    """One armed scenario run, the requests that reached it and the answers they got."""

    nonce: str
    prepared: Prepared
    requests: deque[RecordedRequest] = field(default_factory=lambda: deque(maxlen=MAX_RECORDED))
    answers: deque[AnswerLog] = field(default_factory=lambda: deque(maxlen=MAX_RECORDED))
    received: int = 0  # all requests, also those no longer kept
    claimed: bool = False  # a request was tied to it: it has left the queue of waiting runs
    lockstep: Lockstep | None = None  # streamed answers released event by event with its group's
    faulted: dict[str, Prepared] = field(default_factory=dict)  # its replay with each rate fault, made once
    # Requests are kept by the server's thread and read by whoever controls the mock, which may be
    # another thread of the same process (``LocalControl``): a request and its answer go in together.
    _kept: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def scenario(self) -> Scenario:
        return self.prepared.scenario

    def with_fault(self, kind: str, fault: Fault) -> Prepared:
        """The run's replay with ``fault`` injected (a fault drawn by the mock's fault rate)."""
        found = self.faulted.get(kind)
        if found is None:
            scenario = self.scenario
            backend = dataclasses.replace(scenario.backend, fault=fault)
            found = self.faulted[kind] = prepare_scenario(dataclasses.replace(scenario, backend=backend))
        return found

    def record(self, request: RecordedRequest) -> AnswerLog:
        """Keep ``request``; the returned log is filled in as its answer is sent."""
        log = AnswerLog(time.monotonic())
        with self._kept:
            self.requests.append(request)
            self.answers.append(log)
            self.received += 1
        return log

    def recorded(self) -> list[RecordedRequest]:
        """Every kept request with its answer so far, oldest first."""
        with self._kept:
            pairs = zip(list(self.requests), list(self.answers))
        return [RecordedRequest(r.method, r.path, r.query, r.headers, r.body, r.raw_body, r.received_at,
                                log.recorded()) for r, log in pairs]

    def activity(self) -> BackendActivity:
        """How busy answering this run has kept the mock, on its own clock."""
        now, logs = time.monotonic(), list(self.answers)
        spans = sorted((log.started, log.finished) for log in logs)
        answering = sum(1 for _, end in spans if end is None)
        ends = [log.finished_at for log in logs if log.finished_at is not None]
        busy, reach = 0.0, float("-inf")
        for start, end in spans:  # the union of the answering intervals
            stop = now if end is None else end
            if stop > reach:
                busy += stop - max(start, reach)
                reach = stop
        return BackendActivity(answering, busy, self.lockstep is not None and self.lockstep.broken,
                               ended_at=max(ends) if ends and not answering else None, clock=time.time())


SelectedBy = Literal["nonce", "queue", "only"]


@dataclass(frozen=True, slots=True)
class Selection:
    """The run a request belongs to, and how it was chosen: by its ``nonce``; without one,
    from the ``queue`` of runs still waiting for their first request; or as the ``only``
    armed run (a retry of a request that had no nonce either)."""

    run: Run
    by: SelectedBy


class RunNotFound(MockError):
    """No armed run answers a request; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class UnknownScenario(MockError):
    """``arm_id`` named a scenario that was not preloaded."""


class Registry:
    """Preloaded scenarios and armed runs; safe to use from several threads."""

    def __init__(self, scenarios: Iterable[Scenario] = (), *, max_runs: int = MAX_RUNS) -> None:
        self._preloaded: dict[str, Prepared] = {}
        for scenario in scenarios:
            if scenario.id in self._preloaded:
                raise MockError(f"scenario id '{scenario.id}' is preloaded twice")
            self._preloaded[scenario.id] = prepare_scenario(scenario)
        self._runs: OrderedDict[str, Run] = OrderedDict()
        self._max_runs = max_runs
        self._lock = threading.Lock()
        self.lockstep = LockstepGroups()

    @property
    def preloaded(self) -> tuple[str, ...]:
        return tuple(self._preloaded)

    def health(self) -> dict[str, Any]:
        """The control API's health answer."""
        return {"status": "ok", "runs": len(self), "preloaded": len(self._preloaded)}

    def __len__(self) -> int:
        return len(self._runs)

    def arm(self, scenario: Scenario, lockstep: Lockstep | None = None) -> Run:
        return self._add(prepare_scenario(scenario), lockstep)

    def arm_id(self, scenario_id: str, lockstep: Lockstep | None = None) -> Run:
        prepared = self._preloaded.get(scenario_id)
        if prepared is None:
            raise UnknownScenario(
                f"no preloaded scenario '{scenario_id}' ({len(self._preloaded)} preloaded); "
                'arm it by content instead: {"scenario": <mapping>}'
            )
        return self._add(prepared, lockstep)

    def _add(self, prepared: Prepared, lockstep: Lockstep | None = None) -> Run:
        run = Run(new_nonce(), prepared, lockstep=lockstep)
        with self._lock:
            self._runs[run.nonce] = run
            while len(self._runs) > self._max_runs:
                self._runs.popitem(last=False)
        return run

    def get(self, nonce: str) -> Run | None:
        return self._runs.get(nonce)

    def armed(self, nonce: str) -> Run:
        """The run ``nonce`` names, for its controller (``RunNotFound`` when there is none)."""
        run = self._runs.get(nonce)
        if run is None:
            raise RunNotFound(404, f"no armed run has nonce {nonce}")
        return run

    def disarm(self, nonce: str) -> bool:
        with self._lock:
            return self._runs.pop(nonce, None) is not None

    def nonces(self) -> list[str]:
        with self._lock:
            return list(self._runs)

    def is_armed(self, nonce: str) -> bool:
        return nonce in self._runs

    def select(self, nonce: str | None) -> Selection:
        """The run a request belongs to: the one its nonce names; without a nonce the
        oldest armed run that has received no request yet, else the only armed run."""
        if nonce is not None:
            run = self._runs.get(nonce)
            if run is None:
                raise RunNotFound(
                    404,
                    f"no armed run has nonce {nonce} (it was never armed, was disarmed, or was evicted; "
                    f"{len(self._runs)} run(s) armed)",
                )
            run.claimed = True
            return Selection(run, "nonce")
        with self._lock:
            for run in self._runs.values():  # oldest first
                if not run.claimed:
                    run.claimed = True
                    return Selection(run, "queue")
            if len(self._runs) == 1:
                return Selection(next(iter(self._runs.values())), "only")
            armed = len(self._runs)
        looked = (
            f"looked for {NONCE_SHAPE} in every header value (the harness sends it as {NONCE_HEADER}) and in the "
            "raw body (the 'user' or 'metadata.user_id' field and the first and last user messages)"
        )
        if not armed:
            raise RunNotFound(400, f"no conformance nonce in the request and no run is armed: {looked}; "
                                   "arm a run with POST /_mock/runs first")
        raise RunNotFound(
            400,
            f"no conformance nonce in the request: {looked}; {armed} run(s) are armed and every one has already "
            "received a request, so none can be chosen without it (without a nonce the mock takes the oldest armed "
            "run that has received no request yet, or the only armed run)",
        )

    def model_names(self) -> list[str]:
        """The models a client may ask for: every armed run's, then the default."""
        with self._lock:
            runs = list(self._runs.values())
        names: dict[str, None] = {}
        for run in runs:
            for name in (run.scenario.client.request.get("model"), run.scenario.backend.model):
                if isinstance(name, str) and name:
                    names[name] = None
        names[DEFAULT_MODEL] = None
        return list(names)
