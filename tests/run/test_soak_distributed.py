"""The soak on Locust's own master and a worker over loopback, as docs/soak.md runs it on
many machines; a master whose worker falls silent; and the soak command's verdict on a
proxy that never hears its clients hang up. Real processes, real sockets; nothing timed
beyond generous bounds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from mutants.base import proxy_config, reference
from mutants.hang_up import deaf_to_hang_ups
from support.processes import Output

from harness.core.replay.fault_rate import FaultRate
from harness.run.processes import free_port
from harness.run.soak import LOCUSTFILE
from mock_backends.app import create_app

LOCUST = [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--loglevel", "WARNING"]
SOAK = [sys.executable, "-c", "from harness.run.soak import soak; soak()"]  # the command alone, as test_soak.py
CASES = "isolation-hermes-in-flight"


def _summary(out: str) -> dict[str, str]:
    """The summary's lines by their label (``exchanges``, ``verdict`` ...)."""
    lines = out.split("soak summary", 1)[1].splitlines()[1:]
    return {line[:23].strip(): line[23:].strip() for line in lines if line.startswith("  ")}


def test_a_master_and_a_worker_soak_the_proxy_together(servers: Any, tmp_path: Path) -> None:
    rate = FaultRate(0.2, seed=42, stall_seconds=0.2)
    mock_url = servers(create_app(fault_rate=rate)).url
    proxy_url = servers(reference(proxy_config(f"{mock_url}/v1"))).url
    port = free_port()
    master = subprocess.Popen(
        [*LOCUST, "--master", "--headless", "--only-summary", "--expect-workers", "1", "--users", "6",
         "--spawn-rate", "6", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--host", f"{proxy_url}/v1", "--mock-url", mock_url, "--fault-rate", "0.2", "--fault-seed", "42",
         "--fault-stall", "0.2", "--client-fault-rate", "0.3", "--soak-scenarios", CASES, "--frame-delay-ms", "5",
         "--soak-exchanges", "30", "--soak-duration", "5m", "--progress-every", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = tmp_path / "worker.log"  # a file, not a pipe nobody reads while the master runs
    with log.open("w") as sink:
        worker = subprocess.Popen([*LOCUST, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                                  stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        out, err = master.communicate(timeout=300)
        worker.wait(timeout=120)
    finally:
        for process in (master, worker):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert master.returncode == 0, out[-3000:] + err[-3000:]
    summary = _summary(out)
    # Every figure is the workers': the master plays no exchange of its own.
    assert int(summary["exchanges"]) > 0 and summary["rule failures"] == "0", (out[:1500], log.read_text()[-3000:])
    assert summary["client faults"].split()[0] != "0" and summary["verdict"] == "pass", summary
    assert "soak " in out.split("soak summary")[0]  # the master's progress lines


def test_a_master_ends_the_soak_failed_when_its_last_worker_falls_silent(servers: Any, tmp_path: Path) -> None:
    # Locust's master stops the test once its last worker misses its heartbeats and runs on with
    # no users: the soak ends there, failed, saying why (a stopped worker sends no heartbeat).
    mock_url = servers(create_app()).url
    proxy_url = servers(reference(proxy_config(f"{mock_url}/v1"))).url
    port = free_port()
    master = subprocess.Popen(
        [*LOCUST, "--master", "--headless", "--only-summary", "--expect-workers", "1", "--users", "2",
         "--spawn-rate", "2", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
         "--host", f"{proxy_url}/v1", "--mock-url", mock_url, "--soak-scenarios", CASES, "--frame-delay-ms", "5",
         "--soak-duration", "10m", "--progress-every", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with (tmp_path / "worker.log").open("w") as sink:
        worker = subprocess.Popen([*LOCUST, "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)],
                                  stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        out = Output(master)
        seen, _ = out.until(r"^soak .* exchanges [1-9]", timeout=300, within=300)  # the worker's first report
        os.kill(worker.pid, signal.SIGSTOP)
        seen += out.rest(within=300)
        master.wait(timeout=60)
    finally:
        for process in (master, worker):
            if process.poll() is None:
                process.kill()
                process.wait()
    text = "\n".join(seen)
    assert master.returncode == 1, text[-3000:]
    assert "soak: every worker went missing" in text
    assert _summary(text)["verdict"] == "FAIL: every worker went missing (no heartbeat for seconds) and Locust " \
                                        "stopped the test", text[-3000:]


def test_the_soak_fails_a_proxy_that_keeps_its_upstream_request_after_a_hang_up(servers: Any) -> None:
    port = free_port()
    proxy = servers(deaf_to_hang_ups(proxy_config(f"http://127.0.0.1:{port}/v1")))
    done = subprocess.run([*SOAK, "--proxy-url", f"{proxy.url}/v1", "--mock-port", str(port), "--users", "4",
                           "--exchanges", "16", "--duration", "5m", "--client-fault-rate", "0.5", "--fault-seed", "3",
                           "--scenario", "isolation-native-in-flight", "--frame-delay-ms", "5"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout[-3000:]
    summary = _summary(done.stdout)
    assert "SOAK-001" in summary["rule failures"] and summary["verdict"].startswith("FAIL"), summary
    assert "not within 2 s" in summary["upstream closed"]
    assert "SOAK-001 After a client hangs up" in done.stdout + done.stderr
