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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema
import yaml

from harness.errors import ScenarioError, ScenarioProblem

Profile = Literal["openai", "vtc", "anthropic"]
PROFILES: tuple[Profile, ...] = ("openai", "vtc", "anthropic")
OPENAI_PROFILES: tuple[Profile, ...] = ("openai", "vtc")
FEATURES: tuple[str, ...] = ("force-non-stream", "system-to-user", "loop-guard", "vtc", "tool-choice")


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


# --------------------------------------------------------------------------- locating lines


class _Lines:
    """Maps a JSON path inside a YAML document to the line it was written on."""

    def __init__(self, root: yaml.Node | None) -> None:
        self._root = root

    def line(self, path: Sequence[str | int], *, key: bool = False) -> int | None:
        node = self._root
        line = None if node is None else node.start_mark.line + 1
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == part:
                        line = (k if key and part == path[-1] else v).start_mark.line + 1
                        node = v
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line


def _dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _schema_problems(data: Any, where: str, lines: _Lines) -> list[ScenarioProblem]:
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    return _located(errors, where, lines, [])


def _located(
    errors: Iterable[jsonschema.ValidationError], where: str, lines: _Lines, base: list[str | int]
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
                problem = ScenarioProblem(where, lines.line(path), _dotted(path), e.message)
            out.append(problem)
    return out


_FRAME_KINDS = ("content", "tool_call", "raw")


def _frame_problems(
    error: jsonschema.ValidationError, where: str, lines: _Lines, path: list[str | int]
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
        "'content', 'tool_call' or 'raw' (plus optional 'delay_ms')"
    )
    if isinstance(frame, dict):
        message += f"; found key(s) {', '.join(repr(k) for k in frame)}"
    return [ScenarioProblem(where, lines.line(path), _dotted(path), message)]


def _semantic_problems(data: Mapping[str, Any], where: str, lines: _Lines) -> list[ScenarioProblem]:
    """Checks a schema cannot express: cross-field consistency."""
    problems: list[ScenarioProblem] = []

    def problem(path: list[str | int], message: str) -> None:
        problems.append(ScenarioProblem(where, lines.line(path), _dotted(path), message))

    client = data["client"]
    request = client["request"]
    profile = client.get("profile", "openai")
    anthropic_client = profile == "anthropic"
    declared: set[str] = set()
    for i, tool in enumerate(request.get("tools") or ()):
        name = tool_name(tool)
        shape_ok = (
            isinstance(tool, Mapping)
            and name is not None
            and (("input_schema" in tool or "function" not in tool) if anthropic_client else tool.get("type") == "function")
        )
        if not shape_ok:
            want = "{name, input_schema}" if anthropic_client else "{type: function, function: {name, parameters}}"
            problem(["client", "request", "tools", i], f"a tool of this client's dialect is written {want}")
        if name:
            declared.add(name)
    backend = data["backend"]
    for i, frame in enumerate(backend.get("frames") or ()):
        if isinstance(frame, Mapping):
            if "tool_call" in frame and backend.get("dialect") != "openai":
                problem(["backend", "frames", i], "tool_call frames are OpenAI deltas; an anthropic backend uses tool_use")
            if "tool_use" in frame and backend.get("dialect") != "anthropic":
                problem(["backend", "frames", i], "tool_use frames are Anthropic blocks; an openai backend uses tool_call")
    fault = backend.get("fault")
    if isinstance(fault, Mapping):
        kind = fault.get("kind")
        n_frames = len(backend.get("frames") or ())
        if kind == "http_error" and "status" not in fault:
            problem(["backend", "fault"], "an http_error fault needs a status")
        if kind in ("drop", "stall") and "after_frame" not in fault:
            problem(["backend", "fault"], f"a {kind} fault needs after_frame")
        if kind == "stall" and "seconds" not in fault:
            problem(["backend", "fault"], "a stall fault needs seconds")
        if isinstance(fault.get("after_frame"), int) and fault["after_frame"] > n_frames:
            problem(["backend", "fault", "after_frame"], f"after_frame {fault['after_frame']} is past the {n_frames} frames")
    expect = data.get("expect") or {}
    for i, call in enumerate(expect.get("tool_calls") or ()):
        if call["name"] not in declared:
            known = ", ".join(sorted(declared)) or "none"
            problem(
                ["expect", "tool_calls", i, "name"],
                f"tool '{call['name']}' is not among the request's tools (declared: {known})",
            )
    if "content" in expect and "content_regex" in expect:
        problem(["expect", "content_regex"], "give either 'content' or 'content_regex', not both")
    for key in ("content_regex",):
        if key in expect:
            try:
                re.compile(expect[key])
            except re.error as exc:
                problem(["expect", key], f"not a valid regular expression: {exc}")
    for i, assertion in enumerate(expect.get("upstream") or ()):
        ops = [k for k in assertion if k not in ("path", "requires", "why")]
        if len(ops) != 1:
            problem(["expect", "upstream", i], f"exactly one check per assertion, found {ops or 'none'}")
        if "matches" in assertion:
            try:
                re.compile(assertion["matches"])
            except re.error as exc:
                problem(["expect", "upstream", i, "matches"], f"not a valid regular expression: {exc}")
    both = [f for f in data.get("conflicts") or () if f in (data.get("requires") or ())]
    if both:
        problem(["conflicts"], f"{', '.join(both)} is both required and in conflicts: the case could never run")
    profiles = client.get("profiles", ["anthropic"] if anthropic_client else list(OPENAI_PROFILES))
    if profile not in profiles:
        problem(["client", "profile"], f"profile '{profile}' is not among 'profiles' {profiles}")
    if "anthropic" in profiles and len(profiles) > 1:
        problem(["client", "profiles"], "an anthropic client's request cannot be replayed as another profile")
    if not request.get("stream", False) and data.get("rechunk") is True:
        problem(["rechunk"], "re-chunking applies to streaming requests only")
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
        finish_reason=b.get("finish_reason", "end_turn" if b["dialect"] == "anthropic" else "stop"),
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
    lines = _Lines(yaml.compose(text) if text is not None else None)
    problems = _schema_problems(data, where, lines)
    try:
        problems += _semantic_problems(data, where, lines)
    except (KeyError, TypeError, AttributeError):
        pass  # the structure is broken; the schema problems already say where
    if problems:
        raise ScenarioError(problems)
    return _build(data, where if where != "<inline>" else None, family)


def load_scenario(path: str | Path) -> Scenario:
    """Read, parse and validate one scenario file."""
    p = Path(path)
    where = str(p)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([ScenarioProblem(where, None, "(file)", f"cannot read: {exc}")]) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([ScenarioProblem(where, line, "(yaml)", f"not valid YAML: {problem}")]) from exc
    if not isinstance(data, dict):
        raise ScenarioError([ScenarioProblem(where, 1, "(top level)", "a scenario file holds one mapping")])
    return parse_scenario(data, where=where, family=p.parent.name, text=text)


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
            scenario = load_scenario(path)
        except ScenarioError as exc:
            problems.extend(exc.problems)
            continue
        if scenario.id in seen:
            problems.append(
                ScenarioProblem(str(path), 1, "id", f"id '{scenario.id}' is already used by {seen[scenario.id]}")
            )
            continue
        seen[scenario.id] = str(path)
        scenarios.append(scenario)
    return scenarios, problems


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
