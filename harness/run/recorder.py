"""The recorder: a pass-through in front of a real backend (or a proxy) that keeps every
exchange as a capture and a scenario to review, and replays them in the record modes of
pytest-recording (``none``, ``once``, ``new-episodes``, ``rewrite``).

Each byte the upstream sends is relayed the moment it arrives; the SSE events are only
watched on the way (where each ends, how long after the one before), so recording never
buffers an answer. What is kept is written after the answer has gone out:

* ``OUT/captures/<server>/<version>/<n>-<dialect>-<key>.json``: the exchange as it came
  (append-only: a capture is never rewritten, so every version's habits stay visible);
* ``OUT/scenarios/<id>.yaml``: the scenario the newest capture of a request makes;
* ``OUT/drift.jsonl``: each request drift (a request no recording matches, with its nearest)
  and shape drift (an answer whose shape changed since the last capture of its request).
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from contextlib import asynccontextmanager
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.capture.drift import drift_between
from harness.capture.errors import CaptureError
from harness.capture.recorded import recorded_scenario, scenario_id
from harness.capture.recording import (
    EventSplitter,
    Recording,
    build_recording,
    dialect_for,
    header_value,
    nearest,
    no_recording_message,
    request_key,
    slug,
)
from harness.core.dialects import OPENAI, WireDialect
from harness.core.nonce import find_nonce

HOP_BY_HOP = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer",
                        "upgrade", "accept-encoding", "proxy-connection"})
REFUSED_STATUS = 400  # what a strict replay answers a request it has no recording of


@dataclass(frozen=True)
class RecorderConfig:
    """How one recorder runs."""

    out: Path
    upstream: str | None = None  # base URL of the backend or proxy; None replays only
    mode: str = "new-episodes"
    dialect: WireDialect | None = None  # every request is in this dialect (default: by the path)
    server: str | None = None  # the folder captures are kept under (default: the upstream's Server header)
    version: str = "unknown"
    recorded_on: str | None = None
    replay_upstream: bool = False  # a matched request is passed on unrecorded instead of answered from its capture
    passes: Callable[[Mapping[str, Any]], bool] | None = None  # requests let by unrecorded, unmatched (a run's probes)
    timeout: float = 600.0


class CaptureStore:
    """The captures and scenarios of one folder; captures are only ever added."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.captures = out / "captures"
        self.scenarios = out / "scenarios"
        self.drift_file = out / "drift.jsonl"
        self.recordings: list[tuple[str, Recording]] = []
        for path in sorted(self.captures.glob("*/*/*.json"), key=lambda p: p.name):
            self.recordings.append((self.name(path), Recording.from_json(json.loads(path.read_text("utf-8")))))

    def name(self, path: Path) -> str:
        return path.relative_to(self.out).as_posix()

    def newest(self, key: str) -> tuple[str, Recording] | None:
        return next(((n, r) for n, r in reversed(self.recordings) if r.key == key), None)

    def add(self, recording: Recording) -> str:
        folder = self.captures / slug(recording.server) / slug(recording.version)
        folder.mkdir(parents=True, exist_ok=True)
        number = len(self.recordings) + 1
        while True:
            path = folder / f"{number:06d}-{recording.dialect.name}-{recording.key}.json"
            try:
                with path.open("x", encoding="utf-8") as f:  # never over an earlier capture
                    json.dump(recording.to_json(), f, ensure_ascii=False, indent=1)
                    f.write("\n")
                break
            except FileExistsError:
                number += 1
        name = self.name(path)
        self.recordings.append((name, recording))
        return name

    def write_scenario(self, name: str, text: str) -> Path:
        self.scenarios.mkdir(parents=True, exist_ok=True)
        path = self.scenarios / f"{name}.yaml"
        path.write_text(text, encoding="utf-8")
        return path

    def log_drift(self, entry: Mapping[str, Any]) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        with self.drift_file.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def upstream_url(base: str, path: str) -> str:
    """Where a request to ``path`` goes: below the upstream's base URL, whose ``/v1`` (if it
    ends in one) stands for the path's own."""
    root = base.rstrip("/")
    if urlsplit(root).path.endswith("/v1") and path.startswith("/v1/"):
        return root + path[3:]
    return root + path


@dataclass
class _Live:
    """One exchange on its way through: what is watched of it."""

    dialect: WireDialect
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    started: float
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    events: list[tuple[bytes, float]] = field(default_factory=list)
    last: float = 0.0


