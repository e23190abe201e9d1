"""A soak stopped with SIGTERM (a CI job's cancel, ``timeout``, ``kill``) stops the mock, the
reference proxy and the load generator it started: none is left running on its port."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

CLI = [sys.executable, "-c", "from harness.cli.main import run_main; run_main()"]


def _parents() -> dict[int, int]:
    """Each live process's parent, read from /proc (Linux, where the soak is tested)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # gone meanwhile
            continue
        found[int(stat.parent.name)] = int(text.rsplit(")", 1)[1].split()[1])
    return found


def _descendants(pid: int) -> set[int]:
    parents, found, todo = _parents(), set(), [pid]
    while todo:
        parent = todo.pop()
        children = [p for p, pp in parents.items() if pp == parent]
        found.update(children)
        todo.extend(children)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_sigterm_stops_every_process_the_soak_started() -> None:
    soak = subprocess.Popen([*CLI, "soak", "--users", "1", "--duration", "10m", "--progress-every", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    children: set[int] = set()
    try:
        assert soak.stdout is not None
        seen = []
        for line in soak.stdout:  # the mock and the proxy answer, then Locust is started
            seen.append(line)
            if line.startswith("soak: ") and " user(s) for " in line:
                break
        else:
            raise AssertionError("the soak ended before it started its load generator:\n" + "".join(seen))
        # Signalled once all three run: from then on every one is the soak's to stop, whatever
        # Locust is doing (loading the library or playing exchanges).
        deadline = time.monotonic() + 120
        while not any(b"locust" in _command(p) for p in children) and time.monotonic() < deadline:
            children = _descendants(soak.pid)
            time.sleep(0.05)
        assert len(children) >= 3 and any(b"locust" in _command(p) for p in children), children
        soak.send_signal(signal.SIGTERM)
        soak.wait(60)
        deadline = time.monotonic() + 30
        while any(map(_alive, children)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in children if _alive(p)] == []
        assert soak.returncode != 0
    finally:  # a failing check must not leave them running either
        if soak.poll() is None:
            soak.kill()
            soak.wait(10)
        for pid in children:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
