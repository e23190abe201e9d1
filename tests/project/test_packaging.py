"""The package as a user gets it without a clone: ``python -m build`` makes a wheel that
carries the scenario library, the schemas and both entry points, and the suite runs
from the installed copy, on pytest-xdist workers too, from a folder outside the clone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.wheels import build_wheel

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pure Python: the compiled build takes minutes, and has its own opt-in tier
    (``tests/project/test_compiled_build.py``)."""
    built, _ = build_wheel(tmp_path_factory.mktemp("dist"), compiled=False)
    return built


def test_the_wheel_carries_the_library_and_the_entry_points(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    library = sorted(p.relative_to(ROOT / "scenarios").as_posix() for p in (ROOT / "scenarios").rglob("*.yaml"))
    assert sorted(n.removeprefix("harness/bundled_scenarios/") for n in names
                  if n.startswith("harness/bundled_scenarios/")) == library
    schemas = sorted(p.name for p in (ROOT / "harness" / "schemas").glob("*.json"))
    assert sorted(n.removeprefix("harness/schemas/") for n in names if n.startswith("harness/schemas/")) == schemas
    # the rule catalogue: each rule's statement and citations, read when the rules are imported
    catalogues = sorted(p.name for p in (ROOT / "harness" / "judge" / "rules").glob("*.yaml"))
    assert catalogues and sorted(n.removeprefix("harness/judge/rules/") for n in names
                                 if n.startswith("harness/judge/rules/") and n.endswith(".yaml")) == catalogues
    assert {"harness/py.typed", "mock_backends/py.typed", "reference_proxy/py.typed"} <= set(names)
    meta = zipfile.ZipFile(wheel)
    entry_points = meta.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "toolcall-conformance = harness.cli.main:run_main" in entry_points
    assert "toolcall_conformance = harness.pytest.plugin" in entry_points
    requires = meta.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert "Requires-Dist: pytest-xdist" in requires  # 'run -n' works after a plain install


def test_the_installed_copy_runs_on_workers_outside_the_clone(wheel: Path, tmp_path: Path) -> None:
    """Installed (without its dependencies, which this environment has) into a folder of
    its own that comes first on the path; run from an empty folder, on two workers."""
    site = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                           str(wheel)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = "import harness.core.scenario.loading as s; print(s.__file__); print(s.bundled_scenarios_dir())"
    where = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True,
                           timeout=120).stdout.split()
    assert where[0].startswith(str(site)) and where[1] == str(site / "harness" / "bundled_scenarios")
    run = subprocess.run(
        [sys.executable, "-c", "from harness.cli.main import run_main; run_main()", "run", "-n", "2", "-p",
         "no:cacheprovider", "-k", "plain-native-single or hermes-single", "--upstream-dialect", "natural",
         "--report-json", "r.json"],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "bringing up nodes" in run.stdout and "2 passed" in run.stdout  # xdist's workers, in the quiet view
    assert (elsewhere / "r.json").is_file()
