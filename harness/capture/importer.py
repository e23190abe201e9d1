"""From a capture to a scenario: the mapping and its expectation (written as YAML a person can review
by ``import_yaml``).

The frames are the capture's own, split where the backend split them, in the
capture's dialect (a Messages capture makes an ``anthropic`` backend and client). The
expectation is only a proposal (``import_expect``): what the reference proxy's parsing
makes of the captured answer. A person must confirm it is what the client should have
received, so every imported case carries ``review: required`` and a checklist at the
top of the file.

Pure: a ``Capture`` in, text out (the caller supplies the date, the core reads no clock).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from harness.capture.errors import CaptureError
from harness.capture.expect import (
    Call,
    Expectation,
    Rescue,
    declared_tools,
    expectation,
    inferred_tool,
    parser_tools,
)
from harness.capture.model import Capture, format_name
from harness.capture.yaml_out import ReviewNotes, render_yaml, review_checks
from harness.core.dialects.clients import DEFAULT_PROFILE, profiles_written_in
from harness.core.dialects.frames import frame_to_mapping
from harness.core.errors import ScenarioError
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.core.scenario.schema import scenario_schema
from reference_proxy.rescue import rescue_text

DEFAULT_FAMILY = "imported"
PLACEHOLDER_MESSAGE = "(not captured: paste the user message that led to this answer)"
PLACEHOLDER_MAX_TOKENS = 4096  # a Messages request must name one
XML_CLIENT_AGENTS = ("cline", "kilo", "roo")


@dataclass(frozen=True, slots=True)
class ImportOptions:
    id: str | None = None  # default: <family>-<file stem>[-<entry>]
    family: str = DEFAULT_FAMILY
    title: str | None = None
    imported_on: str | None = None  # the date written in ``source``


@dataclass(frozen=True, slots=True)
class ImportedScenario:
    """One capture as a validated scenario and the YAML text to write."""

    scenario: Scenario
    text: str
    checks: tuple[str, ...]  # what the author must review, as written in the file
    warnings: tuple[str, ...]  # what the import had to guess or drop


# --------------------------------------------------------------------------- naming


def slug(text: str) -> str:
    """Lower-case letters, digits and single dashes."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def default_id(capture: Capture, family: str = DEFAULT_FAMILY) -> str:
    stem = capture.file.rsplit(".", 1)[0] if "." in capture.file.lstrip(".") else capture.file
    base = f"{slug(family) or DEFAULT_FAMILY}-{slug(stem) or 'capture'}"
    return f"{base}-{capture.entry}" if capture.entry is not None else base


def _schema_accepts(field: str, value: str) -> bool:
    """Whether the scenario schema's pattern for top-level ``field`` accepts ``value``."""
    return re.search(scenario_schema()["properties"][field]["pattern"], value) is not None


def check_names(options: ImportOptions) -> None:
    """Reject an id or family the schema would refuse, before any work."""
    if options.id is not None and not _schema_accepts("id", options.id):
        raise CaptureError(
            f"--id {options.id!r}: use lower-case letters, digits, '.', '_' and '-' (start with a letter or digit)"
        )
    if not _schema_accepts("family", options.family):
        raise CaptureError(
            f"--family {options.family!r}: use lower-case letters, digits and '-' (start with a letter or digit)"
        )


# --------------------------------------------------------------------------- the scenario mapping