class Recorder:
    """The recorder's state and its ASGI app (``app``)."""

    def __init__(self, config: RecorderConfig, notify: Callable[[str], None] | None = None) -> None:
        if config.upstream is None and config.mode not in ("none", "once"):
            raise CaptureError(f"record mode {config.mode} records: it needs --upstream")
        self.config = config
        self.store = CaptureStore(config.out)
        self.had_recordings = bool(self.store.recordings)
        self.notify = notify or (lambda text: print(text, file=sys.stderr, flush=True))
        self.client: httpx.AsyncClient | None = None
        self.written: list[str] = []  # captures written by this recorder, in order
        self._busy = 0  # exchanges on their way through, not kept yet
        self._settled = threading.Condition()
        self.app = Starlette(routes=[Route("/{path:path}", self.handle, methods=["GET", "POST"])],
                             lifespan=asynccontextmanager(self._lifespan))

    async def _lifespan(self, app: Any) -> AsyncIterator[None]:
        self.client = httpx.AsyncClient(timeout=httpx.Timeout(self.config.timeout, connect=10.0))
        try:
            yield
        finally:
            await self.client.aclose()

    def wait_settled(self, timeout: float = 60.0) -> bool:
        """Wait until every exchange that reached the recorder is kept; False on ``timeout``."""
        with self._settled:
            return self._settled.wait_for(lambda: self._busy == 0, timeout)

    def _begin(self) -> None:
        with self._settled:
            self._busy += 1

    def _end(self) -> None:
        with self._settled:
            self._busy -= 1
            self._settled.notify_all()

    # ------------------------------------------------------------------ dispatch

    def _records(self, found: bool) -> bool | None:
        """Whether a request goes upstream and is recorded (True), is replayed (False), or is
        refused (None), by the mode."""
        mode = self.config.mode
        if mode == "rewrite":
            return True
        if mode == "new-episodes":
            return False if found else True
        if mode == "once" and not self.had_recordings:
            return True
        return False if found else None

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        raw = await request.body()
        dialect = dialect_for(path, self.config.dialect)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        if request.method != "POST" or dialect is None or not isinstance(body, dict):
            return await self._pass(request, raw)
        headers = dict(request.headers)
        if self.config.replay_upstream:
            if find_nonce(headers, raw) is None or (self.config.passes is not None and self.config.passes(body)):
                return await self._pass(request, raw)  # the run's own probes (preflight, health) are no case
            # A run plays each case streamed and not: either form of a recorded request matches it.
            key = request_key(_unstreamed(body))
            found = next(((n, r) for n, r in reversed(self.store.recordings)
                          if request_key(_unstreamed(r.request)) == key), None)
        else:
            found = self.store.newest(request_key(body))
        decision = self._records(found is not None)
        if decision is None:
            return self._refuse(dialect, path, body)
        if decision is False and found is not None:
            if self.config.replay_upstream:
                return await self._pass(request, raw)
            return self._replay(found[1])
        self._begin()
        try:
            return await self._live(_Live(dialect, path, body, headers, time.monotonic()), raw)
        except BaseException:
            self._end()
            raise

    # ------------------------------------------------------------------ answers

    def _refuse(self, dialect: WireDialect, path: str, body: Mapping[str, Any]) -> Response:
        near = nearest(body, path, self.store.recordings)
        message = no_recording_message(path, near, self.store.out.as_posix())
        self.notify(message)
        entry: dict[str, Any] = {"kind": "request", "path": path, "key": request_key(body)}
        if near is not None:
            entry.update(nearest=near.name, diff=list(near.diff))
        self.store.log_drift(entry)
        return JSONResponse(dialect.errors.write(message, dialect.error_type(REFUSED_STATUS)), REFUSED_STATUS)

    def _replay(self, recording: Recording) -> Response:
        media = header_value(recording.response_headers, "content-type") or "application/json"
        if not recording.streamed:
            return Response(recording.body or "", recording.status, media_type=media)

        async def events() -> AsyncIterator[bytes]:
            for event in recording.events:
                if event.delay_ms > 0:
                    await asyncio.sleep(event.delay_ms / 1000.0)
                yield event.text.encode("utf-8", "surrogatepass")

        return StreamingResponse(events(), recording.status, media_type=media)

    async def _pass(self, request: Request, raw: bytes) -> Response:
        """A request the recorder does not keep (a model list, a matched one under ``run``), passed on."""
        if self.config.upstream is None or self.client is None:
            return JSONResponse({"error": {"message": f"no recording for {request.method} {request.url.path}",
                                           "type": "not_found_error"}}, 404)
        url = upstream_url(self.config.upstream, request.url.path)
        upstream = self.client.build_request(request.method, url, content=raw, params=request.query_params,
                                             headers=_forwarded(request.headers))
        try:
            answer = await self.client.send(upstream, stream=True)
        except httpx.HTTPError as exc:
            return self._unreachable(OPENAI, url, exc)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk
            finally:
                await answer.aclose()

        return StreamingResponse(relay(), answer.status_code, headers=_returned(answer.headers))

    def _unreachable(self, dialect: WireDialect, url: str, exc: Exception) -> Response:
        message = f"the recorder could not reach its upstream {url}: {type(exc).__name__}: {exc}"
        self.notify(message)
        return JSONResponse(dialect.errors.write(message, dialect.error_type(502)), 502)

    async def _live(self, live: _Live, raw: bytes) -> Response:
        assert self.config.upstream is not None and self.client is not None
        url = upstream_url(self.config.upstream, live.path)
        request = self.client.build_request("POST", url, content=raw, headers=_forwarded(live.headers))
        try:
            answer = await self.client.send(request, stream=True)
        except httpx.HTTPError as exc:
            self._end()
            return self._unreachable(live.dialect, url, exc)
        live.status = answer.status_code
        live.response_headers = dict(answer.headers)
        live.last = live.started
        if "text/event-stream" not in answer.headers.get("content-type", ""):
            try:
                data = await answer.aread()
            finally:
                await answer.aclose()
            self._keep(live, None, data)
            return Response(data, answer.status_code, headers=_returned(answer.headers))
        splitter = EventSplitter()

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_raw():
                    yield chunk  # first: the client never waits for the bookkeeping
                    now = time.monotonic()
                    for event in splitter.feed(chunk):
                        live.events.append((event, (now - live.last) * 1000.0))
                        live.last = now
            finally:
                # Kept here, after the last byte went out, and also when the client went away
                # mid-stream (the capture then ends where the relay stopped).
                try:
                    await answer.aclose()
                finally:
                    rest = splitter.rest()
                    if rest.strip():
                        live.events.append((rest, (time.monotonic() - live.last) * 1000.0))
                    self._keep(live, live.events, None)

        return StreamingResponse(relay(), answer.status_code, headers=_returned(answer.headers))

    # ------------------------------------------------------------------ keeping

    def _keep(self, live: _Live, events: list[tuple[bytes, float]] | None, body: bytes | None) -> None:
        try:
            self._write(live, events, body)
        except Exception as exc:  # noqa: BLE001 - a capture that cannot be kept never breaks the relay
            self.notify(f"the exchange to {live.path} could not be kept: {type(exc).__name__}: {exc}")
        finally:
            self._end()

    def _write(self, live: _Live, events: list[tuple[bytes, float]] | None, body: bytes | None) -> None:
        server = self.config.server or header_value(live.response_headers, "server") or \
            urlsplit(self.config.upstream or "").netloc or "unknown"
        recording = build_recording(
            dialect=live.dialect, path=live.path, request=live.body, request_headers=live.headers, status=live.status,
            response_headers=live.response_headers, events=events, body=body, server=server,
            version=self.config.version, recorded_on=self.config.recorded_on,
        )
        before = self.store.newest(recording.key)
        name = self.store.add(recording)
        self.written.append(name)
        if before is not None and before[1].server == recording.server:
            drift = drift_between(before, (name, recording))
            if drift is not None:
                self.notify(drift.describe())
                self.store.log_drift(drift.to_json())
        try:
            made = recorded_scenario(recording, capture_path=name)
        except CaptureError as exc:
            self.notify(f"recorded {name} (no scenario: {exc})")
            return
        path = self.store.write_scenario(scenario_id(recording), made.text)
        self.notify(f"recorded {name} -> {self.store.name(path)} (review required)")


def _unstreamed(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}


def _forwarded(headers: Mapping[str, str]) -> dict[str, str]:
    out = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
    out["accept-encoding"] = "identity"  # the events are watched on the way: no compression
    return out


def _returned(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding"}
