"""``FaultRate``, what ``create_app(fault_rate=...)`` and ``mock --fault-rate`` take.

The arithmetic is pure and shared with the soak's client side, so it lives in the core
(``harness.core.replay.fault_rate``); this name stays importable for code written against the mock.
"""

from __future__ import annotations

from harness.core.replay.fault_rate import FAULT_KINDS, RETRY_AFTER, FaultKind, FaultRate

__all__ = ["FAULT_KINDS", "RETRY_AFTER", "FaultKind", "FaultRate"]
