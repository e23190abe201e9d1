"""A command as a user starts it: a real process whose output is read line by line."""

from __future__ import annotations

import queue
import re
import subprocess
import threading

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

    def until(self, pattern: str, timeout: float) -> tuple[list[str], re.Match[str]]:
        """Every line up to the first that matches ``pattern``, and that match."""
        seen: list[str] = []
        while True:
            try:
                line = self.next(timeout)
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} in {timeout} s; got {seen}") from None
            seen.append(line)
            match = re.search(pattern, line)
            if match:
                return seen, match
