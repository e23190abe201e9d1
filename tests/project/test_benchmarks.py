"""The benchmark scripts run to the end in their quickest mode (figures are printed, never judged)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_proxy_overhead_benchmark_runs_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "proxy_overhead.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for heading in ("latency, frames with no delay", "throughput, 'text' answer", "throughput, 'rescue' answer",
                    "upstream: raw", "proxy CPU per event ="):
        assert heading in result.stdout
    assert "done in" in result.stdout


def test_responses_overhead_benchmark_runs_quick() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "responses_overhead.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    for heading in ("== 'text' answer", "== 'rescue' answer", "resp/chat"):
        assert heading in result.stdout
    assert "done in" in result.stdout


def test_judge_cost_benchmark_runs_quick() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "judge_cost.py"), "--quick"],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    row = next(line for line in result.stdout.splitlines() if line.startswith("| after |"))
    assert row.split("|")[2].strip() == "2"  # answers judged
