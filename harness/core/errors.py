"""One exception tree for everything the project raises on purpose.

Callers catch ``ConformanceError`` to handle any of them; the CLI turns each into
one clear line instead of a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ConformanceError(Exception):
    """Base of every error this project raises deliberately."""


@dataclass(frozen=True)
class ScenarioProblem:
    """One problem in one scenario file, located as precisely as we can."""

    path: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.field}: {self.message}"


class ScenarioError(ConformanceError):
    """A scenario file (or set of files) is invalid; carries every problem found."""

    def __init__(self, problems: list[ScenarioProblem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class MockError(ConformanceError):
    """The mock backend could not be armed, reached or queried."""


class ProxyUnreachable(ConformanceError):
    """The proxy under test could not be reached at all."""


class ConformanceFailure(ConformanceError):
    """A proxy broke one rule. ``rule_id`` is stable and documented; ``evidence``
    holds what the rule saw (event positions, expected vs actual) for the report."""

    def __init__(self, rule_id: str, message: str, evidence: dict[str, Any] | None = None) -> None:
        self.rule_id = rule_id
        self.message = message
        self.evidence: dict[str, Any] = evidence or {}
        super().__init__(f"{rule_id}: {message}")


@dataclass
class FailureSet(ConformanceError):
    """All rule failures of one scenario run, raised together so the report shows
    every broken rule, not only the first."""

    scenario_id: str
    failures: list[ConformanceFailure] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(f"{self.scenario_id}: {len(self.failures)} rule(s) failed")
