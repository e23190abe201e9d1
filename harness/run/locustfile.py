"""The soak on Locust: ``ConformanceUser`` plays tagged scenarios through the proxy under test.

Run it headless on one machine with ``toolcall-conformance soak``, or give this file to
Locust itself, on one machine or on a master and its workers (``docs/soak.md``)::

    locust -f "$(python -c 'import importlib.util as u; print(u.find_spec("harness.run.locustfile").origin)')" \\
        --host http://127.0.0.1:8000/v1 --mock-url http://127.0.0.1:9100 --fault-rate 0.05 --fault-seed 1

Each task is one exchange: arm a run of a scenario tagged for this exchange alone, send
its request to the proxy, read the stream, judge it (``harness.judge.soak``), disarm. With
``--client-fault-rate`` a share of exchanges have a client that hangs up after its first
words (then the mock is asked when the proxy's upstream request ended), reads slowly, or
sends its body slowly.
A broken rule is a Locust failure named by the rule id and statement; the request's
name is the scenario id, with the drawn fault in brackets. The mock must be started
with the same ``--fault-rate`` and ``--fault-seed``: the user computes which of its
requests the mock faulted from the run's nonce.
"""

from __future__ import annotations

# Locust first: importing it patches the standard library for gevent, which must happen
# before anything imports ssl or socket (requests, httpx).
from locust import User, constant, events, task  # isort: skip

import itertools
import json
import random
import time
from typing import Any

import gevent  # type: ignore[import-untyped]
import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner
from locust.util.timespan import parse_timespan

from harness.core.client_request import build_request
from harness.core.dialects.profiles import request_headers
from harness.core.exchange import BackendActivity, Exchange
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.model import Scenario
from harness.judge.soak import ClientFaultKind, SoakCase, Verdict, first_content, hang_up_closed, judge, judge_hang_up
from harness.judge.soak_tally import Tally, rss_kb
from harness.run.isolation import new_token, tag
from harness.run.soak_client import Answer, send
from harness.run.soak_settings import Settings, add_options, read_settings

TALLY = Tally()  # this process's exchanges (a worker's since its last report)
OVERALL = Tally()  # on a master: every worker's, merged
RSS: list[tuple[float, int]] = []
_PROGRESS: list[Any] = []  # the greenlet printing progress lines, stopped before the summary
_MASTER: list[Environment] = []  # a master's environment, once its test has started
_STOPPING: list[Any] = []  # the greenlet ending the soak after --soak-duration
_ENOUGH: list[Any] = []  # the greenlet ending it once --soak-exchanges were judged
_CUT_SHORT: list[str] = []  # on a master: why the soak ended before its time
_USERS = itertools.count()  # this process's users, in the order they start
ARM_TRIES = 20  # a hang-up case is armed again until the mock draws no upstream fault for it
POLL_EVERY = 0.05  # seconds between the questions to the mock after a hang-up
# A kept-alive connection the mock closed as a request went out: the control request is sent again.
MOCK_RETRIES = Retry(total=3, backoff_factor=0.1, allowed_methods=None, raise_on_status=False)


class RuleFailure(Exception):
    """A broken rule, as Locust reports a failure: the rule id and its statement."""


_SETTINGS: Settings | None = None


def settings(environment: Environment) -> Settings:
    """The soak's settings, read once per process from Locust's parsed options."""
    global _SETTINGS
    if _SETTINGS is None:
        _SETTINGS = read_settings(environment)
    return _SETTINGS


