"""Captured exchanges, read into one neutral model.

People save what they saw in the field with whatever tool was at hand: ``curl -N``
output, a ``chat.completion`` or Messages body, a browser or mitmproxy HAR, a proxy's
JSON-lines log, in either API dialect (OpenAI chat completions, Anthropic Messages).
Each reader turns its format into ``Capture`` objects holding the request, the
response's deltas in their original split points and what the backend reported, so
the importer never cares where a capture came from. Messages answers are read into
frames by ``capture_messages``.

Pure: bytes in, captures out. Secrets never enter the model: credential headers are
dropped on reading and their values, with anything that looks like an API key, are
redacted from the request body. Every problem is one ``CaptureError`` line naming the
file and what is wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

from harness.assemble import first_choice
from harness.capture_errors import CaptureError as CaptureError
from harness.capture_errors import UnsupportedDialect as UnsupportedDialect
from harness.capture_messages import (
    MessagesParts,
    is_messages_payload,
    is_messages_stream,
    read_message_object,
    read_messages_events,
    read_messages_sse,
)
from harness.capture_stream import NOT_JSON, StreamParts, data_line, loads, parse_data, read_stream
from harness.scenario import ContentFrame, Frame, RawFrame, ToolCallFrame
from harness.sse import is_done_like, parse_events

CaptureFormat = Literal["sse", "json", "har", "jsonl"]
Dialect = Literal["openai", "anthropic"]
FORMATS: tuple[CaptureFormat, ...] = ("sse", "json", "har", "jsonl")
FORMAT_NAMES: Mapping[CaptureFormat, str] = {
    "sse": "SSE transcript",
    "json": "JSON answer",
    "har": "HAR",
    "jsonl": "JSON-lines log",
}
DIALECT_NAMES: Mapping[Dialect, str] = {"openai": "chat-completions", "anthropic": "Messages"}

REDACTED = "[redacted]"


def format_name(fmt: CaptureFormat, dialect: Dialect) -> str:
    """How a scenario's ``source`` names the capture's format."""
    if fmt == "json":
        return "chat.completion JSON" if dialect == "openai" else "Messages JSON"
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
    dialect: Dialect = "openai"  # of the request and the answer
    ping: bool = False  # a Messages stream carried ping events


@dataclass(frozen=True, slots=True)
class CaptureFile:
    """Every importable exchange of one file, and what was skipped on the way."""

    captures: tuple[Capture, ...]
    warnings: tuple[str, ...] = ()


# --------------------------------------------------------------------------- secrets


SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-organization",
    "openai-project", "anthropic-api-key", "x-goog-api-key",
})
TRANSPORT_HEADERS = frozenset({
    "host", "content-length", "content-type", "content-encoding", "accept", "accept-encoding", "accept-language",
    "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "origin", "referer", "priority",
    "cache-control", "pragma", "dnt", "via", "forwarded", "x-real-ip", "expect",
})
TRANSPORT_PREFIXES = (":", "sec-", "x-forwarded-", "x-stainless-", "x-amzn-", "cf-")
_SECRET_NAME_PARTS = ("auth", "token", "secret", "api-key", "apikey", "api_key", "password", "session", "cookie")
_SECRET_VALUE = re.compile(
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}|\bbasic\s+[A-Za-z0-9+/=]{8,}|\bsk-[A-Za-z0-9_-]{8,}"
)
_SECRET_BODY_KEYS = frozenset({"api_key", "apikey", "api-key", "authorization", "password", "secret", "access_token"})


def _looks_secret(name: str, value: str) -> bool:
    lowered = name.lower()
    return (
        lowered in SECRET_HEADERS
        or any(part in lowered for part in _SECRET_NAME_PARTS)
        or _SECRET_VALUE.search(value) is not None
    )


def _is_transport(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRANSPORT_HEADERS or lowered.startswith(TRANSPORT_PREFIXES)


@dataclass
class _Secrets:
    """Credential values seen while reading one exchange, to redact wherever they recur."""

    names: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    redactions: int = 0

    def note(self, name: str, value: str) -> None:
        self.names.append(name)
        for piece in re.split(r"[\s,;=]+", value):
            if len(piece) >= 8 and piece.lower() not in ("bearer", "basic"):
                self.values.append(piece)

    def scrub(self, value: Any) -> Any:
        """``value`` with every secret-looking string replaced; secret-named keys dropped."""
        if isinstance(value, str):
            out = value
            for secret in self.values:
                if secret in out:
                    out = out.replace(secret, REDACTED)
            out = _SECRET_VALUE.sub(REDACTED, out)
            if out != value:
                self.redactions += 1
            return out
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and k.lower() in _SECRET_BODY_KEYS:
                    self.redactions += 1
                    continue
                kept[k] = self.scrub(v)
            return kept
        return value


def clean_headers(pairs: Iterable[tuple[str, str]], secrets: _Secrets | None = None) -> dict[str, str]:
    """Request headers minus credentials (noted in ``secrets``) and transport headers."""
    kept: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str) or not isinstance(value, str):
            continue
        if _is_transport(name):
            continue
        if _looks_secret(name, value):
            if secrets is not None:
                secrets.note(name, value)
            continue
        kept[name] = value
    return kept


def _secrets_warning(origin: str, secrets: _Secrets) -> list[str]:
    out: list[str] = []
    if secrets.names:
        names = ", ".join(sorted({n.title() if n.islower() else n for n in secrets.names}))
        out.append(f"{origin}: dropped credential header(s) {names}")
    if secrets.redactions:
        out.append(f"{origin}: redacted {secrets.redactions} secret-looking value(s) in the request body")
    return out


# --------------------------------------------------------------------------- dialects


def _unsupported(origin: str, what: str) -> UnsupportedDialect:
    return UnsupportedDialect(
        f"{origin}: {what} captures are not supported yet "
        "(import reads OpenAI chat completions and Anthropic Messages)"
    )


def _check_response_dialect(origin: str, obj: Mapping[str, Any]) -> None:
    kind = _str(obj.get("type"))
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
    tools = [t for t in _list(body.get("tools")) if isinstance(t, dict)]
    if "anthropic_version" in body or any("input_schema" in t for t in tools) or "system" in body:
        return "anthropic"
    roles = {m.get("role") for m in _list(body.get("messages")) if isinstance(m, dict)}
    if any("function" in t for t in tools) or roles & {"system", "developer", "tool"} or "stream_options" in body:
        return "openai"
    return None


def path_dialect(path: str) -> Dialect | None:
    """The dialect of a request path: ``.../chat/completions`` or ``.../messages``; None for any other."""
    trimmed = path.rstrip("/")
    if trimmed.endswith("/chat/completions"):
        return "openai"
    if trimmed.endswith("/messages") and not trimmed.endswith("/chat/messages"):
        return "anthropic"
    return None


def _check_path_dialect(origin: str, path: str) -> None:
    if path.rstrip("/").endswith("/responses"):
        raise _unsupported(origin, "OpenAI Responses API")


# --------------------------------------------------------------------------- text and JSON helpers


def _obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: captures are untrusted."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _text(data: bytes, origin: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaptureError(f"{origin}: not UTF-8 text (invalid byte at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


def _json(text: str, origin: str, what: str = "not valid JSON") -> Any:
    try:
        return json.loads(text)
    except RecursionError as exc:
        raise CaptureError(f"{origin}: {what}: nested too deeply") from exc
    except ValueError as exc:
        cut = text.lstrip()[:1] in ("{", "[") and not text.rstrip().endswith(("}", "]"))
        raise CaptureError(f"{origin}: {what}: {exc}{' (the text looks cut off)' if cut else ''}") from exc


def _http_head(data: bytes, origin: str) -> bytes:
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
    text = _text(_http_head(data, origin), origin)
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
            if isinstance(obj, dict) and _jsonl_keys(obj):
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
        if isinstance(obj, dict) and _jsonl_keys(obj):
            return True
    return False


def _jsonl_keys(obj: Mapping[str, Any]) -> bool:
    return any(k in obj for k in ("request", "request_body")) and any(k in obj for k in ("response", "response_body"))


# --------------------------------------------------------------------------- chunks → frames


@dataclass
class _Response(StreamParts):
    """What a chat-completions response said, gathered chunk by chunk."""

    FINISH: ClassVar[str] = "finish_reason"
    END: ClassVar[str] = "'data: [DONE]'"

    chunks: int = 0
    reasoning: int = 0
    other_choices: int = 0
    multi_call_deltas: int = 0
    missing_index: int = 0

    def note_model(self, obj: Mapping[str, Any]) -> None:
        model = obj.get("model")
        if self.model is None and isinstance(model, str) and model:
            self.model = model

    def note_usage(self, obj: Mapping[str, Any]) -> None:
        usage = obj.get("usage")
        if isinstance(usage, dict):
            counts = {
                k: v
                for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                if isinstance(v := usage.get(k), int) and not isinstance(v, bool) and v >= 0
            }
            if counts:
                self.usage = counts

    def tool_call(self, raw: Any, position: int) -> None:
        if not isinstance(raw, dict):
            return
        index = raw.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            self.missing_index += 1
            index = position
        fn = _obj(raw.get("function"))
        kind = raw.get("type")
        self.frames.append(
            ToolCallFrame(
                index=index,
                id=raw["id"] if isinstance(raw.get("id"), str) else None,
                type="function" if kind == "function" else None,
                name=fn["name"] if isinstance(fn.get("name"), str) else None,
                arguments=fn["arguments"] if isinstance(fn.get("arguments"), str) else None,
            )
        )

    def chunk(self, obj: Mapping[str, Any]) -> None:
        """One ``chat.completion.chunk``: its first choice's delta becomes frames."""
        self.chunks += 1
        self.note_model(obj)
        self.note_usage(obj)
        for choice in _list(obj.get("choices")):
            if not isinstance(choice, dict):
                continue
            if choice.get("index", 0) != 0:
                self.other_choices += 1
                continue
            delta = _obj(choice.get("delta"))
            finish = choice.get("finish_reason")
            content = delta.get("content")
            if isinstance(content, str):
                # The role chunk's and the finish chunk's empty content are envelope,
                # which the mock writes by itself; any other delta is kept as it came.
                if content or not ("role" in delta or finish):
                    self.frames.append(ContentFrame(content))
            if delta.get("reasoning_content") or delta.get("reasoning"):
                self.reasoning += 1
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                if len(calls) > 1:
                    self.multi_call_deltas += 1
                for position, call in enumerate(calls):
                    self.tool_call(call, position)
            if isinstance(finish, str) and finish:
                self.finish_reason = finish

    def completion(self, obj: Mapping[str, Any]) -> None:
        """A whole ``chat.completion``: its content is one frame, each call one frame."""
        self.events += 1
        self.chunks += 1
        self.note_model(obj)
        self.note_usage(obj)
        first = first_choice(obj)
        self.other_choices = sum(isinstance(c, dict) for c in _list(obj.get("choices"))) - (first is not None)
        if first is None:
            return
        message = _obj(first.get("message"))
        content = message.get("content")
        if isinstance(content, list):  # content parts: only their text reaches a client
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        if isinstance(content, str) and content:
            self.frames.append(ContentFrame(content))
        if message.get("reasoning_content") or message.get("reasoning"):
            self.reasoning += 1
        for position, call in enumerate(_list(message.get("tool_calls"))):
            if isinstance(call, dict):
                call = {**call, "index": call.get("index", position)}
            self.tool_call(call, position)
        finish = first.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish_reason = finish

    def summary_warnings(self, origin: str) -> list[str]:
        out = list(self.warnings)
        if self.reasoning:
            out.append(f"{origin}: dropped reasoning text in {self.reasoning} delta(s): scenarios have no frame for it")
        if self.other_choices:
            out.append(f"{origin}: kept choice 0 only; {self.other_choices} delta(s) of other choices dropped")
        if self.multi_call_deltas:
            out.append(
                f"{origin}: {self.multi_call_deltas} delta(s) carried several tool_calls entries; "
                "each entry became its own frame"
            )
        if self.missing_index:
            out.append(f"{origin}: {self.missing_index} tool_calls entr(ies) had no index; their position was used")
        return out


    def event(self, payload: Any, raw: str, label: str, origin: str) -> None:
        """One event's parsed data: a chunk, or something kept verbatim as a raw frame."""
        if isinstance(payload, dict):
            _check_response_dialect(origin, payload)
            if "error" in payload and "choices" not in payload:
                err = payload["error"]
                message = err.get("message") if isinstance(err, dict) else err
                self.frames.append(RawFrame(raw))
                self.warnings.append(f"{origin}: {label} is an error ({message!s:.120}); kept verbatim as a raw frame")
                return
            if isinstance(payload.get("choices"), list) or payload.get("object") == "chat.completion.chunk":
                self.chunk(payload)
                return
        self.frames.append(RawFrame(raw))
        self.warnings.append(f"{origin}: {label} is not a chat.completion.chunk; kept verbatim as a raw frame")

    def ends(self, data: str) -> bool:
        return is_done_like(data)

    def pieces(self, data: str, parsed: Any, raw: str) -> list[tuple[str, Any, str]]:
        """Chunks glued without blank lines (one ``data:`` line each) are events of their own."""
        lines = data.split("\n")
        if parsed is not NOT_JSON or len(lines) == 1:
            return [(data, parsed, raw)]
        values = [loads(line) for line in lines]
        if any(v is NOT_JSON and not is_done_like(line) for line, v in zip(lines, values)):
            return [(data, parsed, raw)]
        return [(line, value, f"data: {line}\n\n") for line, value in zip(lines, values)]


