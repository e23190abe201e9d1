"""Faults at a rate: a stated share of requests answered with an upstream failure.

Pure and shared by both sides. Whether a request is faulted, and how, is a hash of the
seed, the run's nonce and the request's number within the run (0 for the client's own
request, 1.. for a proxy's retries), so the mock needs no shared random state across
concurrent requests, a run is reproducible from its seed, and the client that armed the
run knows which of its requests were faulted without asking the mock.

The kinds are what an inference server does under load: the connection drops mid-stream,
the stream stalls, a 503, a 429 with ``Retry-After``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from harness.core.scenario.model import Fault

FaultKind = Literal["drop", "stall", "http_503", "http_429"]
FAULT_KINDS: tuple[FaultKind, ...] = ("drop", "stall", "http_503", "http_429")
RETRY_AFTER = "1"  # seconds, in the 429's Retry-After header


@dataclass(frozen=True)
class FaultRate:
    """``rate`` of requests (0..1) faulted, chosen from ``seed``; a stall lasts ``stall_seconds``."""

    rate: float
    seed: int = 0
    stall_seconds: float = 2.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"the fault rate must be from 0 to 1, not {self.rate}")
        if self.stall_seconds < 0:
            raise ValueError("the stall must last 0 seconds or more")

    def decide(self, nonce: str, attempt: int = 0) -> FaultKind | None:
        """The fault of request number ``attempt`` of the run ``nonce``, or None."""
        if self.rate <= 0.0:
            return None
        digest = hashlib.blake2b(f"{self.seed}:{nonce}:{attempt}".encode(), digest_size=16).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= self.rate:
            return None
        return FAULT_KINDS[int.from_bytes(digest[8:], "big") % len(FAULT_KINDS)]

    def fault(self, kind: FaultKind, frames: int) -> Fault:
        """The scenario fault playing ``kind`` for an answer of ``frames`` frames (mid-stream: after half)."""
        middle = frames // 2
        if kind == "drop":
            return Fault("drop", after_frame=middle)
        if kind == "stall":
            return Fault("stall", after_frame=middle, seconds=self.stall_seconds)
        if kind == "http_503":
            return Fault("http_error", status=503)
        return Fault("http_error", status=429, headers={"retry-after": RETRY_AFTER})
