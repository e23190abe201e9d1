"""JSON-lines logs a proxy writes: one request/response pair per line."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from harness.capture.chat import read_response_text, read_chunks, read_completion_object
from harness.capture.errors import CaptureError
from harness.capture.exchange import make_capture, is_streamed, read_request
from harness.capture.har import har_headers
from harness.capture.messages import is_messages_payload
from harness.capture.model import Capture, CaptureFile
from harness.capture.secrets import Secrets, clean_headers
from harness.capture.text import check_path_dialect, has_jsonl_keys, decode_text, path_dialect

# --------------------------------------------------------------------------- JSON lines

JSONL_REQUEST_KEYS = ("request", "request_body")
JSONL_RESPONSE_KEYS = ("response", "response_body")
JSONL_HEADER_KEYS = ("headers", "request_headers")


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _header_pairs(raw: Any) -> list[tuple[str, str]]:
    if isinstance(raw, dict):
        return [(str(k), v) for k, v in raw.items() if isinstance(v, str)]
    return har_headers(raw)


def read_jsonl(data: bytes, name: str, entry: int | None) -> CaptureFile:
    """One exchange per line: ``{"request": {...}, "response": ..., "headers": {...}?}``.

    A log also holds lines of other requests and lines broken by rotation or a crash:
    each line that cannot be imported is skipped with a warning naming it, and the file
    fails only when no line is left (or when ``entry`` names a line that fails)."""
    lines = decode_text(data, name).splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, start=1) if line.strip()]
    if not numbered:
        raise CaptureError(f"{name}: the file is empty")
    last = numbered[-1][0]
    captures: list[Capture] = []
    skipped: list[str] = []
    for number, line in numbered:
        if entry is not None and number != entry:
            continue
        try:
            captures.append(_jsonl_line(line, f"{name} line {number}", number, name, last=number == last))
        except CaptureError as exc:
            if entry is not None:
                raise
            skipped.append(str(exc))
    if entry is not None and not captures:
        raise CaptureError(f"{name}: no exchange on line {entry} (the file has {len(lines)} line(s))")
    if not captures:
        raise CaptureError(f"{name}: none of the {len(numbered)} line(s) could be imported; first: {skipped[0]}")
    return CaptureFile(tuple(captures), tuple(f"skipped {s}" for s in skipped))


def _jsonl_line(line: str, origin: str, number: int, file: str, *, last: bool) -> Capture:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise CaptureError(f"{origin}: {'cut off' if last else 'not valid JSON'} ({exc})") from exc
    if not isinstance(obj, dict) or not has_jsonl_keys(obj):
        raise CaptureError(
            f"{origin}: expected an object with 'request' and 'response' (or 'request_body'/'response_body')"
        )
    url = obj.get("url")
    if isinstance(url, str) and path_dialect(urlsplit(url).path) is None:
        check_path_dialect(origin, urlsplit(url).path)
        raise CaptureError(f"{origin}: {url} is not a chat-completions or Messages request")
    return _jsonl_exchange(obj, origin, number, file)


def _jsonl_exchange(obj: Mapping[str, Any], origin: str, number: int, file: str) -> Capture:
    secrets = Secrets()
    headers = clean_headers(_header_pairs(_first(obj, JSONL_HEADER_KEYS)), secrets)
    body = read_request(_first(obj, JSONL_REQUEST_KEYS), origin, secrets)
    response = _first(obj, JSONL_RESPONSE_KEYS)
    streamed = True
    if isinstance(response, dict):
        resp = read_completion_object(response, origin)
        streamed = response.get("object") == "chat.completion.chunk" or (
            is_messages_payload(response) and response.get("type") != "message"
        )
    elif isinstance(response, list):
        resp = read_chunks(response, origin)
    elif isinstance(response, str):
        raw = response.encode("utf-8", "surrogatepass")
        streamed = is_streamed(raw)
        resp = read_response_text(raw, origin)
    else:
        raise CaptureError(
            f"{origin}: the response must be a chat.completion or Messages object, SSE text or a list of chunks or "
            "events"
        )
    return make_capture(
        resp, origin=origin, fmt="jsonl", streamed=streamed, request=body, headers=headers, secrets=secrets,
        file=file, entry=number,
    )