Answer = _Response | MessagesParts  # an answer read in its dialect


def read_sse(data: bytes, origin: str) -> Answer:
    """An SSE transcript of either dialect: ``data:`` lines, possibly with ``event:``/``id:``
    lines, comments, CRLF line ends, glued events and a missing or cut-off end."""
    body = _http_head(data, origin)
    _text(body, origin)  # invalid UTF-8 is an error, not replacement characters in the frames
    stream = parse_events(body)
    parsed = parse_data(stream)
    if is_messages_stream(stream, parsed):
        return read_messages_sse(body, stream, parsed, origin)
    resp = _Response(events=len(stream.events))
    read_stream(resp, body, stream, parsed, origin)
    if not resp.chunks:
        if not stream.events:
            raise CaptureError(f"{origin}: no complete SSE event ('data: ...' followed by a blank line)")
        if resp.cut:
            raise CaptureError(f"{origin}: truncated SSE: the stream is cut off before its first complete chunk")
        raise CaptureError(f"{origin}: no chat.completion.chunk event among {len(stream.events)} SSE event(s)")
    resp.truncation_warnings(origin)
    return resp


def read_chunks(items: Sequence[Any], origin: str) -> Answer:
    """A list of chunk objects (or of SSE ``data:`` strings), or of Messages events, as some
    logs keep a stream."""
    if items and is_messages_payload(items[0]):
        return read_messages_events(items, origin)
    resp = _Response(events=len(items))
    for position, item in enumerate(items):
        label = f"chunk {position + 1}"
        if isinstance(item, str):
            text = item.strip()
            text = text[5:].strip() if text.startswith("data:") else text
            if is_done_like(text):
                resp.done = True
                continue
            try:
                item = json.loads(text)
            except (ValueError, RecursionError):
                resp.warnings.append(f"{origin}: {label} is not JSON ({text[:60]!r}); dropped")
                continue
        resp.event(item, data_line(item), label, origin)
    if not resp.chunks:
        raise CaptureError(f"{origin}: no chat.completion.chunk among {len(items)} item(s)")
    resp.done = True  # a list has no terminator to miss
    resp.truncation_warnings(origin)
    return resp


