"""Frame delays in both dialects: the mock waits before each frame, and a whole answer
comes only once every frame would have been generated.

Only lower bounds, measured from the moment the request leaves the client: a loaded
machine can make anything later, never earlier, so these hold under any load.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from harness.core.dialects.frames import ContentFrame
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.servers import RunningServer
from mock_backends.app import create_app
from mock_backends.control import MockControl

ServeFn = Callable[[Any], RunningServer]

BACKEND_DELAY_MS = 150
# The middle frame's own delay replaces the backend's: a mock that ignored it would send that frame 100 ms early.
FRAMES: list[Any] = [{"content": "alpha "}, {"content": "bravo ", "delay_ms": 250}, {"content": "charlie"}]
SLACK = 0.9  # timers may fire a little early; a mock that ignores a delay is far earlier

# dialect: (route, client section of the scenario)
DIALECTS: dict[str, tuple[str, dict[str, Any]]] = {
    "openai": ("/v1/chat/completions", {"request": {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}}),
    "anthropic": ("/v1/messages", {"profile": "anthropic", "request": {
        "model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "Hi"}]}}),
}


def _scenario(dialect: str, stream: bool) -> Scenario:
    _, client = DIALECTS[dialect]
    return parse_scenario({
        "id": f"delays-{dialect}", "title": "t", "source": "synthetic",
        "backend": {"dialect": dialect, "frames": FRAMES, "delay_ms": BACKEND_DELAY_MS},
        "client": {**client, "request": {**client["request"], "stream": stream}},
        "expect": {},
    })


def _due(scenario: Scenario) -> list[tuple[str, float]]:
    """Each frame's text and the earliest time after the request it may arrive (seconds)."""
    due, total = [], 0.0
    for frame in scenario.backend.frames:
        assert isinstance(frame, ContentFrame)
        total += (BACKEND_DELAY_MS if frame.delay_ms is None else frame.delay_ms) / 1000
        due.append((frame.content, total))
    return due


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("dialect", list(DIALECTS))
def test_frame_delays_are_waited(servers: ServeFn, dialect: str, stream: bool) -> None:
    url = servers(create_app()).url
    path = DIALECTS[dialect][0]
    scenario = _scenario(dialect, stream)
    due = _due(scenario)
    arrived: dict[str, float] = {}
    with MockControl(url) as control, httpx.Client(timeout=10) as http:
        nonce = control.arm(scenario)
        received = b""
        start = time.monotonic()
        with http.stream("POST", url + path, json=scenario.client.request, headers={NONCE_HEADER: nonce}) as response:
            assert response.status_code == 200
            for piece in response.iter_raw():
                received += piece
                for text, _ in due:
                    if text not in arrived and f'"{text}"'.encode() in received:
                        arrived[text] = time.monotonic() - start
        finished = time.monotonic() - start
    if stream:
        assert set(arrived) == {text for text, _ in due}, received
        for text, earliest in due:
            assert arrived[text] >= earliest * SLACK, f"{text!r} after {arrived[text]:.3f} s, due {earliest:.3f} s"
        assert [arrived[text] for text, _ in due] == sorted(arrived.values())
    else:
        assert f'"{scenario.backend.text}"'.encode() in received, received
        total = due[-1][1]
        assert finished >= total * SLACK, f"the whole answer came after {finished:.3f} s, before {total:.3f} s"
