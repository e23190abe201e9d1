"""The mock and the reference proxy as processes of their own, for load that must not share a
process (or an interpreter lock) with the servers it measures: the soak, the benchmarks.

``running`` starts ``toolcall-conformance <args>`` with this interpreter (or one server command
alone, which spares the process importing every other command), waits until the server answers
``health`` with 200, and always stops it (SIGINT, then SIGKILL).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from harness.core.errors import ConformanceError

CLI = "from harness.cli.main import run_main; run_main()"
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# Seconds a server may take to answer its first health check. A safety net, not a margin: a
# server that died is reported at once (its exit is watched); a live one on a machine loaded
# on purpose took more than 20 s just to import, and over 60 s beside a 256-client soak at a
# load average of 16, so only a hung one waits this long.
START_TIMEOUT = 180.0


@dataclass
class ServerProcess:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: IO[bytes]
    health: str  # the path that answers 200 once the server serves

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU so far of the server process and its children (uvicorn's workers)."""
        return sum(process_cpu(pid) for pid in (self.process.pid, *children(self.process.pid)))

    def await_health(self) -> None:
        """Return once the server answers its ``health`` path with 200; raise if it exits or never does."""
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(self.port, self.health):
            if self.process.poll() is not None:
                raise ConformanceError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise ConformanceError(f"{self.name} did not answer on port {self.port} within {START_TIMEOUT:.0f} s:\n"
                                       f"{self.log_tail()}")
            time.sleep(0.05)

    def log_tail(self, size: int = 2000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-size:]


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux; 0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _answers(port: int, path: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            return sock.recv(100).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def ending_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the command the way Ctrl-C does, through every ``finally``, so the servers
    and the load generator it started are stopped with it instead of being left running: a
    CI job's cancel, ``timeout``, ``kill`` and service managers all send SIGTERM, whose default
    ends the process at once. (A background job started by a non-interactive shell does not
    even see SIGINT: the shell ignores it there.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def running(name: str, args: Sequence[str], port: int, health: str, *, cwd: Path | None = None,
            script: Path | None = None, command: str | None = None, wait: bool = True) -> Iterator[ServerProcess]:
    """``toolcall-conformance *args`` (``python script *args``; with ``command="module:name"``, that
    click command alone) listening on ``port``, until the block ends. ``wait=False``: return
    at once, for servers started side by side (then ``await_health``)."""
    log = tempfile.TemporaryFile()
    if command is not None:
        module, _, function = command.partition(":")
        program = ["-c", f"from {module} import {function}; {function}()"]
    else:
        program = [str(script)] if script is not None else ["-c", CLI]
    process = subprocess.Popen([sys.executable, *program, *args], stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
    server = ServerProcess(name, process, port, log, health)
    try:
        if wait:
            server.await_health()
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        log.close()
