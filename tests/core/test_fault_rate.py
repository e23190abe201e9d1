"""Faults at a rate: which requests the mock faults, and that the client can tell which."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

from harness.core.nonce import place_nonce
from harness.core.replay.fault_rate import FAULT_KINDS, FaultRate
from mock_backends.app import FAULT_HEADER, create_app
from mock_backends.control import MockControl
from support.library import load_library

NONCES = [f"tcc-{i:032x}" for i in range(4000)]
SCENARIO = next(s for s in load_library() if s.id == "isolation-hermes-in-flight")


@pytest.mark.parametrize("rate", [0.0, 0.05, 0.5, 1.0])
def test_the_share_faulted_is_the_rate(rate: float) -> None:
    drawn = [FaultRate(rate, seed=7).decide(n) for n in NONCES]
    share = sum(k is not None for k in drawn) / len(NONCES)
    assert abs(share - rate) <= 0.02
    if rate:
        assert set(Counter(k for k in drawn if k)) == set(FAULT_KINDS)


def test_a_draw_depends_on_seed_nonce_and_attempt_only() -> None:
    a, b = FaultRate(0.3, seed=1), FaultRate(0.3, seed=2)
    assert [a.decide(n) for n in NONCES] == [FaultRate(0.3, seed=1).decide(n) for n in NONCES]
    assert [a.decide(n) for n in NONCES] != [b.decide(n) for n in NONCES]
    assert [a.decide(n, 0) for n in NONCES] != [a.decide(n, 1) for n in NONCES]


@pytest.mark.parametrize("bad", [{"rate": -0.1}, {"rate": 1.5}, {"rate": 0.1, "stall_seconds": -1}])
def test_a_rate_out_of_range_is_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        FaultRate(**bad)


def test_the_mock_faults_the_requests_the_client_can_compute(servers: Any) -> None:
    """Every request at rate 1 is faulted as ``decide`` says (the client knows which and
    how from the nonce alone), and each kind is what it claims to be."""
    rate = FaultRate(1.0, seed=3, stall_seconds=0.0)
    url = servers(create_app(fault_rate=rate)).url
    seen: dict[str, int] = {}
    with MockControl(url) as mock, httpx.Client() as http:
        for _ in range(24):
            nonce = mock.arm(SCENARIO)
            body = place_nonce({**SCENARIO.client.request, "stream": True}, nonce)
            kind = rate.decide(nonce)
            assert kind is not None
            try:
                answer = http.post(f"{url}/v1/chat/completions", json=body)
            except httpx.RemoteProtocolError:
                assert kind == "drop"  # the connection closed mid-body
                seen[kind] = seen.get(kind, 0) + 1
                continue
            assert answer.headers[FAULT_HEADER] == kind
            if kind == "http_503":
                assert answer.status_code == 503 and answer.json()["error"]["type"] == "server_error"
            elif kind == "http_429":
                assert answer.status_code == 429 and answer.headers["retry-after"] == "1"
            elif kind == "stall":
                assert answer.status_code == 200 and answer.content.endswith(b"data: [DONE]\n\n")
            seen[kind] = seen.get(kind, 0) + 1
    assert set(seen) == set(FAULT_KINDS)


def test_a_run_with_its_own_fault_keeps_it(servers: Any) -> None:
    scenario = next(s for s in load_library() if s.id == "faults-openai-http-500")
    url = servers(create_app(fault_rate=FaultRate(1.0, seed=3))).url
    with MockControl(url) as mock:
        nonce = mock.arm(scenario)
        answer = httpx.post(f"{url}/v1/chat/completions", json=place_nonce(dict(scenario.client.request), nonce))
    assert answer.status_code == 500 and FAULT_HEADER not in answer.headers
