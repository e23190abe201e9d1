"""One mock that faults every upstream request and one reference proxy in front of it, for a
module of soak tests that each play a case under each drawn fault: every exchange arms a
run of its own (its nonce draws the fault), so the tests share the two servers instead of
starting and stopping a pair each (a few tenths of a second a test)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest
from mutants.base import proxy_config, reference

from harness.core.replay.fault_rate import FaultRate
from harness.run.servers import serve
from mock_backends.app import create_app

# Every request faulted, one kind drawn per nonce; a stall short enough for many of them.
RATE = FaultRate(1.0, seed=5, stall_seconds=0.05)


@dataclass(frozen=True)
class FaultRig:
    rate: FaultRate
    mock_url: str
    proxy_url: str  # the reference proxy's root (no /v1)


@pytest.fixture(scope="module")
def fault_rig() -> Iterator[FaultRig]:
    with ExitStack() as stack:
        mock_url = stack.enter_context(serve(create_app(fault_rate=RATE))).url
        proxy_url = stack.enter_context(serve(reference(proxy_config(f"{mock_url}/v1")))).url
        yield FaultRig(RATE, mock_url, proxy_url)
