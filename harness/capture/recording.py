"""One exchange recorded live (``toolcall-conformance record``): the model a capture file
holds, and the pure steps between the wire and that file.

A recording keeps what a scenario cannot: every SSE event exactly as the upstream framed it,
with the milliseconds before it, the status and the headers that matter, so a later
recording of the same request can be compared by shape (``harness.capture.drift``) and a
scenario derived from it (``harness.capture.recorded``). Before anything is kept, secrets go
through the one ``Redactor`` and ids, timestamps and the harness's nonces are made canonical,
so recording the same exchange twice gives the same file.

Pure: bytes and mappings in, data out; the recorder server does the I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects import WireDialect, posted_to
from harness.core.dialects import dialect as wire_dialect
from harness.core.nonce import nonce_line
from harness.core.redact import Redactor, is_credential_header

MODES: tuple[str, ...] = ("none", "once", "new-episodes", "rewrite")
"""Record modes as pytest-recording (vcrpy) names them: ``none`` replays only and refuses a
request it has no recording of; ``once`` records into an empty folder and replays from a
filled one; ``new-episodes`` replays what it has and records the rest; ``rewrite`` records
everything again."""

# Request fields that change from run to run without changing what is asked: the end
# user's id (where the harness's nonce travels too), request metadata, cache keys.
VOLATILE_REQUEST_FIELDS = frozenset({"user", "metadata", "prompt_cache_key", "safety_identifier", "store"})
# Request headers worth keeping: they change what an upstream answers.
KEPT_REQUEST_HEADERS = frozenset({"content-type", "user-agent", "anthropic-version", "anthropic-beta", "openai-beta"})
# Response headers worth keeping: how the answer was framed and who answered.
KEPT_RESPONSE_HEADERS = frozenset({"content-type", "server", "openai-version", "anthropic-version"})
# Answer fields whose values are ids or clocks: replaced by canonical ones in order of appearance.
ID_FIELDS = frozenset({"id", "response_id", "item_id", "call_id", "tool_call_id", "tool_use_id",
                       "system_fingerprint", "request_id"})
CLOCK_FIELDS = frozenset({"created", "created_at", "completed_at"})
CANONICAL_TIME = 1700000000
_NONCE_LINE = re.compile(r"(?:\n\n)?" + re.escape(nonce_line("tcc-")[:-1]) + r"[0-9a-f]{32}\]")
_NONCE = re.compile(r"tcc-[0-9a-f]{32}")
_ID_PREFIX = re.compile(r"^[A-Za-z]+[-_]")


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One SSE event as it arrived (its text, framing included) and the milliseconds before it."""

    text: str
    delay_ms: float


@dataclass(frozen=True, slots=True)
class Recording:
    """One exchange: the request as the client sent it and the upstream's answer as it came."""

    dialect: WireDialect
    path: str  # what the client posted to, below the host (``/v1/chat/completions``)
    request: Mapping[str, Any]  # secrets redacted, ids canonical
    request_headers: Mapping[str, str]
    status: int
    response_headers: Mapping[str, str]
    streamed: bool
    events: tuple[RecordedEvent, ...] = ()  # a streamed answer
    body: str | None = None  # an answer in one piece (JSON, or an error)
    server: str = "unknown"
    version: str = "unknown"
    recorded_on: str | None = None
    warnings: tuple[str, ...] = field(default=())
    key: str = field(default="", compare=False)  # what identifies the request: a hash of its canonical form

    def __post_init__(self) -> None:
        if not self.key:  # computed once: a recorder looks recordings up by it on every request
            object.__setattr__(self, "key", request_key(self.request))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dialect": self.dialect.name, "path": self.path, "server": self.server, "version": self.version,
            "recorded_on": self.recorded_on, "key": self.key,
            "request": {"headers": dict(self.request_headers), "body": self.request},
            "response": {"status": self.status, "headers": dict(self.response_headers), "streamed": self.streamed},
        }
        if self.streamed:
            out["response"]["events"] = [{"delay_ms": e.delay_ms, "text": e.text} for e in self.events]
        else:
            out["response"]["body"] = self.body
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Recording:
        response = data["response"]
        return cls(
            dialect=wire_dialect(data["dialect"]), path=data["path"], request=data["request"]["body"],
            request_headers=data["request"].get("headers", {}), status=int(response["status"]),
            response_headers=response.get("headers", {}), streamed=bool(response["streamed"]),
            events=tuple(RecordedEvent(e["text"], float(e["delay_ms"])) for e in response.get("events", ())),
            body=response.get("body"), server=data.get("server", "unknown"), version=data.get("version", "unknown"),
            recorded_on=data.get("recorded_on"), warnings=tuple(data.get("warnings", ())),
        )


# --------------------------------------------------------------------------- which dialect


