"""The cross-field checks of a scenario that a JSON schema cannot express (a called tool is declared, a
fault's fields fit its kind, ...), each run only where the schema found the fields it reads sound."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import DEFAULT_PROFILE, client, default_profiles
from harness.core.dialects.request import tool_name
from harness.core.errors import ScenarioProblem
from harness.core.scenario.schema import dotted
from harness.core.scenario.yaml_source import Lines

# --------------------------------------------------------------------------- checks a schema cannot express

Report = Callable[[list[str | int], str], None]


@dataclass(frozen=True, slots=True)
class _Check:
    """A cross-field check, and the subtrees it reads: it runs only where the schema found
    them sound, so it may rely on their types and never reports what the schema did."""

    reads: tuple[tuple[str, ...], ...]
    run: Callable[[Mapping[str, Any], Report], None]


_CHECKS: list[_Check] = []


def _check(*reads: str) -> Callable[[Callable[[Mapping[str, Any], Report], None]],
                                    Callable[[Mapping[str, Any], Report], None]]:
    def register(run: Callable[[Mapping[str, Any], Report], None]) -> Callable[[Mapping[str, Any], Report], None]:
        _CHECKS.append(_Check(tuple(tuple(r.split(".")) for r in reads), run))
        return run

    return register


def _overlap(a: Sequence[str | int], b: Sequence[str | int]) -> bool:
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _declared(data: Mapping[str, Any]) -> set[str]:
    return {name for name in map(tool_name, data["client"]["request"].get("tools") or ()) if name}


def _not_declared(name: str, data: Mapping[str, Any], what: str = "tool") -> str | None:
    declared = _declared(data)
    if name in declared:
        return None
    return f"{what} '{name}' is not among the request's tools (declared: {', '.join(sorted(declared)) or 'none'})"


@_check("client.profile", "client.request.tools")
def _tool_shapes(data: Mapping[str, Any], problem: Report) -> None:
    requests = client(data["client"].get("profile", DEFAULT_PROFILE.name)).written_in.requests
    for i, tool in enumerate(data["client"]["request"].get("tools") or ()):
        if not (isinstance(tool, Mapping) and requests.tool_ok(tool)):
            problem(["client", "request", "tools", i], f"a tool of this client's dialect is written {requests.tool_form}")


# What each kind of native-call frame is, for a backend whose dialect writes its calls in the other.
_CALL_FRAMES = {"tool_call": "OpenAI deltas", "tool_use": "Anthropic blocks"}


@_check("backend.dialect", "backend.frames")
def _frame_dialect(data: Mapping[str, Any], problem: Report) -> None:
    dialect = DIALECTS[data["backend"]["dialect"]]  # a name of the file, checked by the schema
    own = dialect.calls.frame_key
    for i, frame in enumerate(data["backend"]["frames"]):
        if isinstance(frame, Mapping):
            for key, what in _CALL_FRAMES.items():
                if key in frame and key != own:
                    problem(["backend", "frames", i],
                            f"{key} frames are {what}; a backend of the {dialect.name} dialect uses {own}")


@_check("backend.frames", "client.request.tools")
def _native_call_names(data: Mapping[str, Any], problem: Report) -> None:
    """A native call names a tool the client offered, as a real backend's does; a
    tool_call's name may come in pieces, so they are joined per index first."""
    names: dict[int, tuple[int, str]] = {}  # call index -> (first frame naming it, joined name)
    for i, frame in enumerate(data["backend"]["frames"]):
        if isinstance(frame, Mapping) and "tool_call" in frame and frame["tool_call"].get("name") is not None:
            first, joined = names.get(frame["tool_call"]["index"], (i, ""))
            names[frame["tool_call"]["index"]] = (first, joined + frame["tool_call"]["name"])
        elif isinstance(frame, Mapping) and "tool_use" in frame:
            message = _not_declared(frame["tool_use"]["name"], data, "the native call's tool")
            if message:
                problem(["backend", "frames", i, "tool_use", "name"], message)
    for first, name in names.values():
        message = _not_declared(name, data, "the native call's tool")
        if message:
            problem(["backend", "frames", first, "tool_call", "name"], message)


