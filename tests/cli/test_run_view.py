"""The ``run`` command is quiet by default: pytest's own header is left out (the plugin prints
the run's), and a verbosity or a collection the user asks for is taken as asked."""

from __future__ import annotations

import pytest

from harness.cli import main as cli


@pytest.mark.parametrize(("args", "added"), [
    ((), ["-q"]),
    (("-k", "hermes", "--tb=long"), ["-q"]),
    (("-v",), []),  # pytest's whole header again
    (("-vv",), []),
    (("--verbose",), []),
    (("-q",), []),  # not twice as quiet
    (("--collect-only",), []),
    (("--co",), []),
])
def test_the_run_is_quiet_unless_a_verbosity_is_chosen(args: tuple[str, ...], added: list[str]) -> None:
    assert cli.quiet(args) == added
