"""Playing the agents tier: each case on its own mock (and, by default, its own reference
proxy calling the mock in the case's upstream dialect), the agent run in a throwaway HOME
with a timeout, then judged.

Agents cannot send the conformance nonce, so each run arms exactly one scenario on a mock
no other run uses; with an external proxy (``proxy_url``) the cases run one at a time
against the one mock that proxy calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.agents.base import RunDirs, Transcript
from harness.agents.cases import FINAL_TEXT, PROMPT, RESULT_FILE, Case
from harness.agents.install import Installed
from harness.agents.judge import Facts, Failure, judge
from harness.core.dialects import WireDialect
from harness.core.exchange import RecordedRequest
from harness.run.embedded import EmbeddedServers
from mock_backends.control import MockControl

DEFAULT_RUN_TIMEOUT = 180.0
TAIL_LINES = 15


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: str  # "pass", "FAIL", "skip"
    failures: tuple[Failure, ...] = ()
    reason: str = ""  # why skipped
    seconds: float = 0.0
    tail: str = ""  # the agent's printed output, last lines

    def report(self) -> str:
        head = f"{self.case.agent.id} ({self.case.pair}, format {self.case.format})"
        if self.status == "skip":
            return f"SKIP {head}: {self.reason}"
        lines = [f"FAIL {head}:"] + [f"  {f}" for f in self.failures]
        return "\n".join(lines + ["  agent output (tail):"] + ["    " + t for t in self.tail.splitlines()])


@dataclass
class Target:
    """Where the agents' requests go: the bundled reference proxy (one per case), or an external one."""

    proxy_url: str | None = None  # external proxy's base URL (.../v1)
    mock_host: str = "127.0.0.1"
    mock_port: int = 0
    upstream: WireDialect | None = None  # the external proxy's upstream dialect (None: each client's own)
    started: list[EmbeddedServers] = field(default_factory=list)

    def plays(self, case: Case) -> bool:
        if self.proxy_url is None:
            return True
        return case.upstream is (self.upstream or case.agent.client_dialect)

    @contextmanager
    def servers(self, case: Case) -> Iterator[tuple[str, str]]:
        """(mock root URL, the proxy's root URL the agent is pointed at)."""
        if self.proxy_url is None:
            with EmbeddedServers(upstream_dialects=(case.upstream.name,)) as urls:
                assert urls.proxy_url is not None
                yield urls.mock_url, _root(urls.proxy_url)
        else:
            with EmbeddedServers(mock_host=self.mock_host, mock_port=self.mock_port, with_proxy=False) as urls:
                yield urls.mock_url, _root(self.proxy_url)


def _root(url: str) -> str:
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    return "\n".join(line[:400] for line in text.strip().splitlines()[-lines:])


def play(case: Case, installed: Installed, target: Target, *, cache: Path, timeout: float = DEFAULT_RUN_TIMEOUT,
         record: Path | None = None) -> Outcome:
    if installed.binary is None:
        return Outcome(case, "skip", reason=installed.reason)
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix=f"tcc-agent-{case.agent.id}-"))
    try:
        dirs = RunDirs(root)
        dirs.make()
        with target.servers(case) as (mock_url, base_url), MockControl(mock_url) as control:
            nonce = control.arm(case.scenario)
            how = case.agent.invocation(installed.binary, dirs, base_url, PROMPT, cache)
            exit_code, stdout, stderr = _run(how.argv, how.env, how.stdin, dirs.work, timeout)
            requests, _ = control.finish(nonce)
        result = dirs.work / RESULT_FILE
        content = result.read_text("utf-8", "replace") if result.is_file() else None
        transcript = case.agent.read_events(stdout)
        facts = Facts(case.agent.tool, case.upstream, exit_code, timeout, transcript, content, case.content,
                      FINAL_TEXT, requests)
        failures = judge(facts)
        seconds = time.monotonic() - started
        if record is not None:
            _record(record, case, stdout, stderr, requests, transcript, failures, seconds)
        tail = _tail(stdout + ("\n" + stderr if stderr.strip() else ""))
        return Outcome(case, "FAIL" if failures else "pass", tuple(failures), seconds=seconds, tail=tail)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _run(argv: Sequence[str], env: Mapping[str, str], stdin: str, cwd: Path,
         timeout: float) -> tuple[int | None, str, str]:
    """The agent's exit code (None when killed at ``timeout``), stdout and stderr."""
    proc = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # its own session: the agent and every process it started
        out, err = proc.communicate()
        return None, out, err


def _record(folder: Path, case: Case, stdout: str, stderr: str, requests: Sequence[RecordedRequest],
            transcript: Transcript, failures: Sequence[Failure], seconds: float) -> None:
    where = folder / case.agent.id / f"{case.upstream}-{case.format}"
    where.mkdir(parents=True, exist_ok=True)
    (where / "events.jsonl").write_text(stdout, "utf-8")
    (where / "stderr.txt").write_text(stderr, "utf-8")
    (where / "requests.json").write_text(json.dumps([r.to_json() for r in requests], indent=1), "utf-8")
    (where / "verdict.json").write_text(json.dumps({
        "case": case.name, "seconds": round(seconds, 2), "failures": [str(f) for f in failures],
        "tool_runs": [r.name for r in transcript.tool_runs], "final_text": transcript.final_text}, indent=1), "utf-8")


def play_all(cases: Sequence[Case], installs: dict[str, Installed], target: Target, *, cache: Path,
             timeout: float = DEFAULT_RUN_TIMEOUT, record: Path | None = None,
             progress: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    for case in cases:
        if not target.plays(case):
            continue
        outcome = play(case, installs[case.agent.id], target, cache=cache, timeout=timeout, record=record)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes


def table(outcomes: Sequence[Outcome]) -> str:
    """agent x dialect pair x format: pass / FAIL / skip."""
    formats = list(dict.fromkeys(o.case.format for o in outcomes))
    rows = list(dict.fromkeys((o.case.agent.id, o.case.pair) for o in outcomes))
    cell = {(o.case.agent.id, o.case.pair, o.case.format): o.status for o in outcomes}
    head = ["agent", "pair", *formats]
    body = [[agent, pair, *(cell.get((agent, pair, f), "-") for f in formats)] for agent, pair in rows]
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]

    def line(row: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip()

    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in body)])