def _client(capture: Capture, exp: Expectation, notes: ReviewNotes) -> dict[str, Any]:
    dialect = capture.dialect
    if capture.request is not None:
        request = dict(capture.request)
        declared = {t.name for t in declared_tools(request, dialect)}
        missing = [name for name, _ in exp.calls if name not in declared]
        if missing:
            extra = [inferred_tool(n, a, dialect) for n, a in _first_calls(exp.calls, missing)]
            request["tools"] = [*(request.get("tools") or []), *extra]
            names = ", ".join(dict.fromkeys(missing))
            notes.checks.append(
                f"client.request.tools: {names} came as a native call but the captured request does not "
                "declare it; a definition was inferred and added: replace it with the real one"
            )
            notes.client_comment.append(f"tools {names} added by the import (inferred from the calls seen)")
    else:
        request = {"model": capture.model or "imported-model"}
        if dialect.requests.needs_max_tokens:
            request["max_tokens"] = PLACEHOLDER_MAX_TOKENS
        request["stream"] = capture.streamed
        request["messages"] = [{"role": "user", "content": PLACEHOLDER_MESSAGE}]
        used = [t.name for t in exp.tools_used]
        if used:
            request["tools"] = [inferred_tool(n, a, dialect) for n, a in _first_calls(exp.calls, used)]
        notes.checks.append(
            "client.request was not captured: messages holds a placeholder; paste the conversation the client sent"
        )
        if used:
            notes.checks.append(
                f"client.request.tools were inferred from the calls seen ({', '.join(used)}): replace them with "
                "the client's real tool definitions, then re-check expect"
            )
        else:
            notes.checks.append(
                "client.request declares no tools (none could be inferred from the answer): add the client's "
                "tool definitions if it sent any, then re-check expect"
            )
        notes.client_comment.append("request not captured: placeholder message, tools inferred from the calls seen")
    profiles = profiles_written_in(dialect)
    client: dict[str, Any] = {"profile": profiles[0].name} if profiles[0] is not DEFAULT_PROFILE else {}
    agent = capture.headers.get("User-Agent") or next(
        (v for k, v in capture.headers.items() if k.lower() == "user-agent"), None
    )
    if agent and len(profiles) == 1:
        client["headers"] = {"User-Agent": agent}  # a case only its own profile plays keeps its client's
    elif agent:
        if any(p in agent.lower() for p in XML_CLIENT_AGENTS):
            notes.warnings.append(
                f"{capture.origin}: the client identified itself as {agent!r} (an XML-reading client); "
                "the User-Agent is not kept so the case runs under both profiles (the harness sends a Cline "
                "User-Agent under --client-profile xml-client)"
            )
        else:
            client["profiles"] = [profiles[0].name]
            client["headers"] = {"User-Agent": agent}
            notes.client_comment.append(f"the captured User-Agent overrides the xml-client profile's, hence profiles: "
                                        f"[{profiles[0].name}]")
    client["request"] = request
    return client


def _first_calls(calls: Sequence[Call], names: Sequence[str]) -> list[tuple[str, dict[str, Any] | None]]:
    out: list[tuple[str, dict[str, Any] | None]] = []
    for name in dict.fromkeys(names):
        out.append((name, next((a for n, a in calls if n == name), None)))
    return out


def _backend(capture: Capture, request: Mapping[str, Any], notes: ReviewNotes) -> dict[str, Any]:
    backend: dict[str, Any] = {"dialect": capture.dialect.name}  # the YAML names it
    asked = request.get("stream") is True
    if capture.streamed != asked:
        backend["stream"] = capture.streamed
        notes.warnings.append(
            f"{capture.origin}: the request asked for stream: {str(asked).lower()} but the backend answered "
            f"{'SSE' if capture.streamed else 'one JSON body'}; backend.stream reproduces that"
        )
    if capture.model:
        backend["model"] = capture.model
    if capture.ping:
        backend["ping"] = True
    backend["frames"] = list(capture.frames)
    if capture.finish_reason:
        backend["finish_reason"] = capture.finish_reason
    if capture.usage:
        backend["usage"] = dict(capture.usage)
    return backend


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _title(capture: Capture, exp: Expectation) -> str:
    if exp.calls:
        names = ", ".join(dict.fromkeys(n for n, _ in exp.calls))
        what = f"{_count(len(exp.calls), 'tool call')} ({names})"
    else:
        what = "no tool call"
    return f"Imported from {capture.origin}: {what} in {_count(len(capture.frames), 'frame')}"


