"""Upstream server profiles: each plays a scenario's answer with a real server's habits, keeps
what the answer says, and is proven by a proxy that breaks on one habit and is caught under
that server only (``tests/mutants/servers.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mutants.base import proxy_config
from mutants.servers import SERVER_MUTANTS, ServerMutant
from support.library import load_library
from support.mutant_rig import Rig, rig  # noqa: F401  (rig: the module's mock and reference proxy)
from support.servers import ServeFn, servers  # noqa: F401

from harness.core.dialects import ANTHROPIC, OPENAI
from harness.core.dialects.habits import Piece, parse
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.servers import SERVERS, server
from harness.core.replay.planned import wire_events
from harness.core.replay.servers import played_by, playable
from harness.core.scenario.model import Scenario
from harness.run.runner import play
from harness.run.settings import RunSettings
from mock_backends.control import MockControl

LIBRARY = {s.id: s for s in load_library()}
FEATURES = proxy_config("http://127.0.0.1:1/v1").features()
SCHEMA = Path(__file__).parents[2] / "harness" / "schemas" / "scenario.schema.json"
CASES = ("plain-native-single", "plain-native-parallel", "plain-include-usage", "plain-text-multibyte",
         "deepseek-deepseek-v3.split-escape", "anthropic-native-tool-use", "anthropic-text-around")


def test_the_catalogue() -> None:
    """At least ten servers; every habit says what it is, where it was seen and what a proxy must do."""
    assert len(SERVERS) >= 10
    schema = json.loads(SCHEMA.read_text())
    assert schema["$defs"]["backend"]["properties"]["server"]["enum"] == list(SERVERS)
    for profile in SERVERS.values():
        assert profile.dialects and server(profile.name) is profile
        for habit in (h for habits in profile.habits.values() for h in habits):
            assert habit.sources and all(s.startswith("https://") for s in habit.sources), habit.name
            assert habit.verdict in ("tolerate", "normalise") and habit.why and habit.says, habit.name
    with pytest.raises(ValueError, match="choose from"):
        server("no-such-server")


def _read(pieces: list[Piece], dialect: Any) -> tuple[str, list[tuple[str, Any]], bool]:
    """What any tolerant reader gets from a stream: its text, its calls (name, arguments) and whether it finished."""
    text, calls, finished = "", {}, False
    # events glued into one write, read one by one
    pieces = [parse(e + b"\n\n") for p in pieces for e in p.encode().split(b"\n\n") if e] if any(
        p.value is None and p.raw.count(b"data: {") > 1 for p in pieces) else pieces
    for p in pieces:
        v = p.value
        if not isinstance(v, dict):
            continue
        if dialect is ANTHROPIC:
            if v.get("type") == "content_block_start" and v["content_block"]["type"] == "tool_use":
                calls[v["index"]] = [v["content_block"]["name"], ""]
            elif v.get("type") == "content_block_delta":
                d = v["delta"]
                if d["type"] == "text_delta":
                    text += d["text"]
                elif d["type"] == "input_json_delta":
                    calls[v["index"]][1] += d["partial_json"]
            finished = finished or v.get("type") == "message_delta"
            continue
        for choice in v.get("choices") or ():
            d = choice.get("delta") or {}
            text += d.get("content") or ""
            deltas = d.get("tool_calls") or []
            for call in [deltas] if isinstance(deltas, dict) else deltas:
                fn = call.get("function") or {}
                named = bool(call.get("id") or fn.get("name"))
                index = call.get("index", len(calls) - 1 + (named or not calls))
                slot = calls.setdefault(index, ["", ""])
                slot[0] += fn.get("name") or ""
                args = fn.get("arguments")
                slot[1] += json.dumps(args) if isinstance(args, dict) else args or ""
            finished = finished or bool(choice.get("finish_reason"))
    return text, [(n, json.loads(a or "{}")) for n, a in calls.values()], finished


@pytest.mark.parametrize("name", list(SERVERS))
@pytest.mark.parametrize("case", CASES)
def test_a_server_keeps_what_the_answer_says(name: str, case: str) -> None:
    """Habits change how an answer is written, never what it says: the same text, the same
    calls, and a finish, for a reader that tolerates every habit."""
    scenario = LIBRARY[case]
    profile = SERVERS[name]
    dialect = scenario.backend.dialect
    if not profile.serves(dialect):
        pytest.skip(f"{name} does not speak {dialect.name}")
    assert playable(scenario, dialect)
    ideal = [parse(e.data) for e in wire_events(scenario)]
    real = [parse(e.data) for e in wire_events(played_by(scenario, profile))]
    assert _read(real, dialect) == _read(ideal, dialect)
    assert _read(real, dialect)[2]


def test_a_server_changes_the_stream() -> None:
    """Each server's habits show on at least one of the cases (a profile is never a no-op)."""
    for profile in SERVERS.values():
        changed = [case for case in CASES if profile.serves(LIBRARY[case].backend.dialect)
                   and wire_events(played_by(LIBRARY[case], profile)) != wire_events(LIBRARY[case])]
        assert changed, profile.name


