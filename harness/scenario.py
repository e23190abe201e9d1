"""The scenario model: one YAML file, one case.

Loading is pure (text in, ``Scenario`` or ``ScenarioError`` out) apart from reading
the files themselves; every problem names file, line and field so an author can fix
a scenario without reading this code.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema

from harness.errors import ScenarioError, ScenarioProblem
from harness.scenario_yaml import Lines, load_yaml

Profile = Literal["openai", "vtc", "anthropic", "responses"]
PROFILES: tuple[Profile, ...] = ("openai", "vtc", "anthropic", "responses")
OPENAI_PROFILES: tuple[Profile, ...] = ("openai", "vtc")
FEATURES: tuple[str, ...] = ("force-non-stream", "system-to-user", "loop-guard", "vtc", "tool-choice", "hold-back-cap",
                             "body-timeout", "fails-fast")


# --------------------------------------------------------------------------- model


@dataclass(frozen=True, slots=True)
class ContentFrame:
    """One content delta, exactly as the backend sends it."""

    content: str
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ToolCallFrame:
    """One native ``tool_calls`` delta; absent fields are absent on the wire too."""

    index: int
    id: str | None = None
    type: str | None = None
    name: str | None = None
    arguments: str | None = None
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class ToolUseFrame:
    """One native Anthropic ``tool_use`` block: its input arrives as these
    ``partial_json`` fragments, split exactly as given."""

    name: str
    id: str | None = None
    input_json: tuple[str, ...] = ()
    delay_ms: float | None = None


@dataclass(frozen=True, slots=True)
class RawFrame:
    """Bytes written verbatim, framing included: for malformed or unusual events."""

    raw: str
    delay_ms: float | None = None


Frame = ContentFrame | ToolCallFrame | ToolUseFrame | RawFrame


@dataclass(frozen=True, slots=True)
class Fault:
    """What goes wrong upstream (see the schema for each kind)."""

    kind: Literal["http_error", "drop", "stall", "no_terminator"]
    status: int | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    after_frame: int | None = None
    mid_event: bool = False
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Backend:
    dialect: str
    frames: tuple[Frame, ...]
    stream: Literal["auto"] | bool = "auto"
    model: str | None = None
    finish_reason: str = "stop"
    usage: Mapping[str, int] | None = None
    delay_ms: float = 0.0
    write_bytes: int | None = None
    split_multibyte: bool = False
    write_delay_ms: float | None = None
    ping: bool = False
    fault: Fault | None = None

    @property
    def text(self) -> str:
        """All content frames joined: what a non-streaming answer carries."""
        return "".join(f.content for f in self.frames if isinstance(f, ContentFrame))


@dataclass(frozen=True, slots=True)
class Client:
    request: Mapping[str, Any]
    profile: Profile = "openai"
    profiles: tuple[Profile, ...] = OPENAI_PROFILES
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    truncate_body: bool = False
    pad_bytes: int | None = None

    @property
    def dialect(self) -> Literal["openai", "anthropic"]:
        """The API the client speaks: the request body is written in it."""
        return "anthropic" if self.profile == "anthropic" else "openai"

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool_name(t) or "" for t in self.request.get("tools") or ())


def tool_name(tool: Any) -> str | None:
    """The name of an OpenAI (``{function: {name}}``) or Anthropic (``{name}``) tool."""
    if not isinstance(tool, Mapping):
        return None
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
    return name if isinstance(name, str) and name else None


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class UpstreamAssertion:
    """A check on the request the proxy sent upstream, addressed by JSON pointer."""

    path: str
    op: str
    value: Any = None
    requires: tuple[str, ...] = ()
    why: str | None = None


@dataclass(frozen=True, slots=True)
class ExpectedError:
    """The client must get an error in its dialect's shape: before the stream with one
    of ``status``, and/or inside it (``in_stream``)."""

    status: tuple[int, ...] = ()
    in_stream: Literal["allowed", "required", "forbidden"] = "forbidden"


@dataclass(frozen=True, slots=True)
class Expect:
    tool_calls: tuple[ExpectedCall, ...] = ()
    content: str | None = None
    content_regex: str | None = None
    content_exact: bool = False
    finish_reason: str | None = None
    markers: tuple[str, ...] = ()
    upstream: tuple[UpstreamAssertion, ...] = ()
    within_seconds: float | None = None
    upstream_requests: int | None = None
    error: ExpectedError | None = None
    proxy_survives: bool = False


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    title: str
    family: str
    source: str
    backend: Backend
    client: Client
    expect: Expect
    tags: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()  # features with which the case cannot hold
    # Text formats (by family) the verdict relies on the proxy rescuing, besides the case's own family:
    # a proxy that relays that markup unchanged fails the case only if it claims the format.
    rescues: tuple[str, ...] = ()
    # The case's verdict rests on the spec alone (no client breaks either way): played with --strict only.
    spec_only: bool = False
    review: str | None = None
    stream_equivalence: bool = True
    rechunk: bool = True
    path: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def streams(self) -> bool:
        return bool(self.client.request.get("stream", False))

    def with_frames(self, frames: Sequence[Frame]) -> Scenario:
        """The same case with the backend's frames re-split (for re-chunking)."""
        backend = dataclasses.replace(self.backend, frames=tuple(frames))
        raw = copy.deepcopy(dict(self.raw))
        raw.setdefault("backend", {})["frames"] = [frame_to_mapping(f) for f in frames]
        return dataclasses.replace(self, backend=backend, raw=raw)

    def to_mapping(self) -> dict[str, Any]:
        """The scenario as plain data (what the mock is armed with)."""
        data = copy.deepcopy(dict(self.raw))
        data.setdefault("family", self.family)
        return data


