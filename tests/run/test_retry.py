"""Faults stay in their scenario: the harness retries a 429/503 with Retry-After as the official SDKs do,
and a proxy whose circuit breaker locks its backend for a while after an upstream 401 or 429 passes every
case a retrying SDK client would see succeed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.retry import MAX_RETRIES, plan_retry
from harness.run.runner import play
from harness.run.servers import serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}
NOW = 1_800_000_000.0


@pytest.mark.parametrize(("status", "headers", "done", "delay"), [
    (429, {"retry-after": "1"}, 0, 1.0),
    (503, {"retry-after": "2"}, 1, 2.0),
    (429, {"retry-after-ms": "1500", "retry-after": "9"}, 0, 1.5),  # milliseconds win, as in the SDKs
    (429, {"retry-after": "Wed, 21 Jan 2027 08:00:03 GMT"}, 0, None),  # a date: counted from now (below)
    (429, {"retry-after": "0"}, 1, 1.0),  # no wait asked: the SDKs' back-off, 0.5 s doubled
    (429, {"retry-after": "61"}, 0, None),  # past the bound: the client gives up rather than hang
    (429, {}, 0, None),  # no word that a retry would help: judged as answered
    (500, {"retry-after": "1"}, 0, None),  # only 429 and 503 are retried
    (429, {"retry-after": "1"}, MAX_RETRIES, None),  # bounded
    (429, {"retry-after": "soon"}, 0, None),
])
def test_retry_policy(status: int, headers: dict[str, str], done: int, delay: float | None) -> None:
    planned = plan_retry(status, headers, done, NOW)
    assert (planned.delay if planned is not None else None) == delay


def test_retry_after_as_a_date() -> None:
    planned = plan_retry(429, {"retry-after": "Fri, 15 Jan 2027 08:00:03 GMT"}, 0, NOW)
    assert planned is not None and planned.delay == pytest.approx(3.0)
    assert "HTTP 429 with retry-after" in planned.describe()


class CircuitBreaker:
    """A proxy in front of the reference proxy that, after answering an upstream 401 or 429, refuses the
    next ``lockout`` requests with 503 and ``Retry-After: 1``, as proxies with a circuit breaker do
    (e.g. LiteLLM's cooldown of a deployment after a 429: https://docs.litellm.ai/docs/routing#cooldowns)."""

    def __init__(self, app: Any, lockout: int) -> None:
        self.app = app
        self.lockout = lockout
        self.locked = 0
        self.refused = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.locked > 0:
            self.locked -= 1
            self.refused += 1
            body = json.dumps({"error": {"message": "backend cooling down", "type": "server_error",
                                         "param": None, "code": "cooldown"}}).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"), (b"retry-after", b"1"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] in (401, 429):
                self.locked = self.lockout
            await send(message)

        await self.app(scope, receive, watch)


@pytest.fixture(scope="module")
def rig() -> Iterator[tuple[MockControl, str, CircuitBreaker]]:
    with serve(create_mock()) as mock_server, MockControl(mock_server.url) as mock:
        breaker = CircuitBreaker(create_app(ProxyConfig(upstream=f"{mock_server.url}/v1", log_level="warning")),
                                 lockout=1)
        with serve(breaker) as proxy:
            yield mock, f"{proxy.url}/v1", breaker


@pytest.mark.parametrize("fault", ["faults-openai-http-401", "faults-openai-http-429-retry-after"])
def test_a_locked_out_proxy_passes_what_a_retrying_client_sees_succeed(
        rig: tuple[MockControl, str, CircuitBreaker], fault: str) -> None:
    mock, url, breaker = rig
    settings = RunSettings(proxy_url=url, rechunk=0)
    profile = CLIENTS["openai"]
    faulted = play(LIBRARY[fault], settings=settings, mock=mock, profile=profile)
    # The fault case itself still gets its error, and its survival probe retries past the lockout.
    assert faulted.failed_rules == []
    refused = breaker.refused
    breaker.locked = 1  # the lockout outlives the fault case: the next case meets it
    after = play(LIBRARY["plain-native-single"], settings=settings, mock=mock, profile=profile)
    assert after.failed_rules == []
    assert breaker.refused == refused + 1
    retried = [r for a in after.attempts if a.exchange is not None for r in a.exchange.retries]
    assert retried == ["HTTP 503 with retry-after: 1: retried after 1.0 s, as the official SDKs do"]


def test_fault_cases_play_last() -> None:
    from harness.pytest.items import play_order

    ordered = play_order(list(LIBRARY.values()))
    first_fault = next(n for n, s in enumerate(ordered) if s.backend.fault is not None)
    assert first_fault > 0 and all(s.backend.fault is not None for s in ordered[first_fault:])
    assert [s.id for s in ordered if s.backend.fault is None] == [
        s.id for s in LIBRARY.values() if s.backend.fault is None]


def test_a_case_that_expects_the_error_is_not_retried(rig: tuple[MockControl, str, CircuitBreaker]) -> None:
    mock, url, breaker = rig
    breaker.locked = 0
    run = play(LIBRARY["faults-openai-http-429-retry-after"], settings=RunSettings(proxy_url=url, rechunk=0),
               mock=mock, profile=CLIENTS["openai"])
    assert run.attempts[0].exchange is not None
    assert run.attempts[0].exchange.status == 429 and run.attempts[0].exchange.retries == ()