def read_completion_object(obj: Any, origin: str) -> Answer:
    """A non-streaming answer: one ``chat.completion`` or Messages ``message`` object."""
    if not isinstance(obj, dict):
        raise CaptureError(f"{origin}: expected a chat.completion or Messages JSON object, got a JSON "
                           f"{type(obj).__name__}")
    _check_response_dialect(origin, obj)
    if "error" in obj and "choices" not in obj:
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise CaptureError(f"{origin}: the captured response is an error, not an answer: {message!s:.200}")
    if obj.get("type") == "message" and isinstance(obj.get("content"), list):
        return read_message_object(obj, origin)
    if is_messages_payload(obj):
        return read_messages_events([obj], origin)
    if not isinstance(obj.get("choices"), list):
        raise CaptureError(f"{origin}: not a chat.completion or a Messages answer: no 'choices' list, "
                           "no 'content' blocks")
    if obj.get("object") == "chat.completion.chunk":
        return read_chunks([obj], origin)
    resp = _Response()
    resp.completion(obj)
    if resp.finish_reason is None:
        resp.warnings.append(f"{origin}: no finish_reason in the response")
    return resp


def _read_response_text(data: bytes, origin: str) -> Answer:
    """A response body of unknown kind: SSE text or one JSON object."""
    body = _http_head(data, origin)
    text = _text(body, origin).strip()
    if text.startswith(("{", "[")) and not re.search(r"(?m)^data:", text):
        obj = _json(text, origin, "the response is not valid JSON")
        if isinstance(obj, list):
            return read_chunks(obj, origin)
        return read_completion_object(obj, origin)
    if not text:
        raise CaptureError(f"{origin}: the response body is empty")
    return read_sse(body, origin)


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class _Request:
    """A captured request body, secrets redacted, and the dialect it says it is in."""

    body: dict[str, Any]
    dialect: Dialect | None


