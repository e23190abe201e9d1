"""SSE framing rules: how the bytes of a stream are cut into events."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group
from harness.judge.readers.sse import AnomalyKind

rule = rule_group("framing", "SSE", stage="stream")


# The rule each framing flaw the SSE reader finds breaks.
_RULE_OF: Mapping[AnomalyKind, str] = {
    "stray-payload": "SSE-001", "glued-events": "SSE-002", "split-payload": "SSE-003", "done-missing": "SSE-004",
    "done-not-exact": "SSE-005", "event-after-done": "SSE-006", "done-repeated": "SSE-007",
    "bytes-after-done": "SSE-007", "invalid-utf8": "SSE-008", "unterminated-event": "SSE-009",
}


def _anomalies(ctx: Context) -> Mapping[str, list[Violation]]:
    """The stream's framing flaws, in stream order, each filed under the rule it breaks."""
    found: dict[str, list[Violation]] = defaultdict(list)
    for a in ctx.stream.anomalies:
        evidence: dict[str, Any] = {"byte_offset": a.byte_offset, "excerpt": a.excerpt}
        if a.event_index is not None:
            evidence["event_index"] = a.event_index
        found[_RULE_OF[a.kind]].append(Violation(a.message, evidence))
    return found


# Each rule judged by the flaws filed under its id.
framing = rule.found_by(_anomalies)


framing("SSE-001", profiles=EVERY_PROFILE)


framing("SSE-002", profiles=EVERY_PROFILE)


framing("SSE-003")


framing("SSE-004")


framing("SSE-005")


framing("SSE-006")


framing("SSE-007")


framing("SSE-008", profiles=EVERY_PROFILE)


framing("SSE-009", profiles=EVERY_PROFILE)