def frame_to_mapping(frame: Frame) -> str | dict[str, Any]:
    if isinstance(frame, ContentFrame):
        if frame.delay_ms is None:
            return frame.content
        return {"content": frame.content, "delay_ms": frame.delay_ms}
    if isinstance(frame, RawFrame):
        out: dict[str, Any] = {"raw": frame.raw}
    elif isinstance(frame, ToolUseFrame):
        use: dict[str, Any] = {"name": frame.name, "input_json": list(frame.input_json)}
        if frame.id is not None:
            use["id"] = frame.id
        out = {"tool_use": use}
    else:
        call = {
            k: v
            for k, v in (
                ("index", frame.index),
                ("id", frame.id),
                ("type", frame.type),
                ("name", frame.name),
                ("arguments", frame.arguments),
            )
            if v is not None
        }
        out = {"tool_call": call}
    if frame.delay_ms is not None:
        out["delay_ms"] = frame.delay_ms
    return out


# --------------------------------------------------------------------------- schema


@cache
def scenario_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("schemas/scenario.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        scenario_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


# --------------------------------------------------------------------------- schema problems


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _schema_errors(data: Any) -> list[jsonschema.ValidationError]:
    return sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))


def _located(
    errors: Iterable[jsonschema.ValidationError], where: str, lines: Lines, base: list[str | int]
) -> list[ScenarioProblem]:
    """Turn schema errors into problems an author can act on: unknown keys named one by
    one at their own line, missing keys at their parent's line, frames by their kind."""
    out: list[ScenarioProblem] = []
    for e in errors:
        path = [*base, *e.relative_path]
        if e.validator == "oneOf" and "frames" in path:
            out.extend(_frame_problems(e, where, lines, path))
        elif e.validator == "additionalProperties" and isinstance(e.instance, dict):
            schema = e.schema if isinstance(e.schema, dict) else {}
            allowed = sorted(schema.get("properties", {}))
            for extra in sorted(set(e.instance) - set(allowed)):
                out.append(
                    ScenarioProblem(
                        where,
                        lines.line([*path, extra], key=True),
                        _dotted([*path, extra]),
                        f"unknown key '{extra}' (allowed: {', '.join(allowed)})",
                    )
                )
        else:
            missing = re.findall(r"'([^']+)' is a required property", e.message)
            if e.validator == "required" and missing:
                problem = ScenarioProblem(
                    where, lines.line(path, key=bool(path)), _dotted(path), f"missing required key '{missing[0]}'"
                )
            else:
                own = e.schema.get("errorMessage") if isinstance(e.schema, dict) else None
                problem = ScenarioProblem(where, lines.line(path), _dotted(path), own or e.message)
            out.append(problem)
    return out