class ConformanceUser(User):
    """One client of the proxy under test, playing soak exchanges back to back."""

    wait_time = constant(0)

    def on_start(self) -> None:
        self.soak = settings(self.environment)
        self.http = requests.Session()  # to the proxy: as a client, judged
        self.mock = requests.Session()  # to the mock's control API: the soak's own, tried again on a stale connection
        self.mock.mount("http://", HTTPAdapter(max_retries=MOCK_RETRIES))
        runner = self.environment.runner
        self.name = f"{getattr(runner, 'worker_index', 0)}.{next(_USERS)}"  # the same users on every run
        self.rng = random.Random(f"{self.soak.seed}:{self.name}")
        self.played = 0

    def on_stop(self) -> None:
        self.http.close()
        self.mock.close()

    @task
    def exchange(self) -> None:
        soak = self.soak
        case = self.rng.choice(soak.cases)
        number, self.played = self.played, self.played + 1
        client_fault = soak.client_rate.decide(self.name, number) if soak.client_rate is not None else None
        token = new_token()
        hang_up = client_fault == "disconnect" and case.disconnect is not None
        played = tag(case.disconnect if hang_up and case.disconnect is not None else case.scenario, token)
        nonce = self._arm(played, clean=hang_up)
        if nonce is None:
            return
        try:
            if hang_up:
                self._hang_up(case, token, played, nonce)
            else:
                self._play(case, token, played, nonce, client_fault)
        finally:
            try:
                self.mock.delete(f"{soak.mock_url}/_mock/runs/{nonce}", timeout=30)
            except requests.RequestException as exc:
                self.environment.events.request.fire(
                    request_type="DISARM", name=f"the mock at {soak.mock_url}", response_time=0, response_length=0,
                    exception=exc, context={})

    def _arm(self, played: Scenario, clean: bool) -> str | None:
        """Arm ``played``; ``clean``: again until the mock draws no upstream fault for its first request."""
        soak = self.soak
        try:
            for _ in range(ARM_TRIES):
                armed = self.mock.post(f"{soak.mock_url}/_mock/runs", json={"scenario": played.to_mapping()},
                                       timeout=30)
                armed.raise_for_status()
                nonce: str = armed.json()["nonce"]
                if not clean or soak.rate is None or soak.rate.decide(nonce) is None:
                    return nonce
                self.mock.delete(f"{soak.mock_url}/_mock/runs/{nonce}", timeout=30)
            raise ValueError(f"every one of {ARM_TRIES} runs armed drew an upstream fault")
        except (requests.RequestException, ValueError, KeyError) as exc:
            self.environment.events.request.fire(
                request_type="ARM", name=f"the mock at {soak.mock_url}", response_time=0, response_length=0,
                exception=exc, context={})
            return None

    def _request(self, played: Scenario, nonce: str) -> tuple[str, bytes, dict[str, str]]:
        profile = played.client.profile
        body = json.dumps(build_request(played, stream=True, model=None, nonce=nonce), ensure_ascii=False).encode()
        headers = {**request_headers(profile, played.client.headers, {}), NONCE_HEADER: nonce,
                   "content-type": "application/json"}
        return f"{self.soak.proxy_url}{profile.endpoint}", body, headers

    def _exchange(self, played: Scenario, url: str, body: bytes, headers: dict[str, str], answer: Answer,
                  elapsed: float) -> Exchange:
        chunks = answer.chunks
        return Exchange(scenario_id=played.id, profile=played.client.profile, stream=True,
                        request_body=json.loads(body), request_headers=headers, status=answer.status,
                        response_headers=answer.headers, raw=b"".join(c for _, c in chunks), elapsed=elapsed,
                        first_byte=chunks[0][0] if chunks else None, transport_error=answer.error,
                        timed_out=answer.timed_out)

    def _play(self, case: SoakCase, token: str, played: Scenario, nonce: str,
              client_fault: ClientFaultKind | None) -> None:
        soak = self.soak
        fault = soak.rate.decide(nonce) if soak.rate is not None else None
        url, body, headers = self._request(played, nonce)
        start = time.monotonic()
        answer = send(self.http, url, body, headers, client_fault, soak.timeout)
        elapsed = time.monotonic() - start
        exchange = self._exchange(played, url, body, headers, answer, elapsed)
        faulted = tag(case.faulted[fault], token) if fault is not None else None
        verdict = judge(case, token, played, exchange, soak.options[played.client.profile], fault, faulted)
        if verdict.outcome == "failed" and answer.stalled_itself():
            verdict = Verdict("inconclusive", detail=f"the client itself paused {answer.longest_pause:.1f} s")
        TALLY.add(verdict, fault, first_content(answer.chunks), elapsed, client_fault, retried=answer.retries > 0)
        self._report(case.scenario.id + "".join(f" [{f.replace('_', ' ')}]" for f in (fault, client_fault) if f),
                     verdict, elapsed, len(exchange.raw))

    def _hang_up(self, case: SoakCase, token: str, played: Scenario, nonce: str) -> None:
        """Hang up after the first words; then ask the mock whether, and when on its clock, the
        proxy's upstream request ended (``hang_up_closed``)."""
        soak = self.soak
        url, body, headers = self._request(played, nonce)
        start = time.monotonic()
        answer = send(self.http, url, body, headers, "disconnect", soak.timeout)
        elapsed = time.monotonic() - start
        closed_after: float | None = None
        if answer.hung_up is None:  # no first words: the answer itself is wrong, as the rules say
            exchange = self._exchange(played, url, body, headers, answer, elapsed)
            verdict = judge(SoakCase(played, {}), token, played, exchange, soak.options[played.client.profile], None)
        else:
            hung_up_at = time.time() - (time.monotonic() - answer.hung_up)
            while True:
                state = self.mock.get(f"{soak.mock_url}/_mock/runs/{nonce}", timeout=30).json()
                done, closed_after = hang_up_closed(hung_up_at, time.monotonic() - answer.hung_up, state["received"],
                                                    BackendActivity.from_json(state.get("activity") or {}))
                if done:
                    break
                gevent.sleep(POLL_EVERY)
            verdict = judge_hang_up(closed_after)
        TALLY.add(verdict, None, None, elapsed, "disconnect", closed_after, retried=answer.retries > 0)
        self._report(case.scenario.id + " [disconnect]", verdict, elapsed, sum(len(c) for _, c in answer.chunks))

    def _report(self, name: str, verdict: Any, elapsed: float, length: int) -> None:
        self.environment.events.request.fire(
            request_type="POST", name=name, response_time=elapsed * 1000, response_length=length,
            exception=RuleFailure(verdict.failure) if verdict.outcome == "failed" else None,
            context={"detail": verdict.detail},
        )
        if not isinstance(self.environment.runner, WorkerRunner):  # a worker's master counts its reports
            _stop_when_due(self.environment)


