"""Is the run wired right, and is the proxy still well: whether anything listens at its
URL, the preflight exchange before the scenarios, and the health probe between them.

A miswired run (the proxy calls a port where no mock listens, or answers 404 to
everything) is one diagnosis, not a hundred failures; a proxy that stops answering
after some scenario (a circuit breaker, a crash, a hang) is named once, and the
scenarios after it carry that cause instead of each costing the timeout.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.core.client_request import PROBE_QUESTION, probe_scenario
from harness.core.dialects import WireDialect, posted_to
from harness.core.dialects.clients import Profile
from harness.core.errors import ProxyUnreachable
from harness.core.exchange import Exchange
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.proxy_client import run_exchange
from mock_backends.control import Control


PREFLIGHT_QUESTION = "Say yes."


def is_probe(body: Mapping[str, object]) -> bool:
    """Whether a request is one of the run's own probes (the preflight, the health probe), not a
    case: a recorder in front of the mock lets them by."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    content = last.get("content") if isinstance(last, Mapping) else None
    return isinstance(content, str) and content.startswith((PREFLIGHT_QUESTION, PROBE_QUESTION))

# How long an unhealthy proxy is given to answer again before a scenario played while it was unhealthy is
# reported inconclusive: a probe after each wait (seconds), about what a circuit breaker's cool-down lasts.
RECOVERY_WAITS = (1.0, 2.0, 4.0)


def plain_scenario(profile: Profile, upstream: WireDialect) -> Scenario:
    """One plain question in the client's dialect, answered ``yes`` by a backend of ``upstream``."""
    request: dict[str, object] = {"model": "preflight", "messages": [{"role": "user", "content": PREFLIGHT_QUESTION}]}
    if profile.written_in.requests.needs_max_tokens:
        request["max_tokens"] = 16
    return parse_scenario({
        "id": f"preflight-{profile.name}-{upstream.name}", "title": "preflight", "source": "synthetic",
        "stream_equivalence": False, "backend": {"dialect": upstream.name, "frames": ["yes"]},
        "client": {"profile": profile.case_profile.name, "profiles": [profile.case_profile.name], "request": request},
        "expect": {"content": "yes"},
    })


@dataclass(frozen=True)
class Preflight:
    """One plain exchange: whether it reached the mock on the route of the backend the run armed,
    and what the client got."""

    url: str
    exchange: Exchange | None
    unreachable: str | None = None
    armed: WireDialect | None = None  # the dialect of the backend the preflight armed

    @property
    def called(self) -> list[tuple[str, WireDialect | None]]:
        """Each request the proxy sent the mock: its path and the dialect whose route that is."""
        upstream = self.exchange.upstream if self.exchange is not None else ()
        return [(r.path, posted_to(r.path)) for r in upstream if r.method == "POST"]

    @property
    def wrong_dialect(self) -> WireDialect | None:
        """The dialect the proxy called when it is not the one the run armed (and none was the armed one)."""
        called = [d for _, d in self.called]
        if self.armed is None or not called or self.armed in called:
            return None
        return next((d for d in called if d is not None), None)

    @property
    def reached_mock(self) -> bool:
        return self.exchange is not None and bool(self.exchange.upstream) and self.wrong_dialect is None

    def diagnosis(self, mock_url: str, *, mock_served: bool, port_given: bool = False) -> str:
        """What went wrong, in a few lines, and what to change: said once, and never an option already given."""
        wrong = self.wrong_dialect
        if wrong is not None and self.armed is not None:
            path = next(p for p, d in self.called if d is wrong)
            return "\n".join([
                f"preflight: the proxy called the mock's {wrong.title} route (POST {path}), but the run expects "
                f"its upstream to speak {self.armed.title} ({self.armed.endpoint})",
                f"  your proxy calls the {wrong.title} API upstream: pass --upstream-dialect {wrong.name} "
                f"(pytest: --conformance-upstream-dialect {wrong.name})",
            ])
        lines = [f"preflight: a plain request through the proxy never reached the mock backend "
                 f"(0 requests received)", f"  posted to: POST {self.url}"]
        ex = self.exchange
        if self.unreachable is not None:
            lines.append(f"  received: nothing ({self.unreachable})")
        elif ex is not None:
            if ex.timed_out:
                lines.append("  received: no complete answer before the timeout")
            elif ex.transport_error:
                lines.append(f"  received: {ex.transport_error}")
            else:
                body = ex.raw[:300].decode("utf-8", "replace").strip()
                lines.append(f"  received: HTTP {ex.status} {body!r}")
        lines.append(f"  the proxy's upstream should be the mock backend: {mock_url}/v1")
        if mock_served and not port_given:
            lines.append("  (the mock's port changes each run unless fixed: pass --mock-port PORT and configure the "
                         "proxy's upstream with it)")
        return "\n".join(lines)


