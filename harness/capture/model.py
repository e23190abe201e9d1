"""The neutral model every capture reader fills: one captured exchange, whatever file it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from harness.core.dialects import OPENAI, WireDialect
from harness.core.dialects.frames import Frame

CaptureFormat = Literal["sse", "json", "har", "jsonl"]
Dialect = WireDialect  # a capture is in the OpenAI chat or the Anthropic Messages dialect
FORMATS: tuple[CaptureFormat, ...] = ("sse", "json", "har", "jsonl")
FORMAT_NAMES: Mapping[CaptureFormat, str] = {
    "sse": "SSE transcript",
    "json": "JSON answer",
    "har": "HAR",
    "jsonl": "JSON-lines log",
}


def format_name(fmt: CaptureFormat, dialect: Dialect) -> str:
    """How a scenario's ``source`` names the capture's format."""
    if fmt == "json":
        return f"{dialect.answer_name} JSON"
    return FORMAT_NAMES[fmt]


@dataclass(frozen=True, slots=True)
class Capture:
    """One request/response exchange, as captured."""

    file: str  # the capture file's name, no folders
    origin: str  # the file name, plus "entry N" / "line N" when the file holds several
    format: CaptureFormat
    request: Mapping[str, Any] | None  # the body the client sent, secrets redacted
    headers: Mapping[str, str]  # request headers minus credentials and transport headers
    streamed: bool  # the response was SSE
    frames: tuple[Frame, ...]  # content / native tool-call deltas in captured order
    finish_reason: str | None
    usage: Mapping[str, int] | None
    model: str | None
    events: int  # SSE events or chunks read (1 for a JSON body)
    entry: int | None = None  # HAR entry / JSONL line number, when the file holds several
    truncated: bool = False  # the stream stops early: no finish_reason, or a cut-off last event
    terminated: bool = True  # the stream ended with [DONE] / message_stop (always true for a JSON body)
    warnings: tuple[str, ...] = ()
    dialect: Dialect = OPENAI  # of the request and the answer
    ping: bool = False  # a Messages stream carried ping events


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """Every importable exchange of one file, and what was skipped on the way."""

    captures: tuple[Capture, ...]
    warnings: tuple[str, ...] = ()