# --------------------------------------------------------------------------- progress and summary


def current(environment: Environment) -> Tally:
    """Everything counted so far: a master's merged tally, else this process's."""
    return OVERALL if isinstance(environment.runner, MasterRunner) else TALLY


def _report(client_id: str, data: dict[str, Any]) -> None:
    data["toolcall_conformance"] = TALLY.take()


def _gather(client_id: str, data: dict[str, Any]) -> None:
    OVERALL.merge(data.get("toolcall_conformance", {}))
    if OVERALL.exchanges and _MASTER:
        _stop_when_due(_MASTER[0])


def _progress(environment: Environment, every: float, pid: int) -> None:
    started = time.monotonic()
    while True:
        gevent.sleep(every)
        elapsed = time.monotonic() - started
        if pid:
            kb = rss_kb(pid)
            if kb is not None:
                RSS.append((elapsed, kb))
        runner = environment.runner
        users = runner.user_count if runner is not None else 0
        print(current(environment).progress(elapsed, users), flush=True)


def _init(environment: Environment, **_: Any) -> None:
    """Read the library, build the cases and judge one made-up answer before any user starts:
    the rules import the SDKs on first use, which would stall every user at once."""
    # Not on a worker: the master sends it the soak's options when the test starts (`_start`).
    if environment.parsed_options is not None and not isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        _warm(settings(environment))


