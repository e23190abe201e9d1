"""Loading scenarios: one YAML file, one case, validated and built into the model.

Loading is pure (text in, ``Scenario`` or ``ScenarioError`` out) apart from reading
the files themselves; every problem names file, line and field so an author can fix
a scenario without reading this code. The model itself lives in ``scenario_model``
and is re-exported here, where every package imports it from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.core.dialects import dialect
from harness.core.dialects.clients import DEFAULT_PROFILE, current_name, default_profiles
from harness.core.dialects.clients import client as client_profile
from harness.core.dialects.frames import frames_from
from harness.core.dialects.servers import server
from harness.core.errors import ScenarioError, ScenarioProblem
from harness.core.scenario.checks import semantic_problems
from harness.core.scenario.model import (
    Backend,
    Client,
    Expect,
    ExpectedCall,
    ExpectedError,
    Fault,
    Scenario,
    UpstreamAssertion,
)
from harness.core.scenario.schema import broken_paths, located, schema_errors
from harness.core.scenario.yaml_source import Lines, load_yaml

# --------------------------------------------------------------------------- building



def build_scenario(data: Mapping[str, Any], path: str | None, family: str) -> Scenario:
    """The model of a case whose data is already valid (a loaded case rewritten, as the isolation
    rounds tag theirs), without checking it again."""
    b = data["backend"]
    frames = list(frames_from(b["frames"]))
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
    wire = dialect(b["dialect"])  # the name becomes the object here; past loading only the object is held
    backend = Backend(
        dialect=wire,
        frames=tuple(frames),
        stream=b.get("stream", "auto"),
        model=b.get("model"),
        finish_reason=b.get("finish_reason", wire.default_finish),
        usage=b.get("usage"),
        delay_ms=float(b.get("delay_ms", 0)),
        write_bytes=b.get("write_bytes"),
        split_multibyte=bool(b.get("split_multibyte", False)),
        tear_window=b.get("tear_window"),
        write_delay_ms=b.get("write_delay_ms"),
        ping=bool(b.get("ping", False)),
        fault=fault,
        server=server(b["server"]) if "server" in b else None,
        strict=bool(b.get("strict", False)),
    )
    c = data["client"]
    profile = client_profile(c["profile"]) if "profile" in c else DEFAULT_PROFILE
    client = Client(
        request=c["request"],
        profile=profile,
        profiles=tuple(map(client_profile, c["profiles"])) if "profiles" in c else default_profiles(profile),
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
                bool(e["error"].get("optional", False)),
                e["error"].get("content"),
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


def _current_names(data: Any) -> Any:
    """``data`` with old profile and feature spellings translated (the schema accepts both), so
    the checks and the model only see today's; a copy, the caller's data is left as it was."""
    if not isinstance(data, dict):
        return data

    def names(value: Any) -> Any:
        if isinstance(value, str):
            return current_name(value)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(dict.fromkeys(current_name(v) for v in value))
        return value

    out = dict(data)
    for key in ("requires", "conflicts"):
        if key in out:
            out[key] = names(out[key])
    client = out.get("client")
    if isinstance(client, dict):
        out["client"] = {**client, **{k: names(client[k]) for k in ("profile", "profiles") if k in client}}
    expect = out.get("expect")
    if isinstance(expect, dict) and isinstance(expect.get("upstream"), list):
        upstream = [{**a, "requires": names(a["requires"])} if isinstance(a, dict) and "requires" in a else a
                    for a in expect["upstream"]]
        out["expect"] = {**expect, "upstream": upstream}
    return out


def _parse(data: Any, where: str, family: str, lines: Lines, *, checked: bool = False) -> Scenario:
    if checked:
        return build_scenario(_current_names(data), where, family)
    errors = schema_errors(data)
    data = _current_names(data)
    problems = located(errors, where, lines, [])
    problems += semantic_problems(data, broken_paths(errors), where, lines)
    if problems:
        raise ScenarioError(problems)
    return build_scenario(data, where if where != "<inline>" else None, family)


def _load(path: Path, *, checked: bool = False) -> tuple[Scenario, Lines]:
    where = str(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError([ScenarioProblem(where, None, "(file)", f"cannot read: {exc}")]) from exc
    data = load_yaml(text, where)
    if not isinstance(data, dict):
        raise ScenarioError([ScenarioProblem(where, 1, "(top level)", "a scenario file holds one mapping")])
    lines = Lines(text)
    return _parse(data, where, folder_family(path), lines, checked=checked), lines


def folder_family(path: Path) -> str:
    """The family of a scenario file that names none: its folder's name, as a family is spelt
    (a file in the current folder, ``replay mine.yaml``, has the folder's own name, not "")."""
    name = re.sub(r"[^a-z0-9-]+", "-", path.absolute().parent.name.lower()).strip("-")
    return name or "scenarios"


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


def validate_paths(
    paths: Iterable[str | Path], *, checked: bool = False
) -> tuple[list[Scenario], list[ScenarioProblem]]:
    """Load every file; collect all problems instead of stopping at the first. ``checked``:
    another process of the same run has just validated these files, so only read them (the
    schema costs most of the loading time, paid once per run instead of once per process)."""
    scenarios: list[Scenario] = []
    problems: list[ScenarioProblem] = []
    seen: dict[str, str] = {}
    for path in scenario_files(paths):
        if not path.exists():
            problems.append(ScenarioProblem(str(path), None, "(file)", "no such file or folder"))
            continue
        try:
            scenario, lines = _load(path, checked=checked)
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
    here = Path(__file__).resolve().parents[2]
    for candidate in (here / "bundled_scenarios", here.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    raise ScenarioError([ScenarioProblem(str(here), None, "(library)", "the bundled scenario library is missing")])
