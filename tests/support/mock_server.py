"""The mock backend as the mock's own tests use it: served on a loopback port, with its
control client and an HTTP client."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from harness.core.nonce import NONCE_HEADER
from harness.core.replay.wire import DEFAULT_MODEL
from harness.core.scenario.model import Scenario
from harness.run.servers import serve
from mock_backends.app import create_app
from mock_backends.control import MockControl
from support.servers import ServeFn

# (mock root URL, its control client, an HTTP client: one, since building one costs more than a request)
Mock = tuple[str, MockControl, httpx.Client]


def http_client() -> httpx.Client:
    """Fresh connections: on a reused loopback connection without TCP_NODELAY each response
    would wait ~40 ms for a delayed ACK. The SDK and control clients keep reusing theirs."""
    return httpx.Client(timeout=10, limits=httpx.Limits(max_keepalive_connections=0))


@pytest.fixture(scope="module")
def shared() -> Iterator[Mock]:
    """One mock for the tests that address their runs by nonce (each arms its own)."""
    with serve(create_app()) as server, MockControl(server.url) as control, http_client() as http:
        yield server.url, control, http


@pytest.fixture
def fresh(servers: ServeFn) -> Iterator[Mock]:
    """A mock with nothing armed, for tests that depend on how many runs exist."""
    url = servers(create_app()).url
    with MockControl(url) as control, http_client() as http:
        yield url, control, http


def compact(value: Any) -> bytes:
    """JSON as the mock writes it: one line, no spaces, text unescaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def answer_model(scenario: Scenario, body: Mapping[str, Any]) -> str:
    """The model an answer names: the backend's own, else the request's."""
    return scenario.backend.model or body.get("model") or DEFAULT_MODEL


def answers_stream(scenario: Scenario, body: Mapping[str, Any]) -> bool:
    """Whether the answer streams: as the backend forces it, else as the request asks."""
    forced = scenario.backend.stream
    return body.get("stream") is True if forced == "auto" else bool(forced)


def read_until_closed(http: httpx.Client, url: str, body: Mapping[str, Any], nonce: str
                      ) -> tuple[httpx.Response, bytes, str | None]:
    """The response head, every body byte that arrived, and the transport error that ended it (if any)."""
    pieces: list[bytes] = []
    with http.stream("POST", url, json=body, headers={NONCE_HEADER: nonce}) as response:
        try:
            pieces.extend(response.iter_raw())
        except httpx.TransportError as exc:
            return response, b"".join(pieces), type(exc).__name__
    return response, b"".join(pieces), None


@dataclass(frozen=True)
class RouteKit:
    """One route of the mock as the tests that hold for every route drive it: a scenario
    from plain data, a raw post, the check of an answer against the scenario's frames, the
    official SDK's reading, and the route's paths."""

    name: str
    make_scenario: Callable[..., Scenario]
    post: Callable[..., httpx.Response]
    check_answer: Callable[[httpx.Response, Scenario, Mapping[str, Any]], None]
    # The text and the listed model ids the official SDK reads, with its base URL at ``url + prefix``.
    sdk_reads: Callable[[str, str, str, Mapping[str, Any]], tuple[str, list[str]]]
    endpoint: str  # the path its clients post to by default
    paths: tuple[str, ...]  # paths, under any prefix, that reach it
    query: str  # a query string its clients add
    sdk_prefixes: tuple[str, ...]  # base-URL paths its SDK may be given
    answer_id: bytes  # how a whole answer's JSON begins
    fault_frames: tuple[Any, ...]  # an answer a fault cuts