def dialect_for(path: str, forced: WireDialect | None = None) -> WireDialect | None:
    """The dialect of a request posted to ``path``: the one given, or the one whose endpoint it is."""
    return forced if forced is not None else posted_to(path)


# --------------------------------------------------------------------------- secrets


def redactor_for(headers: Mapping[str, str]) -> Redactor:
    """The one redactor, knowing every credential header value of this exchange."""
    return Redactor.for_headers([(k, v) for k, v in headers.items() if is_credential_header(k)])


def kept_headers(headers: Mapping[str, str], kept: frozenset[str], redactor: Redactor) -> dict[str, str]:
    """The headers that matter, lower-cased, values redacted."""
    return {k.lower(): redactor.header(k, v) for k, v in sorted(headers.items()) if k.lower() in kept}


# --------------------------------------------------------------------------- canonical forms


def strip_nonces(value: Any) -> Any:
    """``value`` without the harness's nonce lines and ids (a replayed run places them)."""
    if isinstance(value, str):
        return _NONCE.sub("", _NONCE_LINE.sub("", value)) if "tcc-" in value else value
    if isinstance(value, list):
        return [strip_nonces(v) for v in value if not _nonce_part(v)]
    if isinstance(value, dict):
        return {k: strip_nonces(v) for k, v in value.items()}
    return value


def _nonce_part(value: Any) -> bool:
    """A text part holding nothing but a nonce line (where the harness puts one in a list of parts)."""
    return (isinstance(value, dict) and value.get("type") == "text" and isinstance(value.get("text"), str)
            and "tcc-" in value["text"] and not _NONCE_LINE.sub("", value["text"]).strip())


class Canon:
    """Replaces ids and clocks by canonical values, the same id by the same value."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def id(self, value: str) -> str:
        if value not in self.ids:
            m = _ID_PREFIX.match(value)
            self.ids[value] = f"{m.group(0) if m else ''}rec{len(self.ids)}"
        return self.ids[value]

    def json(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {k: self.json(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.json(v, key) for v in value]
        if key in ID_FIELDS and isinstance(value, str) and value:
            return self.id(value)
        if key in CLOCK_FIELDS and isinstance(value, (int, float)) and not isinstance(value, bool):
            return CANONICAL_TIME
        return value


def canonical_request(body: Mapping[str, Any]) -> dict[str, Any]:
    """What a request asks, for matching: no volatile fields, no nonces, ids canonical."""
    kept = {k: v for k, v in body.items() if k not in VOLATILE_REQUEST_FIELDS}
    return dict(Canon().json(strip_nonces(kept)))


def request_key(body: Mapping[str, Any]) -> str:
    text = json.dumps(canonical_request(body), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def recorded_request(body: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    """The request as it is kept: secrets redacted, nonces out, ids canonical (the volatile
    fields stay, for the person who reviews it; matching ignores them)."""
    return dict(Canon().json(strip_nonces(redactor.json(dict(body)))))


def canonical_event(text: str, canon: Canon, redactor: Redactor) -> str:
    """One SSE event as kept: each ``data:`` line's JSON with ids and clocks canonical, and
    secrets redacted; the framing (``event:`` lines, line ends) exactly as it came."""
    lines = text.split("\n")
    out: list[str] = []
    for line in lines:
        head, colon, rest = line.partition(":")
        stripped = rest.strip()
        if colon and head == "data" and stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                out.append(redactor.text(line))
                continue
            fixed = canon.json(redactor.json(parsed))
            space = " " if rest.startswith(" ") else ""
            cr = "\r" if line.endswith("\r") else ""
            out.append(line if fixed == parsed else f"data:{space}{json.dumps(fixed, ensure_ascii=False)}{cr}")
        else:
            out.append(redactor.text(line))
    return "\n".join(out)


def canonical_body(text: str, canon: Canon, redactor: Redactor) -> str:
    """An answer in one piece, as kept: a JSON body with ids and clocks canonical, secrets redacted."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return redactor.text(text)
    return json.dumps(canon.json(redactor.json(parsed)), ensure_ascii=False)


# --------------------------------------------------------------------------- SSE events as they arrive


class EventSplitter:
    """Cuts bytes, as they arrive, into SSE events (each with its blank line); the relay
    forwards the bytes untouched, this only watches them."""

    def __init__(self) -> None:
        self.pending = b""

    def feed(self, data: bytes) -> list[bytes]:
        self.pending += data
        events: list[bytes] = []
        while True:
            cut = _event_end(self.pending)
            if cut < 0:
                return events
            events.append(self.pending[:cut])
            self.pending = self.pending[cut:]

    def rest(self) -> bytes:
        """What came after the last complete event (a stream cut off mid-event)."""
        rest, self.pending = self.pending, b""
        return rest