def _warm(soak: Settings) -> None:
    """Judge one made-up answer, so that the SDKs the rules use are imported before any user starts."""
    if soak.cases:
        case = soak.cases[0]
        warm = Exchange(scenario_id=case.scenario.id, profile=case.scenario.client.profile, stream=True,
                        request_body={}, request_headers={}, status=200,
                        response_headers={"content-type": "text/event-stream"}, raw=b"data: [DONE]\n\n")
        judge(case, new_token(), case.scenario, warm, soak.options[case.scenario.client.profile], None)


def _prepare(environment: Environment) -> None:
    """Read the options again (a worker has just received the master's), build the cases, warm the judge."""
    global _SETTINGS
    _SETTINGS = None
    _warm(settings(environment))


def _start(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        # Seconds of work, on a thread of its own: on the event loop it would silence the worker's
        # heartbeats, and a master that hears none for about four seconds counts its last worker
        # missing and stops the test for good (locustio/locust#1707). Users start after this.
        gevent.get_hub().threadpool.apply(_prepare, (environment,))
        return
    if not isinstance(environment.runner, MasterRunner):
        _prepare(environment)
    opts = environment.parsed_options
    pid = int(getattr(opts, "proxy_pid", 0) or 0)
    if pid:
        kb = rss_kb(pid)
        if kb is not None:
            RSS.append((0.0, kb))
    _PROGRESS.append(gevent.spawn(_progress, environment, float(getattr(opts, "progress_every", 5.0)), pid))
    if isinstance(environment.runner, MasterRunner):
        # The soak's time runs from the workers' first report of exchanges (`_gather`), after they prepared.
        _MASTER.append(environment)
    else:
        _stop_when_due(environment)


def _stop_when_due(environment: Environment) -> None:
    """Stop at --soak-duration, or once --soak-exchanges were judged (those in flight finish and count)."""
    opts, runner = environment.parsed_options, environment.runner
    duration, limit = str(getattr(opts, "soak_duration", "") or ""), int(getattr(opts, "soak_exchanges", 0) or 0)
    if duration and runner is not None and not _STOPPING:
        _STOPPING.append(gevent.spawn_later(parse_timespan(duration), runner.quit))
    if limit > 0 and current(environment).exchanges >= limit and runner is not None and not _ENOUGH:
        _ENOUGH.append(gevent.spawn(runner.quit))


def _stopped(environment: Environment, **_: Any) -> None:
    """A headless master whose last worker went missing stops the test and runs on with no
    users (for ever, when no exchange was reported yet): end the soak there, failed, saying why."""
    if (isinstance(runner := environment.runner, MasterRunner) and getattr(environment.parsed_options, "headless", False)
            and not runner.worker_count and runner.clients.missing and not _CUT_SHORT):
        _CUT_SHORT.append("every worker went missing (no heartbeat for seconds) and Locust stopped the test")
        print(f"soak: {_CUT_SHORT[0]}", flush=True)
        gevent.spawn(runner.quit)


def _summary(environment: Environment, **_: Any) -> None:
    if isinstance(environment.runner, WorkerRunner):
        return
    for greenlet in _PROGRESS:
        greenlet.kill()
    opts = environment.parsed_options
    pid = int(getattr(opts, "proxy_pid", 0) or 0) if opts is not None else 0
    if pid:
        kb = rss_kb(pid)
        if kb is not None and RSS:
            RSS.append((RSS[-1][0], kb))
    tally = current(environment)
    print(tally.summary(RSS, "; ".join(_CUT_SHORT)), flush=True)
    if _CUT_SHORT or not tally.passed(RSS):
        environment.process_exit_code = 1  # a soak check failed even where no exchange did (SOAK-002)


# Locust's listener registration is untyped.
for hook, listener in ((events.init_command_line_parser, add_options), (events.report_to_master, _report),
                       (events.worker_report, _gather), (events.init, _init), (events.test_start, _start),
                       (events.test_stop, _stopped), (events.quitting, _summary)):
    hook.add_listener(listener)  # type: ignore[no-untyped-call]
