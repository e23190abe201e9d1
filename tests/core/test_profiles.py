"""Which cases run under which profile and claimed features, and why the others are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.dialects.profiles import choose_profile
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario


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
    "conflict-claimed": ({"conflicts": ["force-non-stream"]}, None, {"force-non-stream", "xml-client"},
                         "cannot hold for a proxy with feature force-non-stream"),
    "conflicts-claimed": ({"conflicts": ["force-non-stream", "system-to-user"]}, CLIENTS["openai"],
                          {"force-non-stream", "system-to-user"},
                          "with features force-non-stream, system-to-user"),
    "requirement-first": ({"requires": ["loop-guard"], "conflicts": ["xml-client"]}, None, {"xml-client"},
                          "requires feature loop-guard"),
    "profile-not-meaningful": ({"client": {"profiles": ["openai"], "request": {"messages": [{"role": "user"}]}}},
                               CLIENTS["xml-client"], {"xml-client"}, "not meaningful under client profile xml-client"),
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


# ``vtc`` ("virtual tool calling") is the old spelling of ``xml-client``: still read wherever a user writes a
# profile or a feature, and never seen past the point where it is read.
OLD_SPELLING: dict[str, dict[str, Any]] = {
    "profile": {"client": {"profile": "vtc", "profiles": ["vtc"],
                           "request": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}}},
    "both-spellings": {"client": {"profile": "vtc", "profiles": ["xml-client", "vtc"],
                                  "request": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}}},
    "requires": {"requires": ["vtc"]},
    "conflicts": {"conflicts": ["vtc"]},
    "assertion-requires": {"expect": {"upstream": [{"path": "/model", "equals": "m", "requires": ["vtc"]}]}},
}


@pytest.mark.parametrize("case", list(OLD_SPELLING))
def test_scenario_files_may_name_the_xml_client_profile_vtc(case: str) -> None:
    scenario = _scenario(**OLD_SPELLING[case])
    named = {scenario.client.profile.name, *(p.name for p in scenario.client.profiles), *scenario.requires,
             *scenario.conflicts,
             *(f for a in scenario.expect.upstream for f in a.requires)}
    assert "vtc" not in named and "xml-client" in named
    assert len(scenario.client.profiles) == len(set(scenario.client.profiles))


def test_the_command_line_may_name_the_xml_client_profile_and_feature_vtc() -> None:
    from harness.core.dialects.profiles import parse_profile
    from harness.run.options import BY_NAME
    from harness.run.settings import parse_features, with_profile_features

    assert parse_profile("vtc") is parse_profile("xml-client") is CLIENTS["xml-client"]
    assert {"vtc", "xml-client"} <= set(BY_NAME["client-profile"].choices or ())
    assert parse_features(["vtc,loop-guard"]) == {"xml-client", "loop-guard"}
    assert with_profile_features(parse_features(["vtc"]), parse_profile("vtc")) == {"xml-client"}
    with pytest.raises(ValueError, match="vtc is the old spelling of xml-client"):
        parse_profile("kilo")
