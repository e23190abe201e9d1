"""The header of a run: the ``run`` command's quiet view leaves pytest's own lines out and
prints the run's, plain pytest shows both, ``-v`` pytest's whole header; the run's lines fit
the terminal's width (a long line goes on indented, a URL is never cut)."""

from __future__ import annotations

import shutil

import pytest

from harness.core.scenario.loading import bundled_scenarios_dir

pytest_plugins = ["pytester"]

WIDTH = 60

HEADER_CASES: list[tuple[str, list[str], bool]] = [
    ("the run command's view (what 'toolcall-conformance run' passes)", ["--conformance-only", "-q"], False),
    ("plain pytest", ["--conformance"], True),
    ("the run command with -v", ["--conformance-only", "-v"], True),
]


@pytest.mark.parametrize(("args", "pytest_header"), [c[1:] for c in HEADER_CASES], ids=[c[0] for c in HEADER_CASES])
def test_the_runs_header_fits_the_terminal_and_pytests_own_is_left_out_when_quiet(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: list[str], pytest_header: bool) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    folder = pytester.path / "scenarios" / "plain"
    folder.mkdir(parents=True)
    shutil.copy(bundled_scenarios_dir() / "plain" / "native-single.yaml", folder)
    result = pytester.runpytest(*args, "--conformance-scenarios", str(pytester.path / "scenarios"),
                                "--conformance-upstream-dialect", "natural")
    result.assert_outcomes(passed=1)
    lines = result.stdout.lines
    ours = [n for n, line in enumerate(lines) if line.startswith("conformance: ")]
    assert lines[ours[0]] == "conformance: 1 scenario(s) against the bundled reference"
    assert sum(line.startswith("conformance: claimed features: ") for line in lines) == 1  # printed once
    header = lines[ours[0]:ours[-1] + 1]
    assert all(len(line) <= WIDTH for line in header), "\n".join(header)
    assert any(line.startswith("  proxy at http://127.0.0.1:") and line.endswith("/v1") for line in header)
    assert any(line.startswith("platform ") for line in lines) is pytest_header
    assert any(line.startswith("rootdir: ") for line in lines) is pytest_header
    assert any("tool-call conformance" in line for line in lines)
