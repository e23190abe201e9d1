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

from support.library import load_library
from support.processes import STARTUP, Output

ROOT = Path(__file__).parents[2]
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


def _action() -> dict[str, Any]:
    action: dict[str, Any] = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))
    assert action["runs"]["using"] == "composite"
    return action


def _play(action: dict[str, Any], inputs: dict[str, str], tmp_path: Path) -> tuple[dict[str, subprocess.CompletedProcess[str]], dict[str, str]]:
    """The Action's shell steps as GitHub runs them: ``if:`` honoured (a step without one runs
    only while every step before it passed), each step's env rendered, its script run by bash.
    The suite's own virtual environment stands ready (the install step is tested with the wheel):
    it is this test's. Returns each step's result and the outputs the steps wrote."""
    venv = tmp_path / "toolcall-conformance-venv"
    if not venv.exists():
        venv.symlink_to(BIN.parent, target_is_directory=True)
    context = {"github.action_path": str(ROOT), "runner.temp": str(tmp_path),
               "steps.python.outputs.python-path": sys.executable}
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs), "GITHUB_JOB": "conformance"}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if Path(p) != BIN)  # the job's own PATH
    ran: dict[str, subprocess.CompletedProcess[str]] = {}
    failed = False
    for step in action["runs"]["steps"]:
        condition = step.get("if", "success()")
        if "run" not in step or step.get("id") == "install":
            continue  # setup-python and upload-artifact are GitHub's; installing is tested with the wheel
        if condition == "failure()" and not failed or condition == "success()" and failed:
            continue
        step_env = {k: _render(str(v), inputs, context) for k, v in step.get("env", {}).items()}
        script = _render(step["run"], inputs, context)
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              env={**env, **step_env}, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        ran[step["name"]] = done
        failed = failed or done.returncode != 0
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines()) if outputs.exists() else {}
    return ran, written


def _inputs(action: dict[str, Any], **given: str) -> dict[str, str]:
    inputs = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    inputs.update({k.replace("_", "-"): v for k, v in given.items()})
    return inputs


def test_the_action_leaves_the_jobs_python_to_the_proxy() -> None:
    """The proxy starts before the suite's Python is set up, and that set-up changes nothing of
    the job's environment: a Python proxy runs on the interpreter the job chose."""
    steps = _action()["runs"]["steps"]
    names = [s.get("name") or s.get("uses", "") for s in steps]
    python = next(s for s in steps if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert names.index("Start the proxy") < steps.index(python)
    assert python["with"]["update-environment"] is False
    assert "steps.python.outputs.python-path" in next(s for s in steps if s.get("id") == "install")["env"]["PYTHON"]


def test_the_actions_steps_gate_a_proxy_it_starts(tmp_path: Path) -> None:
    action = _action()
    folder = tmp_path / "cases"
    for scenario_id in SCENARIOS:
        source = LIBRARY[scenario_id].path
        assert source is not None
        (folder / LIBRARY[scenario_id].family).mkdir(parents=True, exist_ok=True)
        shutil.copy(source, folder / LIBRARY[scenario_id].family)
    mock_port, proxy_port = _free_port(), _free_port()
    inputs = _inputs(action, proxy_url=f"http://127.0.0.1:{proxy_port}/v1",
                     # the reference proxy stands in for the user's own
                     proxy_command=f"{BIN / 'toolcall-conformance'} proxy --upstream http://127.0.0.1:{mock_port}/v1 "
                                   f"--port {proxy_port} --log-level warning",
                     mock_port=str(mock_port), args=f"--scenarios {folder} -p no:cacheprovider",
                     report_dir=str(tmp_path / "report"))
    pid_file = tmp_path / "toolcall-conformance-proxy.pid"
    try:
        ran, outputs = _play(action, inputs, tmp_path)
        started = int(pid_file.read_text()) if pid_file.exists() else 0
    finally:
        if pid_file.exists():  # the stop step did not run: stop the proxy here
            os.killpg(int(pid_file.read_text()), signal.SIGTERM)
    failed = {name: done.stdout[-3000:] + done.stderr[-3000:] for name, done in ran.items() if done.returncode}
    assert failed == {}
    assert set(ran) == {"Start the proxy", "Run the conformance suite", "Job summary", "Stop the proxy", "Artifact name"}
    report = tmp_path / "report"
    data: dict[str, Any] = json.loads((report / "conformance.json").read_text())
    assert data["totals"]["passed"] == len(SCENARIOS) and data["context"]["reference proxy"] is False
    assert (report / "conformance.xml").read_text().count("<testcase") == len(SCENARIOS)
    assert f"**Score: {len(SCENARIOS)}/{len(SCENARIOS)}**" in (tmp_path / "summary.md").read_text()
    assert not pid_file.exists()
    assert _stops_listening(proxy_port), "the stop step ended the proxy"
    assert outputs["artifact"].startswith("toolcall-conformance-conformance-")


def test_each_use_of_the_action_uploads_under_its_own_name(tmp_path: Path) -> None:
    """Matrix legs (and two uses in one job) differ in their inputs, so their artifacts differ in
    name, as upload-artifact v4 requires; a name given is used as it is."""
    action = _action()
    names = set()
    for leg, given in enumerate(({"args": "--client-profile openai"}, {"args": "--client-profile anthropic"},
                                 {"args": "--client-profile anthropic", "artifact_name": "mine"})):
        folder = tmp_path / f"leg{leg}"
        folder.mkdir()
        only = [s for s in action["runs"]["steps"] if s.get("id") == "names"]
        _, outputs = _play({"runs": {"steps": only}}, _inputs(action, proxy_url="http://127.0.0.1:1/v1", **given), folder)
        names.add(outputs["artifact"])
    assert len(names) == 3 and "mine" in names


def test_a_proxy_that_never_comes_up_shows_its_log(tmp_path: Path) -> None:
    action = _action()
    port = _free_port()
    inputs = _inputs(action, proxy_url=f"http://127.0.0.1:{port}/v1", wait_for_proxy="1",
                     proxy_command="echo 'listen: address already in use (port 8000)' >&2; exit 3",
                     report_dir=str(tmp_path / "report"))
    ran, _ = _play(action, inputs, tmp_path)
    assert ran["Run the conformance suite"].returncode != 0
    assert "cannot connect to the proxy under test" in ran["Run the conformance suite"].stdout + ran["Run the conformance suite"].stderr
    shown = ran["Proxy log"]
    assert shown.returncode == 0 and "address already in use" in shown.stdout


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