def read_request(body: Any, origin: str, secrets: _Secrets) -> _Request:
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
    return _Request(secrets.scrub(body), dialect)


def _request_from_text(data: bytes, origin: str, secrets: _Secrets) -> _Request:
    text = _text(data, origin).strip()
    if not text:
        raise CaptureError(f"{origin}: the request file is empty")
    return read_request(_json(text, origin, "the request is not valid JSON"), origin, secrets)


def _capture(
    resp: Answer,
    *,
    origin: str,
    fmt: CaptureFormat,
    streamed: bool,
    request: _Request | None,
    headers: Mapping[str, str],
    secrets: _Secrets,
    file: str,
    entry: int | None = None,
) -> Capture:
    dialect: Dialect = "anthropic" if isinstance(resp, MessagesParts) else "openai"
    asked = request.dialect if request is not None else None
    if asked is not None and asked != dialect:
        raise CaptureError(
            f"{origin}: the request is a {DIALECT_NAMES[asked]} request but the response is a "
            f"{DIALECT_NAMES[dialect]} answer; "
            "a capture holds one exchange"
        )
    warnings = [*_secrets_warning(origin, secrets), *resp.summary_warnings(origin)]
    leaked = [f for f in resp.frames if isinstance(f, ContentFrame) and _SECRET_VALUE.search(f.content)]
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


