"""HAR files (browser developer tools, mitmproxy): every chat-completions or Messages POST in the log."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from harness.capture.chat import read_response_text
from harness.capture.errors import CaptureError, UnsupportedDialect
from harness.capture.exchange import make_capture, is_streamed, read_request
from harness.capture.model import Capture, CaptureFile
from harness.capture.secrets import Secrets, clean_headers
from harness.capture.text import check_path_dialect, parse_json, json_object, json_str, decode_text, path_dialect

# --------------------------------------------------------------------------- HAR


def har_headers(raw: Any) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str):
            out.append((item["name"], item["value"]))
    return out


def _har_body(content: Any) -> bytes | None:
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    text: str = content["text"]
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=False)
        except (binascii.Error, ValueError):
            return None
    return text.encode("utf-8", "surrogatepass")


def read_har(data: bytes, name: str, entry: int | None) -> CaptureFile:
    """Every ``POST .../chat/completions`` and ``POST .../messages`` entry of a HAR log (or only
    entry ``entry``)."""
    doc = parse_json(decode_text(data, name), name, "not a HAR file: not valid JSON")
    log = doc.get("log") if isinstance(doc, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        raise CaptureError(f"{name}: not a HAR file: no log.entries list")
    chat: list[tuple[int, dict[str, Any], str]] = []
    seen: list[str] = []
    for number, item in enumerate(entries, start=1):
        request = item.get("request") if isinstance(item, dict) else None
        if not isinstance(request, dict):
            continue
        url = json_str(request.get("url"))
        path = urlsplit(url).path
        method = json_str(request.get("method"), "?")
        seen.append(f"{method} {path or url or '?'}")
        if path_dialect(path) is not None and method.upper() == "POST":
            chat.append((number, item, f"{method} {path}"))
    if not chat:
        for where in seen:
            check_path_dialect(name, where.split(" ", 1)[1])
        listed = ", ".join(sorted(set(seen))[:6]) or "none"
        raise CaptureError(
            f"{name}: no chat-completions or Messages entry among {len(entries)} HAR entries "
            f"(requests seen: {listed})"
        )
    if entry is not None:
        chosen = [c for c in chat if c[0] == entry]
        if not chosen:
            numbers = ", ".join(str(c[0]) for c in chat)
            what = (
                "is not a chat-completions or Messages request"
                if entry <= len(entries)
                else f"does not exist ({len(entries)} entries)"
            )
            raise CaptureError(f"{name}: entry {entry} {what}; the entries to import are {numbers}")
        chat = chosen
    captures: list[Capture] = []
    warnings: list[str] = []
    for number, item, what in chat:
        origin = f"{name} entry {number}"
        try:
            captures.append(_har_entry(item, origin, number, name))
        except UnsupportedDialect:
            raise
        except CaptureError as exc:
            if entry is not None or len(chat) == 1:
                raise
            warnings.append(f"skipped {exc} ({what})")
    if not captures:
        raise CaptureError(f"{name}: none of the {len(chat)} entries to import could be imported: {warnings[0]}")
    return CaptureFile(tuple(captures), tuple(warnings))


def _har_entry(item: Mapping[str, Any], origin: str, number: int, file: str) -> Capture:
    request = item["request"]
    response = json_object(item.get("response"))
    status = response.get("status")
    if isinstance(status, int) and status >= 300:
        raise CaptureError(f"{origin}: the answer is HTTP {status}; only successful answers can be replayed")
    secrets = Secrets()
    headers = clean_headers(har_headers(request.get("headers")), secrets)
    post = request.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise CaptureError(f"{origin}: the HAR entry has no request body (postData.text)")
    body = read_request(parse_json(text, origin, "the request body is not valid JSON"), origin, secrets)
    raw = _har_body(response.get("content"))
    if raw is None or not raw.strip():
        raise CaptureError(
            f"{origin}: the HAR entry has no response body (content.text); browsers leave streamed bodies "
            "out unless the response finished before the export"
        )
    resp = read_response_text(raw, origin)
    return make_capture(
        resp, origin=origin, fmt="har", streamed=is_streamed(raw), request=body, headers=headers, secrets=secrets,
        file=file, entry=number,
    )
