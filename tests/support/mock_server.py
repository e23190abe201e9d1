"""The mock backend as the mock's own tests use it: served on a loopback port, with its
control client and an HTTP client."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

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
