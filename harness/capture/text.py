"""Reading untrusted capture bytes: UTF-8 text, JSON, a ``curl -i`` head, the dialect, the file's format."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from harness.capture.errors import CaptureError, UnsupportedDialect
from harness.capture.model import CaptureFormat, Dialect
from harness.core.dialects import ANTHROPIC, OPENAI

# --------------------------------------------------------------------------- dialects


def _unsupported(origin: str, what: str) -> UnsupportedDialect:
    return UnsupportedDialect(
        f"{origin}: {what} captures are not supported yet "
        "(import reads OpenAI chat completions and Anthropic Messages)"
    )


def check_response_dialect(origin: str, obj: Mapping[str, Any]) -> None:
    kind = json_str(obj.get("type"))
    if obj.get("object") == "response" or kind.startswith("response."):
        raise _unsupported(origin, "OpenAI Responses API")
    if obj.get("object") == "text_completion":
        raise _unsupported(origin, "legacy completions (text_completion)")


def request_dialect(origin: str, body: Mapping[str, Any]) -> Dialect | None:
    """Which API a request body is written for, when it says (a plain list of user
    messages reads the same in both: None); other APIs are refused."""
    if "messages" not in body and "input" in body:
        raise _unsupported(origin, "OpenAI Responses API")
    if "messages" not in body and "prompt" in body:
        raise _unsupported(origin, "legacy completions")
    tools = [t for t in json_list(body.get("tools")) if isinstance(t, dict)]
    if "anthropic_version" in body or any("input_schema" in t for t in tools) or "system" in body:
        return ANTHROPIC
    roles = {m.get("role") for m in json_list(body.get("messages")) if isinstance(m, dict)}
    if any("function" in t for t in tools) or roles & {"system", "developer", "tool"} or "stream_options" in body:
        return OPENAI
    return None


def path_dialect(path: str) -> Dialect | None:
    """The dialect of a request path: ``.../chat/completions`` or ``.../messages``; None for any other."""
    trimmed = path.rstrip("/")
    if trimmed.endswith("/chat/completions"):
        return OPENAI
    if trimmed.endswith("/messages") and not trimmed.endswith("/chat/messages"):
        return ANTHROPIC
    return None


def check_path_dialect(origin: str, path: str) -> None:
    if path.rstrip("/").endswith("/responses"):
        raise _unsupported(origin, "OpenAI Responses API")


# --------------------------------------------------------------------------- text and JSON helpers


def json_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: captures are untrusted."""
    return value if isinstance(value, dict) else {}


def json_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def json_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def decode_text(data: bytes, origin: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaptureError(f"{origin}: not UTF-8 text (invalid byte at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


def parse_json(text: str, origin: str, what: str = "not valid JSON") -> Any:
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise CaptureError(f"{origin}: {what}: nested too deeply") from exc
    except ValueError as exc:
        cut = text.lstrip()[:1] in ("{", "[") and not text.rstrip().endswith(("}", "]"))
        raise CaptureError(f"{origin}: {what}: {exc}{' (the text looks cut off)' if cut else ''}") from exc


def strip_http_head(data: bytes, origin: str) -> bytes:
    """The body of ``curl -i``/``-D -`` output: status line and headers dropped;
    a non-2xx status is an error (there is no answer to import)."""
    while data.startswith(b"HTTP/"):
        m = re.search(rb"\r?\n\r?\n", data)
        if m is None:
            raise CaptureError(f"{origin}: only HTTP response headers, no body")
        status_line = data[: data.find(b"\n")].decode("latin-1").strip()
        parts = status_line.split()
        status = parts[1] if len(parts) > 1 else "?"
        data = data[m.end():]
        if status.startswith("1"):
            continue  # 100 Continue: the real head follows
        if not status.startswith("2"):
            raise CaptureError(f"{origin}: the captured response is {status_line!r}, not a successful answer")
    return data


# --------------------------------------------------------------------------- format detection


def detect_format(data: bytes, origin: str) -> CaptureFormat:
    """Which reader fits ``data``: by content, never by the file name alone."""
    text = decode_text(strip_http_head(data, origin), origin)
    stripped = text.strip()
    if not stripped:
        raise CaptureError(f"{origin}: the file is empty")
    if stripped[0] in "{[":
        try:
            obj = json.loads(stripped)
        except (ValueError, RecursionError):
            obj = None
        else:
            if isinstance(obj, dict) and isinstance(obj.get("log"), dict):
                return "har"
            if isinstance(obj, dict) and has_jsonl_keys(obj):
                return "jsonl"
            return "json"
    if _has_jsonl_pair(stripped):
        return "jsonl"  # even when its first line is broken: the reader skips such lines
    if stripped[0] in "{[" and not re.search(r"(?m)^data:", text):
        return "json"  # so the error says what is wrong with the JSON
    if re.search(r"(?m)^data:", text):
        return "sse"
    raise CaptureError(
        f"{origin}: not a capture this command reads: expected SSE 'data:' lines, a chat.completion or Messages "
        "JSON body, a HAR file or JSON lines of request/response pairs"
    )


def _has_jsonl_pair(text: str, lines: int = 20) -> bool:
    """Whether one of the first ``lines`` lines is a JSON request/response pair."""
    for line in text.split("\n", lines)[:lines]:  # the rest of a large file stays unsplit
        if not line.lstrip().startswith("{"):
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and has_jsonl_keys(obj):
            return True
    return False


def has_jsonl_keys(obj: Mapping[str, Any]) -> bool:
    return any(k in obj for k in ("request", "request_body")) and any(k in obj for k in ("response", "response_body"))