def scenario_mapping(
    capture: Capture, options: ImportOptions = ImportOptions(), *, rescue: Rescue = rescue_text
) -> tuple[dict[str, Any], ReviewNotes]:
    """The scenario as plain data, plus what the author must check."""
    notes = ReviewNotes(warnings=list(capture.warnings))
    tools = parser_tools(capture.request, capture.dialect) if capture.request is not None else None
    exp = expectation(capture, tools, rescue)
    notes.warnings.extend(f"{capture.origin}: {w}" for w in exp.warnings)
    client = _client(capture, exp, notes)
    backend = _backend(capture, client["request"], notes)
    frames = len(capture.frames)
    wire = capture.dialect
    if capture.truncated:
        notes.checks.append(
            f"backend: the capture stops after frame {frames} with no {wire.finish_field}. "
            "If the backend really "
            f"stopped there, add `fault: {{kind: drop, after_frame: {frames}}}` to backend and say in expect "
            "what the client must get; if only the capture was cut short, the case replays a complete answer"
        )
    elif not capture.terminated:
        notes.checks.append(
            f"backend: the stream ended without {wire.stream_end}. "
            "If the backend really omits it, add "
            "`fault: {kind: no_terminator}` to backend"
        )
    expect: dict[str, Any] = {"tool_calls": [{"name": n, "arguments": a} for n, a in exp.calls]}
    if exp.content_regex is not None:
        expect["content_regex"] = exp.content_regex
        notes.checks.append(
            "expect.content_regex: the text blocks around the calls, in order, with any white space between "
            "them: a proxy may keep the blank lines around a call it takes out of the text, or trim them")
    else:
        expect["content"] = exp.content
    if exp.finish_reason:
        expect["finish_reason"] = exp.finish_reason
    when = f" on {options.imported_on}" if options.imported_on else ""
    model = f", model {capture.model}" if capture.model else ""
    source = f"imported from {capture.origin} ({format_name(capture.format, capture.dialect)}{model}){when}"
    mapping: dict[str, Any] = {
        "id": options.id or default_id(capture, options.family),
        "title": options.title or _title(capture, exp),
        "family": options.family,
        "tags": ["imported"],
        "source": source,
        "review": "required",
        "backend": backend,
        "client": client,
        "expect": expect,
    }
    if "stream_options" in client["request"]:
        # A client's stream_options has no stream:false twin (a whole answer takes none): the scenario is
        # played streamed only, as the library's own cases that carry it are.
        mapping["stream_equivalence"] = False
        notes.client_comment.append("stream_options: played streamed only (stream_equivalence: false above), "
                                    "a whole answer takes none")
    return mapping, notes


# --------------------------------------------------------------------------- the whole step


def import_capture(
    capture: Capture, options: ImportOptions = ImportOptions(), *, rescue: Rescue = rescue_text
) -> ImportedScenario:
    """A validated scenario for ``capture`` and its YAML; the YAML is loaded back and
    must give the very same data (frames byte for byte) before it is returned."""
    check_names(options)
    mapping, notes = scenario_mapping(capture, options, rescue=rescue)
    text = render_yaml(mapping, notes, origin=capture.origin, streamed=capture.streamed)
    expected = {**mapping, "backend": {**mapping["backend"], "frames": [frame_to_mapping(f) for f in capture.frames]}}
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:  # a bug here, never the user's
        raise CaptureError(f"{capture.origin}: the generated YAML does not load back: {exc}") from exc
    if loaded != expected:
        raise CaptureError(f"{capture.origin}: the generated YAML does not load back to the captured data")
    try:
        scenario = parse_scenario(loaded, where=capture.origin, family=options.family, text=text)
    except ScenarioError as exc:
        problems = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
        raise CaptureError(f"{capture.origin}: the capture does not fit the scenario format: {problems}") from exc
    return ImportedScenario(scenario, text, tuple(review_checks(notes)), tuple(notes.warnings))
