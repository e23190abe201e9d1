"""The soak's client faults and default workload: a hang-up closes the proxy's upstream
request (as the mock sees it), a proxy deaf to hang-ups is caught, every default case
is judged fairly under every drawn upstream fault, and the soak checks' arithmetic."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import PurePath
from typing import Any

import httpx
import pytest
from mutants.base import proxy_config, reference
from mutants.hang_up import deaf_to_hang_ups

from harness.core.dialects.profiles import request_headers
from harness.core.exchange import Exchange
from harness.core.nonce import NONCE_HEADER
from harness.core.replay.fault_rate import FAULT_KINDS
from harness.core.scenario.loading import bundled_scenarios_dir
from harness.core.scenario.model import Scenario
from harness.judge.rules import Options
from harness.judge.soak import (
    CLIENT_FAULT_KINDS,
    DISCONNECT_FRAMES,
    FIRST_CONTENT,
    ClientFaultRate,
    Verdict,
    default_workload,
    folder,
    judge,
    judge_hang_up,
    soak_cases,
    soakable,
)
from harness.judge.soak_tally import Tally, memory_check
from harness.run.isolation import new_token, tag
from harness.core.client_request import build_request
from harness.run.soak_client import Answer
from mock_backends.app import create_app
from mock_backends.control import MockControl
from support.fault_rig import FaultRig, fault_rig  # noqa: F401  (fault_rig: the module's faulting mock and proxy)
from support.library import load_library

ROOT = PurePath(bundled_scenarios_dir())
LIBRARY = load_library()
WORKLOAD = default_workload(LIBRARY, ROOT)
BY_ID = {s.id: s for s in LIBRARY}
LAST_WORDS = f"Word {DISCONNECT_FRAMES - 1} of ".encode()


def test_the_default_workload_plays_one_case_of_every_folder_a_soak_can_play() -> None:
    playable = {folder(s, ROOT) for s in LIBRARY if soakable(s)}
    isolation = [s for s in WORKLOAD if "isolation" in s.tags]
    others = Counter(folder(s, ROOT) for s in WORKLOAD if "isolation" not in s.tags)
    assert all(soakable(s) for s in WORKLOAD)
    assert {s.id for s in isolation} == {s.id for s in LIBRARY if "isolation" in s.tags and soakable(s)}
    assert set(others) | {folder(s, ROOT) for s in isolation} == playable and max(others.values()) == 1
    # Both client APIs, and the families of text calls as well as native ones.
    assert {s.client.profile.name for s in WORKLOAD} >= {"openai", "anthropic"} and len(others) >= 20


def _send(proxy_url: str, played: Scenario, nonce: str, *, hang_up: bool) -> Exchange:
    profile = played.client.profile
    body = build_request(played, stream=True, model=None, nonce=nonce)
    headers = {**request_headers(profile, played.client.headers, {}), NONCE_HEADER: nonce}
    raw = b""
    with httpx.Client(timeout=30) as http, http.stream("POST", f"{proxy_url}{profile.endpoint}", json=body,
                                                        headers=headers) as answer:
        for chunk in answer.iter_raw():
            raw += chunk
            if hang_up and FIRST_CONTENT.search(raw):
                break  # leaving the block closes the response unread: its connection with it
    return Exchange(scenario_id=played.id, profile=profile, stream=True, request_body=body, request_headers=headers,
                    status=answer.status_code, response_headers={k.lower(): v for k, v in answer.headers.items()},
                    raw=raw)


@pytest.mark.parametrize("scenario", WORKLOAD, ids=[s.id for s in WORKLOAD])
def test_every_default_case_is_handled_under_every_drawn_fault(scenario: Scenario, fault_rig: FaultRig) -> None:
    """Through the reference proxy, each case of the default workload, played clean and with
    each upstream fault, is judged as a correct proxy's answer deserves."""
    rate = fault_rig.rate
    case = soak_cases([scenario], rate, delay_ms=1.0)[0]
    options = Options(profile=scenario.client.profile)
    with MockControl(fault_rig.mock_url) as mock:
        for kind in FAULT_KINDS:
            token = new_token()
            played = tag(case.scenario, token)
            nonce = next(n for n in (mock.arm(played) for _ in range(200)) if rate.decide(n) == kind)
            exchange = _send(fault_rig.proxy_url, played, nonce, hang_up=False)
            verdict = judge(case, token, played, exchange, options, kind, tag(case.faulted[kind], token))
            assert verdict.outcome == "faulted-handled", (kind, verdict, exchange.raw[-600:])


def _hang_up(proxy: Any, mock_url: str, scenario: Scenario) -> bytes:
    """Play ``scenario``'s hang-up case, hang up after the first words, and return what the
    mock had sent when its answer ended (the whole answer takes seconds)."""
    played = tag(soak_cases([scenario], None, client_faults=True)[0].disconnect or scenario, new_token())
    with MockControl(mock_url) as mock:
        nonce = mock.arm(played)
        _send(proxy.url, played, nonce, hang_up=True)
        deadline = time.monotonic() + 60  # generous: only a proxy that never closes waits this out
        while True:
            requests, activity = mock.state(nonce)
            if requests and activity.answering == 0:
                break
            assert time.monotonic() < deadline, "the mock's answer never ended"
            time.sleep(0.05)
    answer = requests[0].answer
    assert answer is not None
    return answer.body


