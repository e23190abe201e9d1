"""What one client-proxy exchange looked like: the data every rule reads.

Captured by the runner (I/O), judged by the rules (pure). Raw bytes are kept so
framing rules see exactly what a client would have seen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Profile = Literal["openai", "vtc", "anthropic"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the mock backend received from the proxy."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when the body was not JSON
    raw_body: str | None  # the body as text when it was not JSON
    received_at: float

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "path": self.path,
            "query": self.query,
            "headers": dict(self.headers),
            "body": self.body,
            "raw_body": self.raw_body,
            "received_at": self.received_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedRequest:
        return cls(
            method=data["method"],
            path=data["path"],
            query=data.get("query", ""),
            headers=dict(data.get("headers") or {}),
            body=data.get("body"),
            raw_body=data.get("raw_body"),
            received_at=float(data.get("received_at", 0.0)),
        )


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
    # After a fault or bad-input exchange the runner sends one plain request: did the
    # proxy still answer it? None when no such probe was made.
    survived: bool | None = None
    survival_detail: str | None = None
