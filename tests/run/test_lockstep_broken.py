"""A lockstep round that broke (a step waited past its patience, and the answers flowed freely) is read,
played again, and said: never judged as if it had been played in step."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.nonce import NONCE_HEADER
from harness.core.client_request import build_request
from harness.run.runner import play
from harness.run.servers import serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app as create_mock
from mock_backends.control import Lockstep, MockControl
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}
ROUND = LIBRARY["isolation-hermes-in-flight"]


class OneAtATime:
    """A proxy that holds every request back until the one before it is answered in full: concurrent
    clients never reach the backend together, so a lockstep step waits for members that cannot come."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.lock: asyncio.Lock | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.lock is None:
            self.lock = asyncio.Lock()
        async with self.lock:
            await self.app(scope, receive, send)


@pytest.fixture(scope="module")
def mock() -> Iterator[tuple[MockControl, str]]:
    with serve(create_mock()) as server, MockControl(server.url) as control:
        yield control, server.url


def test_the_mock_says_when_a_group_broke(mock: tuple[MockControl, str]) -> None:
    control, url = mock
    group = Lockstep("broken-on-purpose", size=2, patience=0.2)
    scenario = LIBRARY["plain-native-single"]
    present, absent = control.arm(scenario, lockstep=group), control.arm(scenario, lockstep=group)
    body = build_request(scenario, stream=True, model=None, nonce=present)
    answer = httpx.post(f"{url}/v1/chat/completions", json=body, headers={NONCE_HEADER: present}, timeout=30)
    assert answer.status_code == 200 and "[DONE]" in answer.text  # free-flowing once the group broke
    assert control.activity(present).lockstep_broken
    control.disarm(present)
    control.disarm(absent)


def test_a_round_whose_lockstep_breaks_is_played_again_then_judged_as_free_flowing(
        mock: tuple[MockControl, str]) -> None:
    control, url = mock
    with serve(OneAtATime(create_app(ProxyConfig(upstream=f"{url}/v1", log_level="warning")))) as proxy:
        run = play(ROUND, settings=RunSettings(proxy_url=f"{proxy.url}/v1", timeout=4.0), mock=control,
                   profile=CLIENTS["openai"])
    isolation = next(a for a in run.attempts if a.kind == "isolation")
    assert "broke their lockstep on every play (2;" in isolation.label
    assert "judged as free-flowing concurrent streams, not in lockstep" in isolation.label