HANG_UP_CASES = [BY_ID["isolation-native-in-flight"], BY_ID["isolation-anthropic-invoke-in-flight"]]


@pytest.mark.parametrize("scenario", HANG_UP_CASES, ids=[s.id for s in HANG_UP_CASES])
def test_the_reference_proxy_closes_its_upstream_request_when_its_client_hangs_up(scenario: Scenario,
                                                                                 servers: Any) -> None:
    mock_url = servers(create_app()).url
    sent = _hang_up(servers(reference(proxy_config(f"{mock_url}/v1"))), mock_url, scenario)
    assert b"Word 0 of " in sent and LAST_WORDS not in sent


def test_a_proxy_deaf_to_hang_ups_reads_the_whole_answer_for_nobody(servers: Any) -> None:
    mock_url = servers(create_app()).url
    sent = _hang_up(servers(deaf_to_hang_ups(proxy_config(f"{mock_url}/v1"))), mock_url, HANG_UP_CASES[0])
    assert LAST_WORDS in sent


def test_client_faults_follow_the_seed_and_the_rate() -> None:
    rate = ClientFaultRate(0.25, seed=9)
    drawn = [rate.decide("0.3", n) for n in range(4000)]
    assert drawn == [rate.decide("0.3", n) for n in range(4000)]
    assert drawn != [ClientFaultRate(0.25, seed=10).decide("0.3", n) for n in range(4000)]
    counts = Counter(drawn)
    assert 800 < sum(counts[k] for k in CLIENT_FAULT_KINDS) < 1200 and all(counts[k] > 150 for k in CLIENT_FAULT_KINDS)
    assert ClientFaultRate(0.0).decide("0.0", 1) is None
    with pytest.raises(ValueError):
        ClientFaultRate(1.5)


def test_a_hang_up_is_judged_by_when_the_upstream_request_closed() -> None:
    assert judge_hang_up(0.3).outcome == "faulted-handled"
    late = judge_hang_up(None)
    assert late.outcome == "failed" and late.rules == ("SOAK-001",) and late.failure.startswith("SOAK-001 After a")


@pytest.mark.parametrize(("samples", "verdict"), [
    ([(0, 56_000), (10, 63_000)], None),  # too few to say
    ([(0, 56_000), (10, 63_000), (20, 64_000), (30, 64_000), (40, 65_000)], True),  # warm-up, then flat
    ([(0, 200_000), (10, 230_000), (20, 236_000), (30, 240_000)], True),  # within 20 %
    ([(0, 56_000), (10, 60_000), (20, 90_000), (30, 120_000)], False),  # grows with the exchanges
])
def test_the_memory_check_allows_a_warm_up_but_no_growth(samples: list[tuple[float, int]],
                                                          verdict: bool | None) -> None:
    assert memory_check(samples)[0] is verdict


def test_the_summary_counts_client_faults_and_says_the_verdict() -> None:
    tally = Tally()
    tally.add(Verdict("ok"), None, 0.004, 0.010)
    tally.add(Verdict("ok"), "drop", None, 0.01, "slow_read")
    tally.add(Verdict("faulted-handled"), None, None, 0.2, "disconnect", 0.12)
    tally.add(judge_hang_up(None), None, None, 0.2, "disconnect")
    merged = Tally()
    merged.merge(tally.take())
    assert (merged.ok, merged.faulted_handled, merged.client_handled, merged.failed) == (1, 1, 2, 1)
    text = merged.summary([(0, 56_000), (10, 60_000), (20, 90_000), (30, 120_000)])
    assert "client faults        3 (handled 2; disconnect 2, slow read 1, slow body 0)" in text
    assert "upstream closed      after 2 hang-up(s): p50 120 ms, max 120 ms; 1 not within 2 s" in text
    assert "proxy memory         FAIL, grows" in text
    assert text.endswith("verdict              FAIL: 1 exchange(s) broke a rule; SOAK-002 memory grew")
    assert not merged.passed() and Tally().summary().endswith("verdict              pass")


def test_a_slow_sender_the_load_generator_itself_stalled_is_inconclusive_not_failed() -> None:
    assert Answer(status=408, longest_pause=2.0).stalled_itself()
    assert not Answer(status=408, longest_pause=0.3).stalled_itself()  # paused as planned: the proxy's 408
    assert not Answer(status=200, longest_pause=2.0).stalled_itself()
    tally = Tally()
    tally.add(Verdict("inconclusive", detail="paused"), None, None, 6.0, "slow_body")
    assert (tally.failed, tally.inconclusive) == (0, 1) and "inconclusive         1" in tally.summary()
    assert tally.passed()
