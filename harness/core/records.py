"""What playing one test item produced: each exchange (or comparison of two) with the
failures it showed, gathered per scenario. The runner makes them; the reports, the
plugin and the fuzzer read them, so they live in the core that all of those import."""

from __future__ import annotations

from dataclasses import dataclass

from harness.core.dialects.clients import Profile
from harness.core.errors import ConformanceFailure
from harness.core.exchange import Exchange
from harness.core.frames.rechunk import Variant
from harness.core.frames.shrink import Shrunk
from harness.core.scenario.model import Scenario


@dataclass(frozen=True)
class Attempt:
    """One exchange of an item (or the comparison of two) and what it broke."""

    kind: str  # "stream", "non-stream", "equivalence", "rechunk", "item" (all the answers together), "isolation"
    label: str
    scenario: Scenario  # as played (re-chunked variants differ from the file)
    exchange: Exchange | None
    failures: tuple[ConformanceFailure, ...]
    other: Exchange | None = None  # "equivalence": the streamed exchange compared against
    variant: Variant | None = None
    shrunk: Shrunk | None = None
    shrunk_rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    profile: Profile
    attempts: tuple[Attempt, ...]

    @property
    def failures(self) -> list[tuple[Attempt, ConformanceFailure]]:
        return [(a, f) for a in self.attempts for f in a.failures]

    @property
    def failed_rules(self) -> list[str]:
        """Distinct rule ids that failed, in the order first seen."""
        return list(dict.fromkeys(f.rule_id for _, f in self.failures))
