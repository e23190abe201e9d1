"""A fuzz run over a given proxy and mock, as the tests of generated cases start it."""

from __future__ import annotations

from pathlib import Path

from mutants.base import proxy_config
from support import PATIENT_TIMEOUT

from harness.core.dialects.clients import CLIENTS
from harness.run.fuzz_pool import CasePool
from harness.run.fuzzing import FuzzReport, FuzzSettings, fuzz
from harness.run.settings import RunSettings
from mock_backends.control import MockControl

FEATURES = proxy_config("http://127.0.0.1:1/v1").features()
SEED = 20261125


def run_fuzz(proxy_url: str, mock_url: str, formats: tuple[str, ...], examples: int, out: Path, *,
             profiles: tuple[str, ...] = ("openai",), seed: int = SEED, database: Path | None = None,
             shrink_budget: int = 15, pool: CasePool | None = None) -> FuzzReport:
    config = FuzzSettings(run=RunSettings(proxy_url=proxy_url, features=FEATURES, timeout=PATIENT_TIMEOUT), formats=formats,
                          profiles=tuple(CLIENTS[p] for p in profiles), examples=examples, seed=seed, database=database, out=out,
                          shrink_budget=shrink_budget)
    with MockControl(mock_url) as mock:
        return fuzz(config, mock, replay_command=lambda scenario_id, _case: f"toolcall-conformance replay {scenario_id}",
                    pool=pool)
