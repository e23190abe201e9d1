"""Which cases run under which profile and claimed features, and why the others are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from harness.exchange import Profile
from harness.profiles import choose_profile
from harness.scenario import Scenario, parse_scenario


def _scenario(**top: Any) -> Scenario:
    return parse_scenario({
        "id": "case", "title": "t", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["hi"]},
        "client": {"request": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}},
        "expect": {},
        **top,
    })


# (scenario's top-level keys, requested profile, claimed features, the skip reason's fragment or None: it runs)
CHOICES: dict[str, tuple[dict[str, Any], Profile | None, set[str], str | None]] = {
    "plain": ({}, None, set(), None),
    "required-and-claimed": ({"requires": ["loop-guard"]}, None, {"loop-guard"}, None),
    "required-not-claimed": ({"requires": ["loop-guard"]}, None, set(), "requires feature loop-guard"),
    "conflict-not-claimed": ({"conflicts": ["force-non-stream"]}, None, {"loop-guard"}, None),
    "conflict-claimed": ({"conflicts": ["force-non-stream"]}, None, {"force-non-stream", "vtc"},
                         "cannot hold for a proxy with feature force-non-stream"),
    "conflicts-claimed": ({"conflicts": ["force-non-stream", "system-to-user"]}, "openai",
                          {"force-non-stream", "system-to-user"},
                          "with features force-non-stream, system-to-user"),
    "requirement-first": ({"requires": ["loop-guard"], "conflicts": ["vtc"]}, None, {"vtc"},
                          "requires feature loop-guard"),
    "profile-not-meaningful": ({"client": {"profiles": ["openai"], "request": {"messages": [{"role": "user"}]}}},
                               "vtc", {"vtc"}, "not meaningful under client profile vtc"),
}


@pytest.mark.parametrize("case", list(CHOICES))
def test_choose_profile(case: str) -> None:
    top, requested, claimed, reason = CHOICES[case]
    scenario = _scenario(**top)
    profile, skip = choose_profile(scenario, requested, claimed)
    assert profile == (requested or scenario.client.profile)
    if reason is None:
        assert skip is None
    else:
        assert skip is not None and reason in skip, skip