def _event_end(data: bytes) -> int:
    ends = [i + len(sep) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r") if (i := data.find(sep)) >= 0]
    return min(ends) if ends else -1


# --------------------------------------------------------------------------- matching


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Every leaf of a JSON value by its JSON pointer."""
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(flatten(v, f"{path}/{str(k).replace('~', '~0').replace('/', '~1')}"))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, v in enumerate(value):
            out.update(flatten(v, f"{path}/{i}"))
        return out
    return {path or "/": value}


def request_diff(recorded: Mapping[str, Any], sent: Mapping[str, Any], limit: int = 12) -> list[str]:
    """How ``sent`` differs from ``recorded``, compared semantically (volatile fields, nonces
    and ids set aside), one line per JSON pointer: ``-`` recorded, ``+`` sent."""
    old, new = flatten(canonical_request(recorded)), flatten(canonical_request(sent))
    lines: list[str] = []
    for path in sorted(set(old) | set(new), key=_pointer_order):
        if path in old and path in new and old[path] == new[path]:
            continue
        if path in old:
            lines.append(f"- {path}: {_short(old[path])}")
        if path in new:
            lines.append(f"+ {path}: {_short(new[path])}")
    if len(lines) > limit:
        lines = [*lines[:limit], f"  ... and {len(lines) - limit} more line(s)"]
    return lines


def _pointer_order(path: str) -> list[tuple[int, int | str]]:
    return [(0, int(p)) if p.isdigit() else (1, p) for p in path.split("/")]


def _short(value: Any, width: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 3] + "..."


def distance(recorded: Mapping[str, Any], sent: Mapping[str, Any]) -> int:
    """How many JSON pointers differ between two requests' canonical forms."""
    old, new = flatten(canonical_request(recorded)), flatten(canonical_request(sent))
    return sum(1 for p in set(old) | set(new) if old.get(p, _MISSING) != new.get(p, _MISSING))


_MISSING = object()


@dataclass(frozen=True, slots=True)
class Nearest:
    """The recording closest to a request that has none, and how the request differs from it."""

    recording: Recording
    name: str
    diff: tuple[str, ...]


def nearest(body: Mapping[str, Any], path: str, recordings: Iterable[tuple[str, Recording]]) -> Nearest | None:
    """The named recording of the same path whose request differs least from ``body``."""
    same = [(name, r) for name, r in recordings if r.path == path]
    if not same:
        return None
    name, best = min(same, key=lambda item: (distance(item[1].request, body), item[0]))
    return Nearest(best, name, tuple(request_diff(best.request, body)))


def no_recording_message(path: str, found: Nearest | None, where: str) -> str:
    """What a strict replay answers a request it has no recording of."""
    if found is None:
        return f"record mode none: no recording in {where} for a request to {path}, and none for that path at all"
    return "\n".join([
        f"record mode none: no recording in {where} matches this request to {path} (request drift?); "
        f"the nearest is {found.name}, which differs ('-' recorded, '+' sent):",
        *found.diff,
    ])


# --------------------------------------------------------------------------- building one


def build_recording(
    *, dialect: WireDialect, path: str, request: Mapping[str, Any], request_headers: Mapping[str, str], status: int,
    response_headers: Mapping[str, str], events: Sequence[tuple[bytes, float]] | None, body: bytes | None,
    server: str, version: str, recorded_on: str | None, known: Sequence[str] = (),
) -> Recording:
    """A ``Recording`` of what passed through: secrets redacted, ids canonical. ``events``
    are the SSE events of a stream with the milliseconds before each; ``body`` an answer in
    one piece. ``known`` are values known to be secret besides the credential headers."""
    redactor = redactor_for(request_headers).knowing(known)
    canon = Canon()
    warnings: list[str] = []
    kept: tuple[RecordedEvent, ...] = ()
    text: str | None = None
    if events is not None:
        kept = tuple(RecordedEvent(canonical_event(_decode(raw, warnings), canon, redactor), round(ms, 3))
                     for raw, ms in events)
    if body is not None:
        text = canonical_body(_decode(body, warnings), canon, redactor)
    return Recording(
        dialect=dialect, path=path, request=recorded_request(request, redactor),
        request_headers=kept_headers(request_headers, KEPT_REQUEST_HEADERS, redactor), status=status,
        response_headers=kept_headers(response_headers, KEPT_RESPONSE_HEADERS, redactor), streamed=events is not None,
        events=kept, body=text, server=server, version=version, recorded_on=recorded_on, warnings=tuple(warnings),
    )


def _decode(data: bytes, warnings: list[str]) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append("the answer is not valid UTF-8: undecodable bytes were replaced")
        return data.decode("utf-8", "replace")


def slug(text: str) -> str:
    """A folder name for a server or version: lower-case letters, digits, dots and dashes."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "unknown"


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    return next((v for k, v in headers.items() if k.lower() == name.lower()), None)

