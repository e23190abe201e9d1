"""The agents tier played for real: Claude Code, Codex CLI and OpenCode run against the
bundled reference proxy and against proxies that break calls.

Opt-in: these tests download the pinned agents with npm (about 850 MB) and take minutes,
so they run only with ``TOOLCALL_AGENTS=1`` (``pytest -m agents``); otherwise, and when npm
or an agent is unavailable, they are skipped with the reason, never failed. The cache is
``$TOOLCALL_AGENTS_CACHE`` (default ``~/.cache/toolcall-conformance/agents``).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from harness.agents.agents import AGENTS
from harness.agents.cases import build_case
from harness.agents.install import Installed, default_cache, install, pins
from harness.agents.runner import Target, play
from harness.core.dialects import DIALECTS
from harness.run.servers import serve
from mutants import ALL

pytestmark = [
    pytest.mark.agents,
    pytest.mark.skipif(os.environ.get("TOOLCALL_AGENTS") != "1",
                       reason="the agents tier downloads real agents: set TOOLCALL_AGENTS=1 to play it"),
]
MUTANTS = {m.id: m for m in ALL}


def installed(agent: str) -> Installed:
    got = install(pins()[agent], default_cache())
    if got.binary is None:
        pytest.skip(f"{agent}: {got.reason}")
    return got


@pytest.mark.parametrize(("agent", "fmt"), [(a, f) for a in AGENTS for f in ("native", "hermes")])
def test_agent_runs_the_call_through_the_reference_proxy(agent: str, fmt: str) -> None:
    spec = AGENTS[agent]
    case = build_case(spec, spec.client_dialect, fmt)
    outcome = play(case, installed(agent), Target(), cache=default_cache())
    assert outcome.status == "pass", outcome.report()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.parametrize(("mutant", "agent", "upstream", "fmt"), [
    ("anthropic-invoke-rescue-off", "claude-code", "anthropic", "invoke-xml"),  # the call stays text
    ("arguments-not-json", "opencode", "openai", "native"),  # the call's arguments are cut
])
def test_a_proxy_that_breaks_calls_fails_naming_agent_step_and_rule(mutant: str, agent: str, upstream: str,
                                                                    fmt: str, tmp_path: Path) -> None:
    got = installed(agent)
    port = _free_port()
    with serve(MUTANTS[mutant].app(f"http://127.0.0.1:{port}/v1")) as proxy:
        target = Target(proxy_url=f"{proxy.url}/v1", mock_port=port, upstream=DIALECTS[upstream])
        case = build_case(AGENTS[agent], DIALECTS[upstream], fmt)
        outcome = play(case, got, target, cache=default_cache(), timeout=90, record=tmp_path)
    assert outcome.status == "FAIL"
    report = outcome.report()
    assert f"{agent} ({case.pair}, format {fmt})" in report
    assert "step 1, rule tool-ran" in report and "step 1, rule file-written" in report, report
