"""The events the mock streams for a scenario, planned with its dialect's replay and fixed ids,
a real server's habits included: what re-chunking tears into writes, and what tests compare
across server profiles."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.core.replay import anthropic, kiro, ollama, openai, responses
from harness.core.replay.servers import as_served
from harness.core.replay.wire import Event
from harness.core.scenario.model import Backend, Scenario

# Each upstream dialect's replay planner (one module per dialect, the same ``planned_events`` in each).
_PLANNED: Mapping[WireDialect, Callable[[Backend, Mapping[str, Any]], list[Event]]] = {
    OPENAI: openai.planned_events, ANTHROPIC: anthropic.planned_events, RESPONSES: responses.planned_events,
    KIRO: kiro.planned_events, OLLAMA: ollama.planned_events}


def wire_events(scenario: Scenario) -> list[Event]:
    """The events the mock streams for ``scenario``, envelopes, native and raw frames included."""
    return as_served(_PLANNED[scenario.backend.dialect](scenario.backend, scenario.client.request), scenario.backend)
