"""``scripts/serve_variant.py``: a proxy of ``tests/mutants`` served as a process of its own,
so that a long ``fuzz --proxy-url`` (or a ``run``) plays it as it plays any proxy."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from mutants import ALL, CORRECT
from mutants.base import proxy_config
from support import PATIENT_TIMEOUT
from support.processes import STARTUP, Output

from harness.core.dialects.clients import CLIENTS
from harness.run.fuzzing import FuzzSettings, fuzz
from harness.run.servers import serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "serve_variant.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("serve_variant", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_proxy_of_the_tests_can_be_named_and_an_unknown_name_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    script = _script()
    assert script.main(["--list"]) == 0
    listed = [line.split(":", 1)[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [mutant.id for mutant in ALL]
    with pytest.raises(SystemExit) as exit_:
        script.main(["no-such-proxy"])
    assert exit_.value.code == 2 and "unknown proxy 'no-such-proxy'" in capsys.readouterr().err


@pytest.fixture
def mock_url() -> Iterator[str]:
    with serve(create_mock()) as server:
        yield server.url


def test_a_served_correct_but_different_proxy_is_played_by_fuzz_and_passes(mock_url: str, tmp_path: Path) -> None:
    variant = CORRECT[0]
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), variant.id, "--port", "0", "--upstream", f"{mock_url}/v1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        _, match = Output(process).until(rf"serving {variant.id} at (http://127\.0\.0\.1:\d+/v1) \(upstream ", STARTUP)
        settings = FuzzSettings(
            run=RunSettings(proxy_url=match.group(1), features=proxy_config(f"{mock_url}/v1").features(),
                            timeout=PATIENT_TIMEOUT),
            formats=("hermes",), profiles=(CLIENTS["openai"],), examples=3, seed=7, out=tmp_path)
        with MockControl(mock_url) as mock:
            report = fuzz(settings, mock, replay_command=lambda scenario_id, _case: scenario_id)
        assert [(r.format_id, r.examples) for r in report.results] == [("hermes", 3)]
        assert report.findings == [] and not list(tmp_path.rglob("*.yaml"))
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0, "SIGTERM stops it cleanly"