_FRAME_KINDS = ("content", "tool_call", "raw", "tool_use")  # the schema's frame branches after the plain string


def _frame_problems(
    error: jsonschema.ValidationError, where: str, lines: Lines, path: list[str | int]
) -> list[ScenarioProblem]:
    """A frame matched no branch: when its keys say which kind it meant, report that
    branch's own errors rather than the noise of the other branches."""
    frame = error.instance
    kinds = [k for k in _FRAME_KINDS if isinstance(frame, dict) and k in frame]
    if len(kinds) == 1:
        branch = _FRAME_KINDS.index(kinds[0]) + 1  # branch 0 is the plain string
        own = [c for c in error.context or () if c.schema_path and c.schema_path[0] == branch]
        if own:
            return _located(own, where, lines, path)
    message = (
        "a frame is a string (one content delta) or a mapping with exactly one of "
        "'content', 'tool_call', 'tool_use' or 'raw' (plus optional 'delay_ms')"
    )
    if isinstance(frame, dict):
        message += f"; found key(s) {', '.join(repr(k) for k in frame)}"
    return [ScenarioProblem(where, lines.line(path), _dotted(path), message)]


def _broken_paths(errors: Iterable[jsonschema.ValidationError]) -> list[tuple[str | int, ...]]:
    """Where the schema found the data broken, as deep as it is known: a missing or
    unknown key at the key itself, so its siblings still count as sound."""
    out: list[tuple[str | int, ...]] = []
    for e in errors:
        path = tuple(e.absolute_path)
        if e.validator == "required" and isinstance(e.instance, dict) and isinstance(e.validator_value, list):
            out.extend((*path, key) for key in e.validator_value if key not in e.instance)
        elif e.validator == "additionalProperties" and isinstance(e.instance, dict) and isinstance(e.schema, dict):
            out.extend((*path, key) for key in e.instance if key not in e.schema.get("properties", {}))
        else:
            out.append(path)
    return out


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
    anthropic_client = data["client"].get("profile", "openai") == "anthropic"
    for i, tool in enumerate(data["client"]["request"].get("tools") or ()):
        name = tool_name(tool)
        if anthropic_client:
            ok = name is not None and ("input_schema" in tool or "function" not in tool)
        else:
            ok = name is not None and tool.get("type") == "function"
        if not ok:
            want = "{name, input_schema}" if anthropic_client else "{type: function, function: {name, parameters}}"
            problem(["client", "request", "tools", i], f"a tool of this client's dialect is written {want}")


# Dialects whose native call is one item of its own, written as a tool_use frame
# (Anthropic tool_use blocks, Responses function_call items); each one's default finish.
_WHOLE_CALL_DIALECTS = ("anthropic", "responses")
_DEFAULT_FINISH = {"anthropic": "end_turn", "responses": "completed"}


@_check("backend.dialect", "backend.frames")
def _frame_dialect(data: Mapping[str, Any], problem: Report) -> None:
    dialect = data["backend"]["dialect"]
    for i, frame in enumerate(data["backend"]["frames"]):
        if isinstance(frame, Mapping):
            if "tool_call" in frame and dialect != "openai":
                problem(["backend", "frames", i], "tool_call frames are OpenAI deltas; an anthropic backend uses tool_use")
            if "tool_use" in frame and dialect not in _WHOLE_CALL_DIALECTS:
                problem(["backend", "frames", i], "tool_use frames are Anthropic blocks; an openai backend uses tool_call")


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
    profile = data["client"].get("profile", "openai")
    profiles = data["client"].get("profiles", ["anthropic"] if profile == "anthropic" else list(OPENAI_PROFILES))
    if profile not in profiles:
        problem(["client", "profile"], f"profile '{profile}' is not among 'profiles' {profiles}")
    if "anthropic" in profiles and len(profiles) > 1:
        problem(["client", "profiles"], "an anthropic client's request cannot be replayed as another profile")


@_check("client.request.stream", "rechunk")
def _rechunk_streams(data: Mapping[str, Any], problem: Report) -> None:
    if not data["client"]["request"].get("stream", False) and data.get("rechunk") is True:
        problem(["rechunk"], "re-chunking applies to streaming requests only")


