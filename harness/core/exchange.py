"""What one client-proxy exchange looked like: the data every rule reads.

Captured by the runner (I/O), judged by the rules (pure). Raw bytes are kept so
framing rules see exactly what a client would have seen.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects.clients import Profile


@dataclass(frozen=True)
class RecordedAnswer:
    """What the mock backend sent back for one request, as it went on the wire."""

    status: int | None  # None when nothing was sent yet
    headers: Mapping[str, str]  # names lower-cased
    body: bytes  # every body byte sent so far
    seconds: float | None  # from the request's arrival to the answer's end; None while it is being sent

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "headers": dict(self.headers),
                "body_base64": base64.b64encode(self.body).decode("ascii"), "seconds": self.seconds}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedAnswer:
        seconds = data.get("seconds")
        return cls(
            status=data.get("status"),
            headers=dict(data.get("headers") or {}),
            body=base64.b64decode(data.get("body_base64") or ""),
            seconds=None if seconds is None else float(seconds),
        )


@dataclass(frozen=True)
class RecordedRequest:
    """One request the mock backend received from the proxy (and, once known, its answer)."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was not JSON
    raw_body: str | None  # the body as text when it was not JSON
    received_at: float
    answer: RecordedAnswer | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": dict(self.headers),
            "body": self.body,
            "raw_body": self.raw_body,
            "received_at": self.received_at,
            "answer": None if self.answer is None else self.answer.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedRequest:
        answer = data.get("answer")
        return cls(
            method=data["method"],
            path=data["path"],
            query=data.get("query", ""),
            headers=dict(data.get("headers") or {}),
            body=data.get("body"),
            raw_body=data.get("raw_body"),
            received_at=float(data.get("received_at", 0.0)),
            answer=RecordedAnswer.from_json(answer) if isinstance(answer, Mapping) else None,
        )


@dataclass(frozen=True)
class BackendActivity:
    """How busy the mock backend has been answering one run, measured on its own clock.

    The harness's deadlines count from the end of the backend's work, so a backend that
    streams slowly on purpose (a stall, a slow drip) never makes the proxy look slow,
    however loaded the machine is."""

    answering: int = 0  # answers the mock is still sending
    busy_seconds: float = 0.0  # time spent answering so far, overlapping answers counted once
    # The run's lockstep group gave up waiting for a member and let the answers flow freely.
    lockstep_broken: bool = False
    # Wall-clock times (``time.time()``), so that another process on the same host can set its
    # own moments against them: when the last answer ended (none while one is still being sent),
    # and when the mock said all this. A load generator's view of "when did it close" is late by
    # however long its own questions wait; these are the mock's.
    ended_at: float | None = None
    clock: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BackendActivity:
        ended_at, clock = data.get("ended_at"), data.get("clock")
        return cls(int(data.get("answering", 0)), float(data.get("busy_seconds", 0.0)),
                   bool(data.get("lockstep_broken", False)),
                   None if ended_at is None else float(ended_at), None if clock is None else float(clock))


@dataclass(frozen=True)
class Exchange:
    """The client's side of one scenario run against the proxy under test."""

    scenario_id: str
    profile: Profile
    stream: bool  # whether the client asked for a stream
    request_body: Mapping[str, Any]  # exactly what was sent (nonce included)
    request_headers: Mapping[str, str]
    status: int | None  # None when no response arrived at all
    response_headers: Mapping[str, str] = field(default_factory=dict)  # names lower-cased
    raw: bytes = b""  # the whole response body as received
    elapsed: float = 0.0  # seconds until the body ended (or the run gave up)
    first_byte: float | None = None  # seconds until the first body byte
    transport_error: str | None = None  # connection refused, reset, ...
    timed_out: bool = False  # the harness gave up waiting (--timeout)
    upstream: tuple[RecordedRequest, ...] = ()  # what the proxy sent the mock
    backend_seconds: float = 0.0  # time the mock spent answering those requests (its own measurement)
    # After a fault or bad-input exchange the runner sends one plain request: did the
    # proxy still answer it? None when no such probe was made.
    survived: bool | None = None
    survival_detail: str | None = None
    started_at: float = 0.0  # wall-clock time the request was sent (epoch seconds; 0: not known), for records
    # The retries made before this answer, as an SDK client makes them (``harness.core.retry``).
    retries: tuple[str, ...] = ()
    # Armed in a lockstep group that broke (``mock_backends.lockstep``): the answer was not played in step.
    lockstep_broken: bool = False
