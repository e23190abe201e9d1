"""How the user's shell reaches this command, for the commands a run prints (replay, reproduce).

A run started as ``.venv/bin/toolcall-conformance`` from a shell that never activated the
environment has no ``toolcall-conformance`` on its PATH: a printed command must then name the
script where it is, or it fails when pasted."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

NAME = "toolcall-conformance"


def program(*, path: str | None = None, cwd: Path | None = None, executable: str | None = None) -> list[str]:
    """The words that start this command from the user's shell: ``toolcall-conformance`` when
    the shell's PATH finds this installation's script; else that script's path (relative to
    ``cwd`` when inside it); else ``python -m harness.cli.main`` with this interpreter."""
    python = executable or sys.executable
    script = Path(python).parent / NAME
    if not script.exists():
        return [python, "-m", "harness.cli.main"]
    found = shutil.which(NAME, path=path if path is not None else os.environ.get("PATH", ""))
    if found is not None and Path(found).resolve() == script.resolve():
        return [NAME]
    base = (cwd or Path.cwd()).resolve()
    if script.resolve().is_relative_to(base):
        return [os.path.relpath(script, base)]
    return [str(script)]
