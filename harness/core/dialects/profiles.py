"""Client profiles: how the harness presents itself to the proxy under test.

A proxy may pick its output format by looking at who is calling (Cline/Roo/Kilo are
recognised by User-Agent), so each profile sends the headers of the client family
it stands for. Running a case under ``xml-client`` (clients that read tool calls as XML
in the content; ``vtc`` is its old spelling) only makes sense when the proxy claims
the ``xml-client`` feature; a case that conflicts with a feature the proxy claims is skipped.
The profiles themselves are objects of the core (``harness.core.dialects.clients``); this
module chooses one for a case and says the request as its client sends it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from harness.core.dialects.clients import ClientProfile as Profile
from harness.core.dialects.clients import client

if TYPE_CHECKING:  # only named in annotations: the scenario model imports the dialects, not the reverse
    from harness.core.scenario.model import Scenario


def written_profile(profile: Profile) -> Profile:
    """The profile a case for ``profile``'s client is written under (itself, unless translated)."""
    return profile.case_profile


def client_body(profile: Profile, body: Mapping[str, Any]) -> dict[str, Any]:
    """The request body as ``profile``'s client sends it."""
    return profile.body(body)


def parse_profile(value: str) -> Profile:
    """A profile from its name on the command line (an old spelling such as ``vtc`` is read as
    today's), or ``ValueError`` naming every choice."""
    return client(value)


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Later layers win, names compared case-insensitively; the spelling of the
    winning layer is kept so the proxy sees what the user wrote."""
    merged: dict[str, tuple[str, str]] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = (name, value)
    return dict(merged.values())


def request_headers(profile: Profile, scenario_headers: Mapping[str, str], user_headers: Mapping[str, str]) -> dict[str, str]:
    """Profile defaults, then the scenario's own headers, then the user's ``--proxy-header``s."""
    return merge_headers({"Content-Type": "application/json"}, profile.headers, scenario_headers, user_headers)


def missing_features(needed: Iterable[str], claimed: Iterable[str]) -> list[str]:
    have = set(claimed)
    return [f for f in needed if f not in have]


def feature_skip_reason(missing: Iterable[str], *, what: str) -> str:
    """The reason a skipped case shows: which feature, and how to claim it."""
    names = list(missing)
    flag = ",".join(names)
    noun = "feature" if len(names) == 1 else "features"
    return f"{what} requires {noun} {', '.join(names)} (pass --features {flag} if your proxy has it)"


def conflict_skip_reason(clashing: Iterable[str]) -> str:
    """The reason a case is skipped because the proxy has a feature it cannot hold with."""
    names = list(clashing)
    noun = "feature" if len(names) == 1 else "features"
    return (f"scenario cannot hold for a proxy with {noun} {', '.join(names)}, which it claims "
            "(the scenario's conflicts); a correct proxy with it is right to fail this case")


def choose_profile(scenario: Scenario, requested: Profile | None, features: Iterable[str]) -> tuple[Profile, str | None]:
    """The profile a case runs under and, when it cannot run, why (the skip reason)."""
    profile: Profile = requested or scenario.client.profile
    written_as = profile.written_as
    if written_as is not None and profile not in scenario.client.profiles:
        if written_as not in scenario.client.profiles or scenario.client.raw_body is not None:
            return profile, (f"not meaningful under client profile {profile.name}: it says a {written_as.name} "
                             "client's request, and its " + ("raw body cannot be rewritten" if scenario.client.raw_body
                                                             is not None else f"client.profiles lack {written_as.name}"))
    elif profile not in scenario.client.profiles:
        meaningful = ", ".join(p.name for p in scenario.client.profiles)
        return profile, (f"not meaningful under client profile {profile.name} "
                         f"(the scenario's client.profiles: {meaningful})")
    if profile.shape is not None and profile.shape.tools and not scenario.client.request.get("tools"):
        return profile, (f"not meaningful under client profile {profile.name}: {profile.label} always declares its "
                         "own tools, and the case's request declares none")
    claimed = frozenset(features)
    lacking = missing_features(scenario.requires, claimed)
    if lacking:
        return profile, feature_skip_reason(lacking, what="scenario")
    clashing = [f for f in scenario.conflicts if f in claimed]
    if clashing:
        return profile, conflict_skip_reason(clashing)
    lacking = missing_features(profile.features, claimed)
    if lacking:
        return profile, feature_skip_reason(lacking, what=f"client profile {profile.name}")
    return profile, None
