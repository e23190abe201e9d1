"""The wheel with the parser compiled by mypyc (``hatch_build.py``): built as a user builds
it, installed into a folder of its own, and the rescue tests run against it from outside the
clone. The build takes minutes, so the tier is opt-in (``TOOLCALL_COMPILED=1``, its own CI
job: docs/benchmarks.md); without a C compiler the build falls back to pure Python and the
tier is skipped with the build's own reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.wheels import ROOT, build_wheel

pytestmark = [
    pytest.mark.compiled,
    pytest.mark.skipif(os.environ.get("TOOLCALL_COMPILED") != "1",
                       reason="opt-in: TOOLCALL_COMPILED=1 builds the compiled wheel (minutes; docs/benchmarks.md)"),
]

FALLBACK = "the parser stays pure Python: "
"""What the build hook says when it cannot compile."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheel, log = build_wheel(tmp_path_factory.mktemp("dist"), compiled=True)
    fallback = [line for line in log.splitlines() if FALLBACK in line]
    if fallback:
        pytest.skip(f"no compiled build here: {fallback[0].split(FALLBACK, 1)[1]}")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return site


def run_from(site: Path, where: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Python with only the installed copy of the project on its path (run outside the clone)."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=where, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_wheel_runs_the_compiled_parser(site: Path, tmp_path: Path) -> None:
    code = "import reference_proxy.rescue as r; print(r.COMPILED, r.scanner.__file__)"
    compiled, where = run_from(site, tmp_path, "-c", code, timeout=120).stdout.split()
    assert compiled == "True" and where.startswith(str(site)) and not where.endswith(".py")


def test_the_rescue_tests_pass_on_the_compiled_parser(site: Path, tmp_path: Path) -> None:
    """The parser's own tests, the equivalence of every split and the property tests among
    them, with the installed compiled modules imported instead of the sources."""
    tests = sorted(str(path) for path in (ROOT / "tests" / "proxy").glob("test_rescue*.py"))
    run = run_from(site, tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
                   "--rootdir", str(ROOT), "-n", "2", "-rs", *tests, timeout=3600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "reference_proxy.rescue: compiled (mypyc)" in run.stdout
