"""A multi-step scenario's answer to one request: the step its conversation has reached,
the short text a side request gets, or the reason no step matches.

The step is read from the request (``harness.core.scenario.steps``), so retries, side
requests and runs played side by side never take another request's step.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from harness.core.dialects import WireDialect
from harness.core.exchange import RecordedRequest
from harness.core.scenario.steps import choose_step
from mock_backends.registry import Prepared, Registry


def pick_step(prepared: Prepared, dialect: WireDialect, body: Mapping[str, Any]) -> Prepared | str:
    """The prepared answer for ``body``, or the problem to answer an error with."""
    if not prepared.steps and prepared.side is None:
        return prepared
    choice = choose_step(prepared.scenario, dialect, body)
    if choice.side:
        assert prepared.side is not None
        return prepared.side
    if choice.step is None:
        return choice.problem or "no step matches"
    return prepared if choice.step == 1 else prepared.steps[choice.step - 2]


def record_probe(registry: Registry, method: str, path: str, query: str, headers: dict[str, str]) -> bool:
    """A ``HEAD`` probe (Claude Code sends ``HEAD /`` at start): kept by the only armed run,
    if exactly one is armed, without claiming it. True when the probe is answered 200."""
    if method != "HEAD":
        return False
    runs = [run for run in (registry.get(n) for n in registry.nonces()) if run is not None]
    if len(runs) == 1:
        runs[0].record(RecordedRequest(method, path, query, headers, None, None, time.time())).end()
    return True
