"""A huge message gives the proxy more of its own time before the exchange counts as hanging.

claude-code-router 2.0.0 answered the 10 MB case in about 16 s on a loaded machine, and both of
its versions were failed HTTP-002 at the 10 s default: slow, not hung. llm-interactive-proxy took
19.7 s to its first byte (20.6 s to a Messages client) on a fresh proxy at a load average of 7-9, and
more in a full run, past the 20 s that 1 s per MB gave it, then served the next request. A case
without padding keeps the time it was given.
"""

from __future__ import annotations

import pytest

from harness.run.proxy_client import exchange_timeout
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}


@pytest.mark.parametrize(("case", "at_least", "at_most"), [
    ("bad-input-openai-huge-message", 60.0, 63.0),
    ("bad-input-anthropic-huge-message", 60.0, 63.0),
    ("plain-native-single", 10.0, 10.0),
])
def test_the_time_an_exchange_may_take(case: str, at_least: float, at_most: float) -> None:
    assert at_least <= exchange_timeout(LIBRARY[case], 10.0) <= at_most
