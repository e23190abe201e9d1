"""The ``run`` command spreads the whole bundled run over xdist workers unless told otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cli import main as cli
from harness.run.options import BY_NAME


def _values(**given: Any) -> dict[str, Any]:
    values: dict[str, Any] = {BY_NAME["scenarios"].dest: (), BY_NAME["proxy-url"].dest: None}
    values.update({BY_NAME[name.replace("_", "-")].dest: value for name, value in given.items()})
    return values


@pytest.mark.parametrize(("args", "given", "parallel"), [
    ((), {}, True),  # the whole bundled library against the bundled proxies
    (("-k", "hermes"), {}, True),
    (("-n", "0"), {}, False),  # one process, as asked
    (("-n4",), {}, False),
    (("--numprocesses=3",), {}, False),
    (("-p", "no:xdist"), {}, False),
    (("--collect-only",), {}, False),
    ((), {"scenarios": ("scenarios/plain",)}, False),  # chosen scenarios: as few as the user picked
    ((), {"proxy_url": "http://127.0.0.1:8000/v1"}, False),  # a proxy under test: its own pace
])
def test_the_whole_bundled_run_is_parallel_by_default(monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                                      given: dict[str, Any], parallel: bool) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert cli.default_workers(args, _values(**given)) == (["-n", "2"] if parallel else [])


def test_one_core_runs_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert cli.default_workers((), _values()) == []
    monkeypatch.setattr("os.cpu_count", lambda: 64)
    assert cli.default_workers((), _values()) == ["-n", "4"]  # the mock and proxy serve them all from one process
