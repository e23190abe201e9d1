"""Multi-step conversations: which step of a scenario answers a request.

An agent runs a turn loop: the model answers with a call, the agent runs it and sends
the result back, the model answers again. A scenario holds that loop as its backend
(step 1) plus ``steps:`` (step 2, 3, ...). The step a request gets is read from the
conversation it carries, never from the order requests arrive in: step n+1 answers a
request carrying n tool results. A retry of a request therefore gets the same step,
and a side request (an agent's title request, which carries no tools) never takes a
step at all.

Pure: scenario and request body in, step or reason out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import WireDialect
from harness.core.dialects.frames import ContentFrame, frames_from
from harness.core.scenario.model import Scenario

#: What a side request (one that carries no tools) is answered with.
SIDE_TEXT = "Conformance run"


def has_steps(scenario: Scenario) -> bool:
    return bool(scenario.raw.get("steps"))


def step_scenarios(scenario: Scenario) -> tuple[Scenario, ...]:
    """One scenario per step, step 1 first: each the same case with the step's answer as its backend."""
    out = [scenario]
    dialect = scenario.backend.dialect
    for step in scenario.raw.get("steps") or ():
        backend = dataclasses.replace(
            scenario.backend, frames=frames_from(step["frames"]),
            finish_reason=step.get("finish_reason", dialect.default_finish), fault=None)
        out.append(dataclasses.replace(scenario, backend=backend))
    return tuple(out)


def side_scenario(scenario: Scenario) -> Scenario:
    """The case answering a side request: a short plain text."""
    backend = dataclasses.replace(scenario.backend, frames=(ContentFrame(SIDE_TEXT),),
                                  finish_reason=scenario.backend.dialect.default_finish, fault=None)
    return dataclasses.replace(scenario, backend=backend)


def tool_results(dialect: WireDialect, body: Mapping[str, Any]) -> int:
    """How many tool results the conversation in ``body`` carries (Chat ``role: "tool"`` messages,
    Messages ``tool_result`` blocks, Responses ``function_call_output`` items), as the dialect's
    own request reader finds them."""
    return len(dialect.requests.read(body).results)


def is_side_request(body: Mapping[str, Any]) -> bool:
    """A request that offers no tools (absent or empty): an agent's title or summary request.
    Codex's "code mode" offers its tools in an ``additional_tools`` input item instead."""
    if body.get("tools"):
        return False
    items = body.get("input")
    return not (isinstance(items, list) and any(
        isinstance(i, Mapping) and i.get("type") == "additional_tools" and i.get("tools") for i in items))


@dataclass(frozen=True, slots=True)
class StepChoice:
    """The step answering a request (1-based), ``side`` for a side request, or ``problem``
    when no step matches (naming the nearest one)."""

    step: int | None
    side: bool = False
    problem: str | None = None


def choose_step(scenario: Scenario, dialect: WireDialect, body: Mapping[str, Any]) -> StepChoice:
    if is_side_request(body):
        return StepChoice(None, side=True)
    count = len(scenario.raw.get("steps") or ()) + 1
    results = tool_results(dialect, body)
    if results < count:
        return StepChoice(results + 1)
    return StepChoice(None, problem=(
        f"scenario '{scenario.id}' has {count} step(s), answering requests that carry 0 to {count - 1} tool "
        f"result(s); this request carries {results}, so no step matches (the nearest is step {count}, which "
        f"answers a request carrying {count - 1}): the conversation went on past the scenario's last step"))
