"""The CI kit runs as documented: the composite Action's shell steps (the same commands
GitHub runs, inputs given as GitHub would) against a proxy the Action starts, and the
mock image's entry point (run as a plain process: the image only wraps it)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from harness.core.scenario.loading import load_library
from support.processes import STARTUP, Output

ROOT = Path(__file__).parent.parent
BIN = Path(sys.executable).parent
LIBRARY = {s.id: s for s in load_library()}
SCENARIOS = ("plain-native-single", "hermes-single")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _render(text: str, inputs: dict[str, str], context: dict[str, str]) -> str:
    """GitHub's ``${{ inputs.x }}`` / ``${{ github.x }}`` / ``${{ runner.x }}`` expressions."""
    for name, value in inputs.items():
        text = text.replace(f"${{{{ inputs.{name} }}}}", value)
    for name, value in context.items():
        text = text.replace(f"${{{{ {name} }}}}", value)
    assert "${{" not in text, f"an expression the test does not render: {text}"
    return text


def test_the_actions_steps_gate_a_proxy_it_starts(tmp_path: Path) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["runs"]["using"] == "composite"
    folder = tmp_path / "cases"
    for scenario_id in SCENARIOS:
        source = LIBRARY[scenario_id].path
        assert source is not None
        (folder / LIBRARY[scenario_id].family).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / LIBRARY[scenario_id].family)
    mock_port, proxy_port = _free_port(), _free_port()
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({
        "proxy-url": f"http://127.0.0.1:{proxy_port}/v1",
        # the reference proxy stands in for the user's own
        "proxy-command": f"{BIN / 'toolcall-conformance'} proxy --upstream http://127.0.0.1:{mock_port}/v1 "
                         f"--port {proxy_port} --log-level warning",
        "mock-port": str(mock_port),
        "args": f"--scenarios {folder} -p no:cacheprovider",
        "report-dir": str(tmp_path / "report"),
    })
    context = {"github.action_path": str(ROOT), "runner.temp": str(tmp_path)}
    summary = tmp_path / "summary.md"
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "GITHUB_STEP_SUMMARY": str(summary)}
    pid_file = tmp_path / "toolcall-conformance-proxy.pid"
    ran: dict[str, int] = {}
    try:
        for step in action["runs"]["steps"]:
            if "run" not in step or step.get("id") == "install":
                continue  # setup-python and upload-artifact are GitHub's; installing is tested with the wheel
            step_env = {k: _render(str(v), inputs, context) for k, v in step.get("env", {}).items()}
            script = _render(step["run"], inputs, context)
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                                  env={**env, **step_env}, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=600)
            ran[step["name"]] = done.returncode
            assert done.returncode == 0, f"{step['name']}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            if step.get("id") == "start":
                started = int(pid_file.read_text())
    finally:
        if pid_file.exists():  # the stop step did not run: stop the proxy here
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
    assert set(ran) == {"Start the proxy", "Run the conformance suite", "Job summary", "Stop the proxy"}
    report = tmp_path / "report"
    data: dict[str, Any] = json.loads((report / "conformance.json").read_text())
    assert data["totals"]["passed"] == len(SCENARIOS) and data["context"]["reference proxy"] is False
    assert (report / "conformance.xml").read_text().count("<testcase") == len(SCENARIOS)
    assert f"**Score: {len(SCENARIOS)}/{len(SCENARIOS)}**" in summary.read_text()
    assert not pid_file.exists() and started > 0
    assert _stops_listening(proxy_port), "the stop step ended the proxy"


def _stops_listening(port: int, patience: float = 60.0) -> bool:
    """Whether the port refuses connections within ``patience`` seconds (a stopped
    server finishes its shutdown first)."""
    give_up = time.monotonic() + patience
    while time.monotonic() < give_up:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
        except OSError:
            return True
        time.sleep(0.1)
    return False


def test_the_mock_images_entry_point_serves_the_mock() -> None:
    """The Dockerfile's ENTRYPOINT, with the arguments a user adds after the image name
    (here: loopback and a free port, as no other network exists here)."""
    entry = next(line for line in (ROOT / "Dockerfile").read_text("utf-8").splitlines()
                 if line.startswith("ENTRYPOINT "))
    command = json.loads(entry.removeprefix("ENTRYPOINT "))
    assert command[:2] == ["toolcall-conformance", "mock"]
    process = subprocess.Popen([str(BIN / command[0]), *command[1:], "--host", "127.0.0.1", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        _, match = Output(process).until(r"listening on (http://\S+) \((\d+) scenario", STARTUP)
        url = match.group(1)
        assert int(match.group(2)) == len(LIBRARY)  # the bundled library is preloaded
        health = httpx.get(f"{url}/_mock/health", timeout=10).json()
        assert health["status"] == "ok" and health["preloaded"] == len(LIBRARY)
    finally:
        process.terminate()
        process.wait(timeout=30)