def _failed(proxy_url: str, mock_url: str, scenario: Scenario) -> list[str]:
    settings = RunSettings(proxy_url=proxy_url, features=FEATURES, timeout=5.0)
    chosen, skip = choose_profile(scenario, None, FEATURES)
    assert skip is None, skip
    with MockControl(mock_url) as mock:
        return play(scenario, settings=settings, mock=mock, profile=chosen).failed_rules


def test_every_server_kills_a_mutant() -> None:
    assert {m.server for m in SERVER_MUTANTS} == set(SERVERS)
    for m in SERVER_MUTANTS:
        habits = {h.name for hs in SERVERS[m.server].habits.values() for h in hs}
        assert m.habit in habits, (m.server, m.habit)


@pytest.mark.parametrize("case", SERVER_MUTANTS, ids=[f"{m.server}-{m.mutant.id}" for m in SERVER_MUTANTS])
def test_the_mutant_fails_only_under_its_server(case: ServerMutant, servers: ServeFn, rig: Rig) -> None:  # noqa: F811
    """The reference proxy passes the case under the server; the mutant passes it against the
    ideal server and fails it, with the rules it names, under that server."""
    mutant = case.mutant
    url = f"{servers(mutant.app(f'{rig.mock_url}/v1')).url}/v1"
    for scenario_id in mutant.scenarios:
        ideal = LIBRARY[scenario_id]
        real = played_by(ideal, SERVERS[case.server])
        assert _failed(rig.reference_url, rig.mock_url, real) == []
        assert _failed(url, rig.mock_url, ideal) == [], f"{mutant.id} fails without {case.server}'s habits"
        caught = _failed(url, rig.mock_url, real)
        assert set(mutant.rules) <= set(caught), f"{mutant.id} under {case.server}: {caught}"


def test_openai_dialect_is_served_by_most() -> None:
    assert sum(s.serves(OPENAI) for s in SERVERS.values()) >= 10


RELAYED = ("plain-native-single", "plain-native-parallel", "plain-include-usage", "anthropic-native-tool-use")


@pytest.mark.parametrize("name", list(SERVERS))
def test_a_relay_fails_only_on_habits_to_normalise(name: str, servers: ServeFn, rig: Rig) -> None:  # noqa: F811
    """A proxy that relays the server's answer byte for byte passes every case it passes against the ideal
    server, unless the server has a habit to normalise (a named client breaks on it)."""
    from support.relay import relay_app

    profile = SERVERS[name]
    url = f"{servers(relay_app(f'{rig.mock_url}/v1')).url}/v1"
    to_normalise = {h.name for hs in profile.habits.values() for h in hs if h.verdict == "normalise"}
    for case in RELAYED:
        ideal = LIBRARY[case]
        if not profile.serves(ideal.backend.dialect) or _failed(url, rig.mock_url, ideal):
            continue
        failed = _failed(url, rig.mock_url, played_by(ideal, profile))
        changed = wire_events(played_by(ideal, profile)) != wire_events(ideal)
        assert not failed or (to_normalise and changed), f"{name}, {case}: a relay fails {failed}"