@_check("backend.fault", "backend.frames")
def _fault_fields(data: Mapping[str, Any], problem: Report) -> None:
    fault = data["backend"].get("fault")
    if fault is None:
        return
    kind = fault["kind"]
    n_frames = len(data["backend"]["frames"])
    if kind == "http_error" and "status" not in fault:
        problem(["backend", "fault"], "an http_error fault needs a status")
    if kind in ("drop", "stall") and "after_frame" not in fault:
        problem(["backend", "fault"], f"a {kind} fault needs after_frame")
    if kind == "stall" and "seconds" not in fault:
        problem(["backend", "fault"], "a stall fault needs seconds")
    if fault.get("after_frame", 0) > n_frames:
        problem(["backend", "fault", "after_frame"], f"after_frame {fault['after_frame']} is past the {n_frames} frames")


@_check("expect.tool_calls", "client.request.tools")
def _expected_call_names(data: Mapping[str, Any], problem: Report) -> None:
    for i, call in enumerate(data["expect"].get("tool_calls") or ()):
        message = _not_declared(call["name"], data)
        if message:
            problem(["expect", "tool_calls", i, "name"], message)


@_check("expect.content", "expect.content_regex")
def _content_or_regex(data: Mapping[str, Any], problem: Report) -> None:
    expect = data["expect"]
    if "content" in expect and "content_regex" in expect:
        problem(["expect", "content_regex"], "give either 'content' or 'content_regex', not both")
    if "content_regex" in expect:
        _regex(expect["content_regex"], ["expect", "content_regex"], problem)


def _regex(pattern: str, path: list[str | int], problem: Report) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        problem(path, f"not a valid regular expression: {exc}")


@_check("expect.upstream")
def _upstream_checks(data: Mapping[str, Any], problem: Report) -> None:
    for i, assertion in enumerate(data["expect"].get("upstream") or ()):
        ops = [k for k in assertion if k not in ("path", "requires", "why")]
        if len(ops) != 1:
            problem(["expect", "upstream", i], f"exactly one check per assertion, found {ops or 'none'}")
        if "matches" in assertion:
            _regex(assertion["matches"], ["expect", "upstream", i, "matches"], problem)


@_check("client.profile", "client.profiles")
def _profiles(data: Mapping[str, Any], problem: Report) -> None:
    profile = data["client"].get("profile", DEFAULT_PROFILE.name)
    profiles = data["client"].get("profiles", [p.name for p in default_profiles(client(profile))])
    if profile not in profiles:
        problem(["client", "profile"], f"profile '{profile}' is not among 'profiles' {profiles}")
    # A profile whose request no other profile sends.
    alone = next((client(p) for p in profiles if default_profiles(client(p)) == (client(p),)), None)
    if alone is not None and len(profiles) > 1:
        problem(["client", "profiles"], f"{alone.label}'s request cannot be replayed as another profile")


@_check("client.request.stream", "rechunk")
def _rechunk_streams(data: Mapping[str, Any], problem: Report) -> None:
    if not data["client"]["request"].get("stream", False) and data.get("rechunk") is True:
        problem(["rechunk"], "re-chunking applies to streaming requests only")


@_check("requires", "conflicts")
def _requires_or_conflicts(data: Mapping[str, Any], problem: Report) -> None:
    both = [f for f in data.get("conflicts") or () if f in (data.get("requires") or ())]
    if both:
        problem(["conflicts"], f"{', '.join(both)} is both required and in conflicts: the case could never run")


def semantic_problems(
    data: Any, broken: Sequence[Sequence[str | int]], where: str, lines: Lines
) -> list[ScenarioProblem]:
    """Every cross-field check whose subtrees the schema found sound."""
    problems: list[ScenarioProblem] = []

    def problem(path: list[str | int], message: str) -> None:
        problems.append(ScenarioProblem(where, lines.line(path), dotted(path), message))

    for check in _CHECKS:
        if not any(_overlap(read, bad) for read in check.reads for bad in broken):
            check.run(data, problem)
    return problems
