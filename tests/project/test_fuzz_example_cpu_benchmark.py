"""The benchmark of one generated example's CPU runs to the end in its quickest mode (figures are printed, never
judged)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fuzz_example_cpu_benchmark_runs_quick() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz_example_cpu.py"), "--quick"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "| after | **" in result.stdout
