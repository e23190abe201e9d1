"""A scenario's backend as a dialect-neutral script, served in any upstream dialect.

A backend is written in its natural dialect (``backend.dialect``), but what it says is
neutral: text frames, native calls, a finish, faults. ``serve_as`` rewrites it for
another dialect (native calls through each dialect's ``CallCodec``, the finish and
usage renamed, a fault's frame number moved to the same place), so one case tests a
proxy whichever dialect it calls upstream. What cannot be said in another dialect
(raw wire bytes, checks on the upstream request's own fields, an error body of one
API's shape) keeps the scenario to its natural dialect, with the reason.
"""

from __future__ import annotations

import copy
import dataclasses
import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from harness.core.dialects import DIALECTS, NativeCall, NotPortable, WireDialect
from harness.core.dialects.frames import EventFrame, Frame, RawFrame, frame_to_mapping

if TYPE_CHECKING:  # only named in annotations: the scenario model imports the dialects, not the reverse
    from harness.core.scenario.model import Scenario


def natural(scenario: Scenario) -> WireDialect:
    return scenario.backend.dialect


def upstream_dialects(scenario: Scenario) -> dict[WireDialect, str | None]:
    """Every dialect, with ``None`` where the scenario can be served in it, else why not."""
    out: dict[WireDialect, str | None] = {}
    for wire in DIALECTS.values():
        try:
            serve_as(scenario, wire)
            out[wire] = None
        except NotPortable as exc:
            out[wire] = str(exc)
    return out


def spread(scenario: Scenario) -> tuple[WireDialect, ...]:
    """The upstreams a scenario plays in the bundled run's default, ``spread``: its own, and one
    other it can be served in, chosen from its id (every run picks the same). The run still
    plays every dialect pair, on a share of the library each, so its length grows with the
    library and not with the number of dialects; ``all`` plays each scenario in every one. A case
    whose client never finishes its request (``truncate_body``) never reaches an upstream: its own
    dialect says all it can."""
    own = natural(scenario)
    if scenario.client.truncate_body:
        return (own,)
    others = [wire for wire, why in upstream_dialects(scenario).items() if why is None and wire is not own]
    return (own, others[zlib.crc32(scenario.id.encode()) % len(others)]) if others else (own,)


def natural_reason(scenario: Scenario, answers: WireDialect) -> str | None:
    """Why a case cannot be played in its own dialect (``--upstream-dialect natural``) for a
    client of the ``answers`` API, or None. A proxy played so is taken to call the API its
    client speaks wherever the case's backend is written in it; a case whose backend cannot
    be said in that API at all (``backend.upstream_dialects`` leaves it out) is for a proxy
    that translates, so it waits for the upstream dialect to be named."""
    only = scenario.raw.get("backend", {}).get("upstream_dialects")
    if only is None or answers.name in only:
        return None
    named = " or ".join(only)
    return (f"a case for a proxy that translates ({answers.title} cannot say its backend): played "
            f"with --upstream-dialect {named}")


def _reason_fixed(scenario: Scenario, target: WireDialect) -> str | None:
    own = natural(scenario)
    only = scenario.raw.get("backend", {}).get("upstream_dialects")
    if only is not None and target.name not in only:
        return f"the scenario is meaningful only with an upstream of the {' or '.join(only)} dialect (backend.upstream_dialects)"
    if any(isinstance(f, RawFrame) for f in scenario.backend.frames):
        return f"its raw frames are {own.title} wire bytes"
    if any(isinstance(f, EventFrame) for f in scenario.backend.frames):
        return f"its event frames are {own.title} messages"
    if scenario.expect.upstream:
        return f"its upstream checks address fields of the {own.title} request"
    fault = scenario.backend.fault
    if fault is not None and fault.kind == "http_error" and isinstance(fault.body, Mapping):
        if own.errors.read(fault.body) is None:
            return f"its error body is not an error of the {own.title} API's shape"
    return None


def serve_as(scenario: Scenario, target: WireDialect) -> Scenario:
    """``scenario`` with its backend written in the ``target`` dialect (itself when
    that is its own); ``NotPortable`` saying why it cannot be."""
    own = natural(scenario)
    if target is own:
        return scenario
    reason = _reason_fixed(scenario, target)
    if reason is not None:
        raise NotPortable(reason)
    backend = scenario.backend
    finish = own.neutral_finish(backend.finish_reason)
    if finish is None:
        raise NotPortable(f"its finish reason {backend.finish_reason!r} has no {target.title} equivalent")
    frames: list[Frame] = []
    moved: list[int] = [0]  # moved[n]: how many new frames the first n old frames became
    calls = 0
    for item in own.calls.read(backend.frames):
        if isinstance(item, NativeCall):
            written = target.calls.write([(calls, item)])
            calls += 1
            if item.frames > 1:  # a fault placed inside the call cannot be placed in the other dialect
                moved.extend([-1] * (item.frames - 1))
            frames.extend(written)
            moved.append(len(frames))
        else:
            frames.append(item)
            moved.append(len(frames))
    fault = backend.fault
    if fault is not None and fault.after_frame is not None:
        after = moved[fault.after_frame]
        if after < 0:
            raise NotPortable(f"its {fault.kind} fault falls inside a native call, which {target.title} sends whole")
        fault = dataclasses.replace(fault, after_frame=after)
    if fault is not None and fault.kind == "http_error" and isinstance(fault.body, Mapping):
        message = own.errors.read(fault.body) or ""
        fault = dataclasses.replace(fault, body=target.errors.write(message, target.error_type(fault.status or 500)))
    usage = target.native_usage(backend.usage) if backend.usage is not None else None
    new_backend = dataclasses.replace(
        backend, dialect=target, frames=tuple(frames), finish_reason=target.native_finish(finish),
        usage=usage, fault=fault, ping=backend.ping and target.pings,
    )
    raw: dict[str, Any] = copy.deepcopy(dict(scenario.raw))
    b = raw.setdefault("backend", {})
    b["dialect"] = target.name
    b["frames"] = [frame_to_mapping(f) for f in frames]
    b["finish_reason"] = new_backend.finish_reason
    if usage is not None:
        b["usage"] = usage
    if fault is not None and "fault" in b:
        if fault.after_frame is not None:
            b["fault"]["after_frame"] = fault.after_frame
        if fault.body is not None:
            b["fault"]["body"] = copy.deepcopy(fault.body)
    if not new_backend.ping:
        b.pop("ping", None)
    return dataclasses.replace(scenario, backend=new_backend, raw=raw)


def served_strictly(scenario: Scenario) -> Scenario:
    """``scenario`` with a backend that answers as a strict server would (``backend.strict``:
    the mock refuses what strict chat templates refuse, ``mock_backends/strict.py``)."""
    raw: dict[str, Any] = copy.deepcopy(dict(scenario.raw))
    raw.setdefault("backend", {})["strict"] = True
    return dataclasses.replace(scenario, backend=dataclasses.replace(scenario.backend, strict=True), raw=raw)