# --------------------------------------------------------------------------- HAR


def _har_headers(raw: Any) -> list[tuple[str, str]]:
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
    doc = _json(_text(data, name), name, "not a HAR file: not valid JSON")
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
        url = _str(request.get("url"))
        path = urlsplit(url).path
        method = _str(request.get("method"), "?")
        seen.append(f"{method} {path or url or '?'}")
        if path_dialect(path) is not None and method.upper() == "POST":
            chat.append((number, item, f"{method} {path}"))
    if not chat:
        for where in seen:
            _check_path_dialect(name, where.split(" ", 1)[1])
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
    response = _obj(item.get("response"))
    status = response.get("status")
    if isinstance(status, int) and status >= 300:
        raise CaptureError(f"{origin}: the answer is HTTP {status}; only successful answers can be replayed")
    secrets = _Secrets()
    headers = clean_headers(_har_headers(request.get("headers")), secrets)
    post = request.get("postData")
    text = post.get("text") if isinstance(post, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise CaptureError(f"{origin}: the HAR entry has no request body (postData.text)")
    body = read_request(_json(text, origin, "the request body is not valid JSON"), origin, secrets)
    raw = _har_body(response.get("content"))
    if raw is None or not raw.strip():
        raise CaptureError(
            f"{origin}: the HAR entry has no response body (content.text); browsers leave streamed bodies "
            "out unless the response finished before the export"
        )
    resp = _read_response_text(raw, origin)
    return _capture(
        resp, origin=origin, fmt="har", streamed=_streamed(raw), request=body, headers=headers, secrets=secrets,
        file=file, entry=number,
    )


def _streamed(raw: bytes) -> bool:
    return re.search(rb"(?m)^data:", raw) is not None


# --------------------------------------------------------------------------- JSON lines

JSONL_REQUEST_KEYS = ("request", "request_body")
JSONL_RESPONSE_KEYS = ("response", "response_body")
JSONL_HEADER_KEYS = ("headers", "request_headers")


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((obj[k] for k in keys if k in obj), None)


def _header_pairs(raw: Any) -> list[tuple[str, str]]:
    if isinstance(raw, dict):
        return [(str(k), v) for k, v in raw.items() if isinstance(v, str)]
    return _har_headers(raw)


def read_jsonl(data: bytes, name: str, entry: int | None) -> CaptureFile:
    """One exchange per line: ``{"request": {...}, "response": ..., "headers": {...}?}``.

    A log also holds lines of other requests and lines broken by rotation or a crash:
    each line that cannot be imported is skipped with a warning naming it, and the file
    fails only when no line is left (or when ``entry`` names a line that fails)."""
    lines = _text(data, name).splitlines()
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
    if not isinstance(obj, dict) or not _jsonl_keys(obj):
        raise CaptureError(
            f"{origin}: expected an object with 'request' and 'response' (or 'request_body'/'response_body')"
        )
    url = obj.get("url")
    if isinstance(url, str) and path_dialect(urlsplit(url).path) is None:
        _check_path_dialect(origin, urlsplit(url).path)
        raise CaptureError(f"{origin}: {url} is not a chat-completions or Messages request")
    return _jsonl_exchange(obj, origin, number, file)


def _jsonl_exchange(obj: Mapping[str, Any], origin: str, number: int, file: str) -> Capture:
    secrets = _Secrets()
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
        streamed = _streamed(raw)
        resp = _read_response_text(raw, origin)
    else:
        raise CaptureError(
            f"{origin}: the response must be a chat.completion or Messages object, SSE text or a list of chunks or "
            "events"
        )
    return _capture(
        resp, origin=origin, fmt="jsonl", streamed=streamed, request=body, headers=headers, secrets=secrets,
        file=file, entry=number,
    )


# --------------------------------------------------------------------------- entry point


def read_captures(
    data: bytes,
    name: str,
    *,
    fmt: CaptureFormat | None = None,
    request: bytes | None = None,
    request_name: str | None = None,
    entry: int | None = None,
) -> CaptureFile:
    """Read one capture file.

    ``name`` is how messages and the scenario's ``source`` refer to the file (give the
    bare file name). ``request`` is the JSON body of a separately saved request, for
    the SSE and JSON formats; ``entry`` picks one exchange of a HAR (its entry number)
    or JSONL file (its line number).
    """
    fmt = fmt or detect_format(data, name)
    if fmt in ("har", "jsonl"):
        if request is not None:
            raise CaptureError(f"{name}: --request applies to SSE and JSON captures; a {FORMAT_NAMES[fmt]} file "
                               "carries its own requests")
        return read_har(data, name, entry) if fmt == "har" else read_jsonl(data, name, entry)
    if entry is not None:
        raise CaptureError(f"{name}: --entry applies to HAR and JSON-lines files; this is one exchange")
    secrets = _Secrets()
    body = None
    if request is not None:
        body = _request_from_text(request, request_name or "request", secrets)
    if fmt == "sse":
        resp = read_sse(data, name)
    else:
        text = _text(_http_head(data, name), name).strip()
        if not text:
            raise CaptureError(f"{name}: the file is empty")
        obj = _json(text, name)
        resp = read_chunks(obj, name) if isinstance(obj, list) else read_completion_object(obj, name)
    streamed = fmt == "sse" or resp.events != 1 or resp.done
    return CaptureFile(
        (_capture(resp, origin=name, fmt=fmt, streamed=streamed, request=body, headers={}, secrets=secrets,
                  file=name),)
    )