CAPTURES = sorted((Path(__file__).parents[1] / "fixtures" / "upstream_captures").glob("*.yaml"))


def _shape(piece: Piece) -> tuple[tuple[Any, ...], tuple[frozenset[str], ...]]:
    """What a capture and a profile must agree on for one event: its kind (what it carries, whether it
    finishes, where usage is) and the fields it has."""
    v = piece.value
    if v is None:
        raw = piece.encode().strip()
        return (("comment",) if raw.startswith(b":") else ("done",) if raw == b"data: [DONE]" else ("raw",)), ()
    if "choices" not in v:  # a Messages event
        inner = v.get("content_block") or v.get("delta") or {}
        return (v.get("type"), inner.get("type")), (frozenset(v),)
    usage = "absent" if "usage" not in v else "null" if v["usage"] is None else "object"
    if not v["choices"]:
        return ("usage" if usage == "object" else "no-choices", usage), (frozenset(v),)
    c = v["choices"][0]
    if "delta" not in c:
        return ("annotation", usage), (frozenset(v), frozenset(c))
    d = c["delta"]
    finishes = c.get("finish_reason") not in (None, "")
    kind = "text" if d.get("content") else "calls" if d.get("tool_calls") else "finish" if finishes else (
        "role" if d.get("role") else "empty")
    return (kind, finishes, usage), (frozenset(v), frozenset(c), frozenset(d))


def _collapsed(pieces: list[Piece]) -> list[tuple[tuple[Any, ...], tuple[frozenset[str], ...]]]:
    out: list[tuple[tuple[Any, ...], tuple[frozenset[str], ...]]] = []
    for p in pieces:
        shape = _shape(p)
        if not out or out[-1] != shape:
            out.append(shape)
    return out


def test_every_server_has_a_capture() -> None:
    """Each profile is checked against at least one stream its server sent in a public report."""
    named = {yaml.safe_load(path.read_text())["server"] for path in CAPTURES}
    assert named == set(SERVERS), sorted(set(SERVERS) - named)
    for path in CAPTURES:
        data = yaml.safe_load(path.read_text())
        assert data["server"] in SERVERS and data["source"].startswith("https://"), path.name
        assert data["scenario"] in LIBRARY, path.name


@pytest.mark.parametrize("path", CAPTURES, ids=[p.stem for p in CAPTURES])
def test_a_profile_reproduces_its_server_s_capture(path: Path) -> None:
    """The profile's transform of the matching scenario has the capture's shape: each kind of event the
    capture shows, in its order (where the role, the text, the finish and the usage come), with at least
    the fields the server sent."""
    data = yaml.safe_load(path.read_text())
    profile = SERVERS[data["server"]]
    captured = _collapsed([parse(e.encode() + b"\n\n") for e in data["events"].strip().split("\n\n")])
    # one event at a time: events glued into one network write are still events of their own
    played = _collapsed([parse(e + b"\n\n") for w in wire_events(played_by(LIBRARY[data["scenario"]], profile))
                         for e in w.data.split(b"\n\n") if e.strip()])
    at = 0
    for kind, fields in captured:
        found = next((i for i in range(at, len(played)) if played[i][0] == kind
                      and all(f <= g for f, g in zip(fields, played[i][1], strict=True))), None)
        assert found is not None, (f"{profile.name} never streams {kind} with fields {[sorted(f) for f in fields]} "
                                   f"after event {at}; it streams {[(k, [sorted(f) for f in fs]) for k, fs in played]}")
        at = found + 1


def test_the_docs_name_every_habit() -> None:
    text = (Path(__file__).parents[2] / "docs" / "mock-backend.md").read_text()
    for profile in SERVERS.values():
        assert f"**`{profile.name}`**" in text, profile.name
        for habit in (h for hs in profile.habits.values() for h in hs):
            assert f"`{habit.name}`" in text, (profile.name, habit.name)
