"""One captured exchange put together: its request (secrets redacted) and its answer, in one dialect."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.capture.chat import Answer
from harness.capture.errors import CaptureError
from harness.capture.messages import MessagesParts
from harness.capture.model import Capture, CaptureFormat, Dialect
from harness.capture.secrets import Secrets
from harness.capture.text import decode_text, parse_json, request_dialect
from harness.core.dialects.frames import ContentFrame
from harness.core.redact import looks_like_key

# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class CapturedRequest:
    """A captured request body, secrets redacted, and the dialect it says it is in."""

    body: dict[str, Any]
    dialect: Dialect | None


def read_request(body: Any, origin: str, secrets: Secrets) -> CapturedRequest:
    """A chat-completions or Messages request body, with secrets redacted."""
    if not isinstance(body, dict):
        raise CaptureError(f"{origin}: the request is not a JSON object (got a JSON {type(body).__name__})")
    dialect = request_dialect(origin, body)
    if not isinstance(body.get("messages"), list):
        raise CaptureError(
            f"{origin}: the request has no 'messages' list: not a chat-completions or Messages request"
        )
    if "tools" in body and not isinstance(body["tools"], (list, type(None))):
        raise CaptureError(f"{origin}: the request's 'tools' is not a list")
    return CapturedRequest(secrets.scrub(body), dialect)


def request_from_text(data: bytes, origin: str, secrets: Secrets) -> CapturedRequest:
    """A request body saved on its own (``--request``), with secrets redacted."""
    text = decode_text(data, origin).strip()
    if not text:
        raise CaptureError(f"{origin}: the request file is empty")
    return read_request(parse_json(text, origin, "the request is not valid JSON"), origin, secrets)


def make_capture(
    resp: Answer,
    *,
    origin: str,
    fmt: CaptureFormat,
    streamed: bool,
    request: CapturedRequest | None,
    headers: Mapping[str, str],
    secrets: Secrets,
    file: str,
    entry: int | None = None,
) -> Capture:
    """One exchange's ``Capture``: the answer ``resp`` read from ``origin``, its request, and
    the warnings reading them gave (secrets dropped or redacted, frames that look like keys)."""
    dialect: Dialect = resp.DIALECT
    asked = request.dialect if request is not None else None
    if asked is not None and asked != dialect:
        raise CaptureError(
            f"{origin}: the request is a {asked.short_name} request but the response is a "
            f"{dialect.short_name} answer; "
            "a capture holds one exchange"
        )
    warnings = [*secrets.warnings(origin), *resp.summary_warnings(origin)]
    leaked = [f for f in resp.frames if isinstance(f, ContentFrame) and looks_like_key(f.content)]
    if leaked:
        warnings.append(
            f"{origin}: {len(leaked)} response frame(s) hold something that looks like an API key; "
            "frames are kept exactly as captured, so check them before committing"
        )
    return Capture(
        file=file,
        origin=origin,
        format=fmt,
        request=request.body if request is not None else None,
        headers=dict(headers),
        streamed=streamed,
        frames=tuple(resp.frames),
        finish_reason=resp.finish_reason,
        usage=resp.usage,
        model=resp.model,
        events=resp.events,
        entry=entry,
        truncated=streamed and (resp.cut or resp.finish_reason is None),
        terminated=resp.done or not streamed,
        warnings=tuple(warnings),
        dialect=dialect,
        ping=isinstance(resp, MessagesParts) and resp.ping,
    )


def is_streamed(raw: bytes) -> bool:
    """Whether a captured answer is an SSE stream."""
    return re.search(rb"(?m)^data:", raw) is not None
