"""``toolcall-conformance mock`` as a user starts it: a real process on a free port,
serving one preloaded scenario, logging one line per request."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import bundled_scenarios_dir, load_scenario
from mock_backends.control import MockControl
from support.processes import STARTUP, Output

COMMAND = Path(sys.executable).with_name("toolcall-conformance")
SCENARIO = bundled_scenarios_dir() / "plain" / "native-single.yaml"
LOG_LINE = re.compile(r"^\d\d:\d\d:\d\d (.*)$")


@pytest.fixture
def mock_process() -> Iterator[tuple[subprocess.Popen[str], Output]]:
    process = subprocess.Popen(
        [str(COMMAND), "mock", "--port", "0", "--scenarios", str(SCENARIO)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        yield process, Output(process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def test_the_mock_command_serves_and_logs_one_line_per_request(
    mock_process: tuple[subprocess.Popen[str], Output],
) -> None:
    process, output = mock_process
    banner, match = output.until(r"mock backend listening on (http://127\.0\.0\.1:(\d+)) \(1 scenario\(s\) preloaded\)",
                                 STARTUP)
    url = match.group(1)
    assert int(match.group(2)) > 0, "--port 0 picks a free port and says which"
    scenario = load_scenario(SCENARIO)
    hints, _ = output.until(r"^  recorded requests: GET ", 10)  # the last line before the log
    assert any(f'"scenario_id": "{scenario.id}"' in line for line in hints), hints
    with MockControl(url) as control, httpx.Client(timeout=10) as http:
        nonce = control.arm_id(scenario.id)
        response = http.post(f"{url}/v1/chat/completions", json=scenario.client.request, headers={NONCE_HEADER: nonce})
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        assert response.text.endswith("data: [DONE]\n\n")
        (recorded,) = control.recorded(nonce)
        assert recorded.body == scenario.client.request
    wanted = [
        f"POST /_mock/runs {nonce} {scenario.id} 201 control",
        f"POST /v1/chat/completions {nonce} {scenario.id} 200 stream",
        f"GET /_mock/runs/{nonce} {nonce} {scenario.id} 200 control",
    ]
    logged = []
    for _ in wanted:
        line = output.next(timeout=10)
        stamped = LOG_LINE.match(line)
        assert stamped, f"a log line starts with the time: {line!r}"
        logged.append(stamped.group(1))
    assert logged == wanted
    assert process.poll() is None, "the mock keeps serving"
