"""A command as a user starts it: a real process whose output is read line by line."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time

STARTUP = 30.0  # seconds: a loaded machine is slow to import the app, never stuck


class Output:
    """The process's stdout, line by line, read in a thread so that no read can hang the test."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout

        def pump() -> None:
            for line in stdout:
                self._lines.put(line.rstrip("\n"))
            self._lines.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def next(self, timeout: float) -> str:
        line = self._lines.get(timeout=timeout)
        if line is None:
            raise AssertionError("the process ended its output")
        return line

    def until(self, pattern: str, timeout: float, within: float | None = None) -> tuple[list[str], re.Match[str]]:
        """Every line up to the first that matches ``pattern``, and that match; ``timeout`` for
        each line, and ``within`` for them all (a process that prints for ever)."""
        seen: list[str] = []
        deadline = time.monotonic() + within if within is not None else None
        while True:
            wait = timeout if deadline is None else min(timeout, deadline - time.monotonic())
            try:
                if wait <= 0:
                    raise queue.Empty
                line = self.next(wait)
            except queue.Empty:
                bound = timeout if within is None else within
                raise AssertionError(f"no line matching {pattern!r} in {bound} s; got {seen}") from None
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return seen, match

    def rest(self, within: float) -> list[str]:
        """Every line left, up to the end of the output, which must come ``within`` seconds."""
        lines: list[str] = []
        deadline = time.monotonic() + within
        while True:
            try:
                line = self._lines.get(timeout=max(deadline - time.monotonic(), 0.001))
            except queue.Empty:
                raise AssertionError(f"the output did not end in {within} s; got {lines[-20:]}") from None
            if line is None:
                return lines
            lines.append(line)
