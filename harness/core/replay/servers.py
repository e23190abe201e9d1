"""A scenario's answer played by a real server's profile (``harness.core.dialects.servers``):
the scenario marked for it, and its events rewritten with the server's habits.

The mock plays a marked scenario through ``as_served``; the harness marks an item's
scenario with ``played_by``, so the mock, a replay and a failure's transcript agree.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from harness.core.dialects import WireDialect
from harness.core.dialects.frames import RawFrame, ToolCallFrame
from harness.core.dialects.servers import SERVERS, ServerProfile
from harness.core.replay.wire import Event, multibyte_cut
from harness.core.scenario.model import Backend, Scenario
from harness.core.scenario.steps import has_steps


def played_by(scenario: Scenario, server: ServerProfile | None) -> Scenario:
    """``scenario`` with its answer streamed the way ``server`` streams (None: as written)."""
    if server is None:
        return scenario
    raw: dict[str, Any] = copy.deepcopy(dict(scenario.raw))
    raw.setdefault("backend", {})["server"] = server.name
    return dataclasses.replace(scenario, backend=dataclasses.replace(scenario.backend, server=server), raw=raw)


def as_served(events: list[Event], backend: Backend) -> list[Event]:
    """A streamed answer's events as the backend's server sends them (unchanged without one,
    or when the server does not speak the dialect the answer is in)."""
    server = backend.server
    if server is None or not server.serves(backend.dialect):
        return events
    played = server.play_bytes([(e.data, e.delay) for e in events], backend.dialect)
    return [Event(data, delay, multibyte_cut(data) if backend.split_multibyte else None) for data, delay in played]


def playable(scenario: Scenario, dialect: WireDialect) -> bool:
    """Whether a server's habits can play ``scenario`` with its backend served in ``dialect``:
    a streamed answer of one step whose frames say nothing on the wire themselves (raw frames
    and faults are written byte for byte on purpose; a habit would change what they test), and
    whose native calls carry a JSON object: the cases of calls with broken arguments test what a
    proxy makes of a deliberately odd call, which habits rewrite (a server that writes arguments as
    an object, TGI's, cannot say one, and its grammar never writes one)."""
    backend = scenario.backend
    return (scenario.streams and backend.stream is not False and backend.fault is None and not has_steps(scenario)
            and not any(isinstance(f, RawFrame) for f in backend.frames)
            and all(_json_object(arguments) for arguments in _native_arguments(scenario))
            and any(s.serves(dialect) for s in SERVERS.values()))


def _native_arguments(scenario: Scenario) -> list[str]:
    """Each native call's arguments, its fragments joined."""
    joined: dict[int, str] = {}
    for frame in scenario.backend.frames:
        if isinstance(frame, ToolCallFrame):
            joined[frame.index] = joined.get(frame.index, "") + (frame.arguments or "")
    return list(joined.values())


def _json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
