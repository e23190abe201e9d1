"""A soak stopped with SIGTERM (a CI job's cancel, ``timeout``, ``kill``) stops the mock, the
reference proxy and the load generator it started: none is left running on its port."""

from __future__ import annotations

import signal
import subprocess
import sys

import psutil

CLI = [sys.executable, "-c", "from harness.cli.main import run_main; run_main()"]


def test_sigterm_stops_every_process_the_soak_started() -> None:
    soak = subprocess.Popen([*CLI, "soak", "--users", "1", "--duration", "10m", "--progress-every", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert soak.stdout is not None
        seen = []
        for line in soak.stdout:  # the mock and the proxy answer, then Locust is started
            seen.append(line)
            if line.startswith("soak ") and "users" in line:
                break
        else:
            raise AssertionError("the soak ended before its first progress line:\n" + "".join(seen))
        children = psutil.Process(soak.pid).children(recursive=True)
        assert len(children) >= 3, children  # the mock, the reference proxy, Locust
        soak.send_signal(signal.SIGTERM)
        soak.wait(60)
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert alive == [], [p.cmdline() for p in alive]
        assert soak.returncode != 0
    finally:
        if soak.poll() is None:
            soak.kill()
            soak.wait(10)
