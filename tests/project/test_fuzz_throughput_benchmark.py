"""The fuzz throughput benchmark runs to the end in its quickest mode (figures are printed, never judged)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_fuzz_throughput_benchmark_runs_quick() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fuzz_throughput.py"), "--quick"],
                            capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "| after | hermes, 5 | 5 |" in result.stdout
