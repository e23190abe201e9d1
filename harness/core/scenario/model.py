"""The scenario model: the dataclasses one case is read into, shared by every package.

Pure data with no loading: ``harness.core.scenario.loading`` validates a YAML file and builds these.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Profile = Literal["openai", "xml-client", "anthropic", "responses"]
PROFILES: tuple[Profile, ...] = ("openai", "xml-client", "anthropic", "responses")
OPENAI_PROFILES: tuple[Profile, ...] = ("openai", "xml-client")
DEFAULT_PROFILE: Profile = "openai"  # a case's client when it names none
FEATURES: tuple[str, ...] = ("force-non-stream", "system-to-user", "loop-guard", "xml-client", "tool-choice", "hold-back-cap",
                             "body-timeout", "fails-fast")
#: Old spellings still read wherever a profile or feature is named (scenario files, ``--client-profile``,
#: ``--features``): the ``xml-client`` profile and feature, for clients that read tool calls as XML in the
#: content (Cline, Roo Code, Kilo Code), were first called ``vtc``, after "virtual tool calling".
OLD_NAMES: Mapping[str, str] = {"vtc": "xml-client"}


def current_name(name: str) -> str:
    """A profile or feature name in today's spelling (an old spelling is translated)."""
    return OLD_NAMES.get(name, name)


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
    profile: Profile = DEFAULT_PROFILE
    profiles: tuple[Profile, ...] = OPENAI_PROFILES
    headers: Mapping[str, str] = field(default_factory=dict)
    raw_body: str | None = None
    truncate_body: bool = False
    pad_bytes: int | None = None

    @property
    def dialect(self) -> str:
        """The API the client speaks: the request body is written in it."""
        # Imported here: the dialects read this model.
        from harness.core.dialects.clients import client

        return client(self.profile).written_in.name

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
    # The proxy may also answer normally instead (then the rest of ``expect`` holds), and
    # ``content`` is the visible text expected when an error inside the stream ends the answer.
    optional: bool = False
    content: str | None = None


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