def preflight(scenario: Scenario, *, proxy_url: str, mock: Control, profile: Profile, model: str | None,
              proxy_headers: Mapping[str, str], timeout: float) -> Preflight:
    url = f"{proxy_url.rstrip('/')}{profile.endpoint}"
    try:
        exchange = run_exchange(scenario, proxy_url=proxy_url, mock=mock, stream=False, profile=profile, model=model,
                                proxy_headers=proxy_headers, timeout=timeout)
    except ProxyUnreachable as exc:
        return Preflight(url, None, str(exc), armed=scenario.backend.dialect)
    return Preflight(url, exchange, armed=scenario.backend.dialect)


@dataclass
class Health:
    """What this process knows of the proxy's health between scenarios."""

    since: str | None = None  # the scenario after which the proxy stopped answering plain requests
    detail: str = ""
    hangs: bool = False  # the health probe itself got no answer: later scenarios are not played
    waited: bool = False  # a wait for recovery was spent and the proxy has not answered since

    @property
    def unhealthy(self) -> bool:
        return self.since is not None

    def cause(self) -> str:
        what = "the health probe hangs" if self.hangs else self.detail
        return f"proxy unhealthy since scenario {self.since} ({what})"

    def check(self, after: Scenario, *, proxy_url: str, mock: Control, profile: Profile, model: str | None,
              proxy_headers: Mapping[str, str], timeout: float) -> None:
        """Probe the proxy with a plain request after ``after``; remember when it stops answering."""
        probe = probe_scenario(after, profile)
        try:
            ex = run_exchange(probe, proxy_url=proxy_url, mock=mock, stream=False, profile=profile, model=model,
                              proxy_headers=proxy_headers, timeout=timeout)
        except ProxyUnreachable:
            self._sick(after, "it no longer accepts connections", hangs=True)
            return
        if ex.timed_out:
            self._sick(after, f"a plain request got no answer within {timeout:g} s", hangs=True)
        elif ex.transport_error is not None or ex.status != 200:
            got = ex.transport_error or f"HTTP {ex.status}"
            self._sick(after, f"a plain request got {got}", hangs=False)
        else:
            self.since, self.detail, self.hangs, self.waited = None, "", False, False

    def recover(self, after: Scenario, *, proxy_url: str, mock: Control, profile: Profile, model: str | None,
                proxy_headers: Mapping[str, str], timeout: float, waits: Sequence[float] | None = None) -> bool:
        """Wait for an unhealthy proxy to answer a plain request again, probing after each of ``waits``
        (seconds); False once they are spent, or at once when a wait already failed and the proxy has not
        answered since (so a proxy that stays down costs the wait once, not once per scenario)."""
        if self.hangs or self.waited:
            return False
        for wait in RECOVERY_WAITS if waits is None else waits:
            time.sleep(wait)
            self.check(after, proxy_url=proxy_url, mock=mock, profile=profile, model=model,
                       proxy_headers=proxy_headers, timeout=timeout)
            if not self.unhealthy:
                return True
        self.waited = True
        return False

    def _sick(self, after: Scenario, detail: str, *, hangs: bool) -> None:
        if self.since is None:
            self.since = after.id
        self.detail, self.hangs = detail, hangs


def _unreachable(url: str, timeout: float) -> str | None:
    """Why nothing accepts connections at ``url``, or None when something does."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        return f"not a valid URL: {exc}"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return "not an http:// or https:// URL"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def wait_for_listener(url: str, seconds: float, *, connect_timeout: float) -> str | None:
    """Like ``_unreachable``, but tries again until ``seconds`` have passed: a proxy a CI
    job has just started takes a moment to listen."""
    import time

    give_up = time.monotonic() + max(seconds, 0.0)
    while True:
        problem = _unreachable(url, connect_timeout)
        if problem is None or problem.startswith("not ") or time.monotonic() >= give_up:
            return problem  # reachable, not a URL at all, or out of patience
        time.sleep(min(0.2, max(0.0, give_up - time.monotonic())))
