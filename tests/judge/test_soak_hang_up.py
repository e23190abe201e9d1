"""How long after a client hung up the proxy's upstream request ended, read on the mock's clock:
a load generator that only gets the mock's answer late must not make a prompt close late."""

from __future__ import annotations

import pytest

from harness.core.exchange import BackendActivity
from harness.judge.soak import CLOSE_WITHIN, GIVE_UP_AFTER, hang_up_closed

HUNG_UP = 1_000.0  # the client's wall-clock moment of hanging up


@pytest.mark.parametrize(("waited", "received", "activity", "expected"), [
    # closed 0.3 s after the hang-up, though the answer saying so came 5 s late
    (5.0, 1, BackendActivity(0, 1.0, ended_at=HUNG_UP + 0.3, clock=HUNG_UP + 5.0), (True, pytest.approx(0.3))),
    # the mock's and the client's clocks a hair apart: never a negative time
    (0.1, 1, BackendActivity(0, 1.0, ended_at=HUNG_UP - 0.01, clock=HUNG_UP + 0.1), (True, 0.0)),
    # still answering, the mock's clock within the limit: ask again, however long the client waited
    (5.0, 1, BackendActivity(1, 1.0, clock=HUNG_UP + CLOSE_WITHIN - 0.1), (False, None)),
    # still answering past the limit on the mock's clock: late
    (0.5, 1, BackendActivity(1, 1.0, clock=HUNG_UP + CLOSE_WITHIN + 0.1), (True, None)),
    # nothing reached the mock yet: not closed, keep asking
    (0.1, 0, BackendActivity(0, 0.0, clock=HUNG_UP + 0.1), (False, None)),
    # a mock that gives no times: the client's own waiting is the measure
    (0.4, 1, BackendActivity(0, 1.0), (True, 0.4)),
    (CLOSE_WITHIN + 0.1, 1, BackendActivity(1, 1.0), (True, None)),
    # a mock whose clock never moves on is given up on
    (GIVE_UP_AFTER + 1, 1, BackendActivity(1, 1.0, clock=HUNG_UP), (True, None)),
])
def test_the_close_is_timed_on_the_mock_s_clock(waited: float, received: int, activity: BackendActivity,
                                                expected: tuple[bool, float | None]) -> None:
    assert hang_up_closed(HUNG_UP, waited, received, activity) == expected