@_check("requires", "conflicts")
def _requires_or_conflicts(data: Mapping[str, Any], problem: Report) -> None:
    both = [f for f in data.get("conflicts") or () if f in (data.get("requires") or ())]
    if both:
        problem(["conflicts"], f"{', '.join(both)} is both required and in conflicts: the case could never run")


def _semantic_problems(
    data: Any, broken: Sequence[Sequence[str | int]], where: str, lines: Lines
) -> list[ScenarioProblem]:
    """Every cross-field check whose subtrees the schema found sound."""
    problems: list[ScenarioProblem] = []

    def problem(path: list[str | int], message: str) -> None:
        problems.append(ScenarioProblem(where, lines.line(path), _dotted(path), message))

    for check in _CHECKS:
        if not any(_overlap(read, bad) for read in check.reads for bad in broken):
            check.run(data, problem)
    return problems


# --------------------------------------------------------------------------- building


def _build(data: Mapping[str, Any], path: str | None, family: str) -> Scenario:
    b = data["backend"]
    frames: list[Frame] = []
    for f in b["frames"]:
        if isinstance(f, str):
            frames.append(ContentFrame(f))
        elif "content" in f:
            frames.append(ContentFrame(f["content"], f.get("delay_ms")))
        elif "raw" in f:
            frames.append(RawFrame(f["raw"], f.get("delay_ms")))
        elif "tool_use" in f:
            tu = f["tool_use"]
            frames.append(ToolUseFrame(tu["name"], tu.get("id"), tuple(tu.get("input_json", ())), f.get("delay_ms")))
        else:
            tc = f["tool_call"]
            frames.append(
                ToolCallFrame(
                    tc["index"], tc.get("id"), tc.get("type"), tc.get("name"), tc.get("arguments"), f.get("delay_ms")
                )
            )
    fault = None
    if "fault" in b:
        fd = b["fault"]
        fault = Fault(
            kind=fd["kind"],
            status=fd.get("status"),
            body=fd.get("body"),
            headers=dict(fd.get("headers") or {}),
            after_frame=fd.get("after_frame"),
            mid_event=bool(fd.get("mid_event", False)),
            seconds=fd.get("seconds"),
        )
    backend = Backend(
        dialect=b["dialect"],
        frames=tuple(frames),
        stream=b.get("stream", "auto"),
        model=b.get("model"),
        finish_reason=b.get("finish_reason", _DEFAULT_FINISH.get(b["dialect"], "stop")),
        usage=b.get("usage"),
        delay_ms=float(b.get("delay_ms", 0)),
        write_bytes=b.get("write_bytes"),
        split_multibyte=bool(b.get("split_multibyte", False)),
        write_delay_ms=b.get("write_delay_ms"),
        ping=bool(b.get("ping", False)),
        fault=fault,
    )
    c = data["client"]
    profile = c.get("profile", "openai")
    client = Client(
        request=c["request"],
        profile=profile,
        profiles=tuple(c.get("profiles", ("anthropic",) if profile == "anthropic" else OPENAI_PROFILES)),
        headers=dict(c.get("headers") or {}),
        raw_body=c.get("raw_body"),
        truncate_body=bool(c.get("truncate_body", False)),
        pad_bytes=c.get("pad_bytes"),
    )
    e = data.get("expect") or {}
    upstream = []
    for a in e.get("upstream") or ():
        op = next(k for k in a if k not in ("path", "requires", "why"))
        upstream.append(UpstreamAssertion(a["path"], op, a[op], tuple(a.get("requires", ())), a.get("why")))
    expect = Expect(
        tool_calls=tuple(ExpectedCall(t["name"], t["arguments"]) for t in e.get("tool_calls") or ()),
        content=e.get("content"),
        content_regex=e.get("content_regex"),
        content_exact=bool(e.get("content_exact", False)),
        finish_reason=e.get("finish_reason"),
        markers=tuple(e.get("markers", ())),
        upstream=tuple(upstream),
        within_seconds=e.get("within_seconds"),
        upstream_requests=e.get("upstream_requests"),
        error=(
            ExpectedError(
                tuple(e["error"].get("status", ())),
                e["error"].get("in_stream", "allowed" if e["error"].get("status") else "forbidden"),
            )
            if "error" in e
            else None
        ),
        proxy_survives=bool(e.get("proxy_survives", False)),
    )
    return Scenario(
        id=data["id"],
        title=data["title"],
        family=data.get("family", family),
        source=data["source"],
        backend=backend,
        client=client,
        expect=expect,
        tags=tuple(data.get("tags", ())),
        requires=tuple(data.get("requires", ())),
        conflicts=tuple(data.get("conflicts", ())),
        rescues=tuple(data.get("rescues", ())),
        spec_only=bool(data.get("spec_only", False)),
        review=data.get("review"),
        stream_equivalence=bool(data.get("stream_equivalence", True)),
        rechunk=bool(data.get("rechunk", True)),
        path=path,
        raw=data,
    )


