"""``--model FAMILY=NAME`` reaches every case whose verdict relies on rescuing FAMILY, not only the
cases filed under it: a proxy that picks its parser by model name (llm-toolcall-proxy's
``converters/factory.py``) otherwise reads a fault case's Hermes call under a model name it maps to no
parser, and is failed for a format it was never told the text is in."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.scenario.loading import load_scenario
from harness.run.settings import parse_models

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize(("path", "options", "expected"), [
    # a fault case carrying a Hermes call: its family names no model, the format it rescues does
    ("faults/openai-split-multibyte-call.yaml", ["hermes=qwen3-32b"], "qwen3-32b"),
    # the case's own family comes first
    ("faults/openai-split-multibyte-call.yaml", ["hermes=qwen3-32b", "faults=fault-model"], "fault-model"),
    # a case that rescues nothing gets the run's model
    ("faults/openai-http-429-retry-after.yaml", ["run-model", "hermes=qwen3-32b"], "run-model"),
    ("faults/openai-http-429-retry-after.yaml", ["hermes=qwen3-32b"], None),
    # a case filed under the format
    ("hermes/arguments-as-string.yaml", ["run-model", "hermes=qwen3-32b"], "qwen3-32b"),
])
def test_model_follows_the_rescued_format(path: str, options: list[str], expected: str | None) -> None:
    scenario = load_scenario(SCENARIOS / path)
    assert parse_models(options).for_scenario(scenario) == expected
