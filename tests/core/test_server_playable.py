"""Which cases a real server's profile plays: never a call whose arguments are no JSON object.

The broken-arguments cases test what a proxy makes of a deliberately odd call; a server's habits
rewrite calls (TGI writes arguments as an object and constrains them with a grammar, so it never
sends such a call), and LiteLLM 1.108.7 was failed for what it made of a TGI stream no TGI writes.
"""

from __future__ import annotations

import pytest

from harness.core.dialects.openai import OPENAI
from harness.core.replay.servers import playable
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}

# (case, playable under a server's profile)
CASES: dict[str, bool] = {
    "plain-native-single": True,
    "plain-native-parallel": True,
    "faults-openai-broken-native-arguments": False,
    "faults-anthropic-broken-native-arguments": False,
    "plain-native-no-arguments": False,  # "" is no JSON object either: a server writing objects cannot say it
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_server_plays_only_calls_it_could_send(case: str) -> None:
    assert playable(LIBRARY[case], OPENAI) is CASES[case]
