"""The wheel's build hook: the reference proxy's parser (``reference_proxy/rescue``) compiled
with mypyc, which ships inside mypy and compiles mypy and black (about twice the
throughput of the same code on CPython, docs/benchmarks.md).

The ``.py`` files stay the one implementation and stay in the wheel; the extension modules
built from them sit beside them and are what Python imports. Only a wheel build compiles
(``python -m build``, ``pip install .``): an editable install (``pip install -e .``) runs the
sources as they are, so an edited file is never shadowed by a stale extension. Without a C
compiler and Python's headers, with ``TOOLCALL_PURE_BUILD=1``, or if the compile fails, the
wheel is pure Python and the build says so in one line. ``reference_proxy.rescue.COMPILED``
tells at run time which build is running.

Our own hook rather than ``hatch-mypyc``: that plugin's last release is from 2023, and it
fails the build where a compiler is missing instead of falling back to pure Python.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PURE_BUILD = "TOOLCALL_PURE_BUILD"
"""Set to 1: build a pure-Python wheel even where a compiler is present (quicker builds)."""

COMPILED_PACKAGE = "reference_proxy/rescue"
"""The package compiled: the parser, whose every frame runs through it."""

BUILD_REQUIRES = ["mypy>=1.10", "setuptools>=70"]
"""What the compile needs in the build environment (mypyc, and setuptools to drive the compiler)."""


def why_pure() -> str | None:
    """Why this build cannot compile, or None when it can."""
    if os.environ.get(PURE_BUILD) == "1":
        return f"{PURE_BUILD}=1"
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    if shutil.which(compiler.split()[0]) is None:
        return f"no C compiler ({compiler.split()[0]!r} not found)"
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if not headers.is_file():
        return f"no Python headers ({headers} not found)"
    return None


class MypycHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        return [] if why_pure() else BUILD_REQUIRES

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            return
        reason = why_pure()
        if reason is None:
            work = Path(tempfile.mkdtemp(prefix="toolcall-mypyc-"))
            self._work = work
            reason = self._compile(work, build_data)
        if reason is not None:
            self.app.display_warning(f"toolcall-conformance: the parser stays pure Python: {reason}")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        self.app.display_info(f"toolcall-conformance: {COMPILED_PACKAGE} compiled with mypyc")

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)

    def _compile(self, work: Path, build_data: dict[str, Any]) -> str | None:
        """Compile a copy of the package (away from the sources, which stay free of build
        output) and add the extension modules to the wheel; the reason when it fails."""
        root = Path(self.root)
        (work / "reference_proxy").mkdir()
        shutil.copy2(root / "reference_proxy" / "__init__.py", work / "reference_proxy" / "__init__.py")
        shutil.copytree(root / COMPILED_PACKAGE, work / COMPILED_PACKAGE,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
        done = subprocess.run([sys.executable, "-m", "mypyc", COMPILED_PACKAGE], cwd=work,
                              capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
            return f"mypyc failed ({last[0]})"
        built = [path for path in work.rglob("*") if path.name.endswith(tuple(EXTENSION_SUFFIXES))
                 and "build" not in path.relative_to(work).parts]
        if not built:
            return "mypyc built no extension module"
        for path in built:
            build_data["force_include"][str(path)] = path.relative_to(work).as_posix()
        return None
