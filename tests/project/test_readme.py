"""CI runs what the README tells a contributor to run, and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
# What every shell script starts with: strict mode, then the repository root as working directory.
PREAMBLE = ["set -euo pipefail", 'cd "$(dirname "$0")/.."']


def _quick_start_commands() -> dict[str, str]:
    """The README's quick-start commands by number: the line after each '# N.' comment."""
    section = (ROOT / "README.md").read_text("utf-8").split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "the quick start has a sh block"
    lines = [line.strip() for line in block.group(1).splitlines()]
    commands = {}
    for i, line in enumerate(lines):
        numbered = re.match(r"# (\d+)\. ", line)
        if numbered:
            commands[numbered.group(1)] = lines[i + 1]
    return commands


def _script_lines(path: Path) -> list[str]:
    """The lines a shell runs: no shebang, comments or blank lines."""
    return [line.strip() for line in path.read_text("utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    commands = _quick_start_commands()
    assert set(commands) == {"1", "2"}, commands
    assert "pytest" in commands["2"] and "mypy" in commands["2"], "command 2 is the project's own tests"
    assert _script_lines(ROOT / ".ci" / "run") == [*PREAMBLE, commands["2"]]
