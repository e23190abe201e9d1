"""The project's wheel, built as a user builds it (``python -m build``): pure Python, the
quick build most tests need, or with the parser compiled by mypyc (``hatch_build.py``)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def pure_build_variable() -> str:
    """The environment variable that makes the build hook skip the compile, as
    ``hatch_build.py`` declares it (read from its source: the hook needs hatchling, which
    only the build environment has)."""
    for node in ast.parse((ROOT / "hatch_build.py").read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["PURE_BUILD"]:
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError("hatch_build.py declares no PURE_BUILD")


def build_wheel(out: Path, *, compiled: bool) -> tuple[Path, str]:
    """The wheel built into ``out``, and what the build printed."""
    env = dict(os.environ)
    if compiled:
        env.pop(pure_build_variable(), None)
    else:
        env[pure_build_variable()] = "1"
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(ROOT)],
                          env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (built,) = out.glob("toolcall_conformance-*.whl")
    return built, done.stdout + done.stderr