def parse_scenario(
    data: Any, *, where: str = "<inline>", family: str = "inline", text: str | None = None
) -> Scenario:
    """Validate plain data (already parsed YAML/JSON) and build a ``Scenario``."""
    return _parse(data, where, family, Lines(text))


def _parse(data: Any, where: str, family: str, lines: Lines) -> Scenario:
    errors = _schema_errors(data)
    problems = _located(errors, where, lines, [])
    problems += _semantic_problems(data, _broken_paths(errors), where, lines)
    if problems:
        raise ScenarioError(problems)
    return _build(data, where if where != "<inline>" else None, family)


def _load(path: Path) -> tuple[Scenario, Lines]:
    where = str(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([ScenarioProblem(where, None, "(file)", f"cannot read: {exc}")]) from exc
    data = load_yaml(text, where)
    if not isinstance(data, dict):
        raise ScenarioError([ScenarioProblem(where, 1, "(top level)", "a scenario file holds one mapping")])
    lines = Lines(text)
    return _parse(data, where, path.parent.name, lines), lines


def load_scenario(path: str | Path) -> Scenario:
    """Read, parse and validate one scenario file."""
    return _load(Path(path))[0]


def scenario_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Every ``*.yaml``/``*.yml`` file named, or found below a named folder, in a stable order."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            yield from sorted(q for q in p.rglob("*") if q.suffix in (".yaml", ".yml") and q.is_file())
        else:
            yield p


def validate_paths(paths: Iterable[str | Path]) -> tuple[list[Scenario], list[ScenarioProblem]]:
    """Load every file; collect all problems instead of stopping at the first."""
    scenarios: list[Scenario] = []
    problems: list[ScenarioProblem] = []
    seen: dict[str, str] = {}
    for path in scenario_files(paths):
        if not path.exists():
            problems.append(ScenarioProblem(str(path), None, "(file)", "no such file or folder"))
            continue
        try:
            scenario, lines = _load(path)
        except ScenarioError as exc:
            problems.extend(exc.problems)
            continue
        if scenario.id in seen:
            problems.append(ScenarioProblem(str(path), lines.line(["id"]), "id",
                                            f"id '{scenario.id}' is already used by {seen[scenario.id]}"))
            continue
        seen[scenario.id] = str(path)
        scenarios.append(scenario)
    return scenarios, problems


def awaiting_review(scenarios: Iterable[Scenario]) -> list[Scenario]:
    """Scenarios still marked ``review: required``: their expectation is an import's
    proposal that no person has checked yet."""
    return [s for s in scenarios if s.review == "required"]


def review_note(scenario: Scenario) -> str:
    where = scenario.path or scenario.id
    return (f"{where}: review: required: the expectation of {scenario.id} is the import's proposal; check it "
            "(see the comments at the top of the file), then delete the line")


def load_library(paths: Iterable[str | Path] | None = None) -> list[Scenario]:
    """All scenarios below ``paths`` (default: the bundled library); raises on any problem."""
    scenarios, problems = validate_paths(paths if paths is not None else [bundled_scenarios_dir()])
    if problems:
        raise ScenarioError(problems)
    return scenarios


def bundled_scenarios_dir() -> Path:
    """The library shipped with the package (wheel) or beside it (source checkout)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "bundled_scenarios", here.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise ScenarioError([ScenarioProblem(str(here), None, "(library)", "the bundled scenario library is missing")])
