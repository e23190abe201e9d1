"""The soak: its judgement of faulted exchanges, and short real runs on Locust against the
reference proxy (clean) and a proxy sharing its parser between streams (misdelivery)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import httpx
import pytest
from mutants.base import proxy_config
from mutants.isolation import module_level_parser

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.core.nonce import NONCE_HEADER, place_nonce
from harness.core.replay.fault_rate import FAULT_KINDS
from harness.judge.rules import Options
from harness.judge.soak import Verdict, first_content, judge, misdelivered, soak_cases
from harness.judge.soak_tally import Tally
from harness.run.isolation import new_token, tag
from harness.run.processes import free_port
from mock_backends.control import MockControl
from support.fault_rig import FaultRig, fault_rig  # noqa: F401  (fault_rig: the module's faulting mock and proxy)
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}
SCENARIOS = [LIBRARY["isolation-hermes-in-flight"], LIBRARY["isolation-qwen-coder-in-flight"],
             LIBRARY["isolation-native-in-flight"]]
# The soak command alone (tests/run/test_soak_sigterm.py starts it as `toolcall-conformance soak`): importing
# every other command would cost its process more than a second of CPU.
SOAK = [sys.executable, "-c", "from harness.run.soak import soak; soak()"]


@pytest.mark.parametrize("kind", FAULT_KINDS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_the_reference_proxy_handles_every_drawn_fault(kind: str, scenario: Any, fault_rig: FaultRig) -> None:
    """One exchange per fault kind through the reference proxy, judged as the soak judges it."""
    rate = fault_rig.rate
    case = soak_cases([scenario], rate, delay_ms=1.0)[0]
    token = new_token()
    played = tag(case.scenario, token)
    with MockControl(fault_rig.mock_url) as mock:
        nonce = next(n for n in (mock.arm(played) for _ in range(200)) if rate.decide(n) == kind)
    body = place_nonce({**played.client.request, "stream": True}, nonce)
    with httpx.Client(timeout=10) as http:
        answer = http.post(f"{fault_rig.proxy_url}/v1/chat/completions", json=body, headers={NONCE_HEADER: nonce})
    exchange = Exchange(scenario_id=played.id, profile=CLIENTS["openai"], stream=True, request_body=body, request_headers={},
                        status=answer.status_code, response_headers={k.lower(): v for k, v in answer.headers.items()},
                        raw=answer.content, elapsed=0.1)
    verdict = judge(case, token, played, exchange, Options(), rate.decide(nonce), tag(case.faulted[kind], token))
    assert verdict.outcome == "faulted-handled", (verdict, answer.content[-400:])


def test_an_answer_with_another_exchanges_tag_is_misdelivered() -> None:
    case = soak_cases([SCENARIOS[0]], None)[0]
    mine, other = new_token(), new_token()
    played = tag(case.scenario, mine)
    raw = f'data: {{"choices": [{{"index": 0, "delta": {{"content": "order {other}"}}}}]}}\n\n'.encode()
    exchange = Exchange(scenario_id=played.id, profile=CLIENTS["openai"], stream=True, request_body={}, request_headers={},
                        status=200, response_headers={"content-type": "text/event-stream"}, raw=raw)
    assert misdelivered(exchange, mine) == [other]
    verdict = judge(case, mine, played, exchange, Options(), None)
    assert verdict.outcome == "failed" and verdict.rules == ("ISO-001",) and verdict.failure.startswith("ISO-001 ")


def test_the_tally_merges_and_summarises() -> None:
    a, b = Tally(), Tally()
    a.add(Verdict("ok"), None, 0.004, 0.010)
    a.add(Verdict("faulted-handled"), "drop", None, 0.003)
    b.add(Verdict("failed", ("ISO-001",)), None, 0.005, 0.020)
    merged = Tally()
    merged.merge(json.loads(json.dumps(a.take())))
    merged.merge(b.to_json())
    assert (merged.exchanges, merged.ok, merged.faulted, merged.faulted_handled, merged.failed) == (3, 1, 1, 1, 1)
    assert a.exchanges == 0 and merged.by_rule == {"ISO-001": 1}
    text = merged.summary([(0.0, 51200), (5.0, 52224)])
    assert "rule failures        1 (ISO-001: 1)" in text and "p50 4.0 ms" in text and "50 MB" in text


def test_first_content_is_the_first_chunk_with_text_or_a_call() -> None:
    chunks = [(0.01, b'data: {"choices":[{"delta":{"role":"assistant","content":""}}]}\n\n'),
              (0.02, b'data: {"choices":[{"delta":{"content":"Hi"}}]}\n\n')]
    assert first_content(chunks) == 0.02
    assert first_content(chunks[:1]) is None


def _soak(*args: str, exchanges: int) -> subprocess.CompletedProcess[str]:
    """A soak of so many exchanges (however long a loaded machine takes to play them)."""
    return subprocess.run([*SOAK, "--users", "8", "--exchanges", str(exchanges), "--duration", "5m",
                           "--progress-every", "0.2",
                           "--fault-stall", "0.2", "--frame-delay-ms", "5", *args], capture_output=True, text=True,
                          timeout=120)


def test_a_short_soak_of_the_reference_proxy_is_clean() -> None:
    done = _soak("--fault-rate", "0.3", exchanges=60)
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "soak summary" in out and "rule failures        0\n" in out
    faulted = next(line for line in out.splitlines() if line.strip().startswith("faulted "))
    count, handled = faulted.split()[1], faulted.split("handled ")[1].rstrip(")")
    assert count == handled, faulted
    assert "proxy RSS" in out and "soak " in out.split("soak summary")[0]


def test_a_short_soak_of_a_proxy_sharing_its_parser_reports_misdelivered_answers(servers: Any) -> None:
    port = free_port()
    proxy = servers(module_level_parser(proxy_config(f"http://127.0.0.1:{port}/v1")))
    # The Hermes case: its tags sit inside the call the shared rescuer holds and hands to another stream.
    done = _soak("--proxy-url", f"{proxy.url}/v1", "--mock-port", str(port), "--scenario", "isolation-hermes-in-flight",
                 exchanges=40)
    assert done.returncode != 0
    assert "ISO-001" in done.stdout and "RuleFailure(\"ISO-001 " in done.stdout + done.stderr
