"""The scenario model: the dataclasses one case is read into, shared by every package.

Pure data with no loading: ``harness.core.scenario.loading`` validates a YAML file and builds these.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.core.dialects import WireDialect
from harness.core.dialects.clients import (
    CLIENTS,
    DEFAULT_PROFILE,
    ClientProfile,
    Profile,
    default_profiles,
)
from harness.core.dialects.frames import ContentFrame, Frame, frame_to_mapping
from harness.core.dialects.request import tool_name
from harness.core.dialects.servers import ServerProfile

PROFILES: tuple[ClientProfile, ...] = tuple(CLIENTS.values())
OPENAI_PROFILES: tuple[ClientProfile, ...] = default_profiles(DEFAULT_PROFILE)  # a case's profiles when it names none
FEATURES: tuple[str, ...] = ("force-non-stream", "system-to-user", "loop-guard", "xml-client", "tool-choice", "hold-back-cap",
                             "body-timeout", "fails-fast", "system-first")


# --------------------------------------------------------------------------- model


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
    dialect: WireDialect
    frames: tuple[Frame, ...]
    stream: Literal["auto"] | bool = "auto"
    model: str | None = None
    finish_reason: str = "stop"
    usage: Mapping[str, int] | None = None
    delay_ms: float = 0.0
    write_bytes: int | None = None
    split_multibyte: bool = False
    tear_window: int | None = None  # with write_bytes: tear only near what a byte reader treats apart
    write_delay_ms: float | None = None
    ping: bool = False
    fault: Fault | None = None
    server: ServerProfile | None = None  # the real server whose habits the answer is streamed with
    strict: bool = False  # answer as a strict server would (mock_backends/strict.py): --strict-upstream

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
    def dialect(self) -> WireDialect:
        """The API the client speaks: the request body is written in it."""
        return self.profile.written_in

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool_name(t) or "" for t in self.request.get("tools") or ())


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
        """The scenario as plain data, a copy the caller may change."""
        return copy.deepcopy(self.shared_mapping())

    def shared_mapping(self) -> dict[str, Any]:
        """The scenario as plain data sharing the nested values of ``raw``: for reading or
        encoding only (what the mock is armed with), without the deep copy of ``to_mapping``."""
        data = dict(self.raw)
        data.setdefault("family", self.family)
        return data
