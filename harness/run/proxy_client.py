"""One exchange with the proxy under test, the only place the harness talks to it: arm the mock, send the
scenario's request, read the raw answer under one overall deadline (a proxy that hangs, trickles bytes or
never closes cannot stall the run) and collect what the mock received."""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
import h11
import httpx

from harness.core.client_request import build_request, probe_scenario, request_payload
from harness.core.dialects.clients import Profile
from harness.core.dialects.profiles import client_body, request_headers
from harness.core.errors import MockError, ProxyUnreachable
from harness.core.exchange import BackendActivity, Exchange
from harness.core.nonce import NONCE_HEADER
from harness.core.retry import Retry, plan_retry
from harness.core.scenario.model import Scenario
from mock_backends.control import Control, Lockstep

@dataclass
class _Received:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    first_byte: float | None = None
    elapsed: float = 0.0
    timed_out: bool = False
    error: str | None = None
    started_at: float = 0.0  # wall clock when the request was sent, for records

    def add(self, chunk: bytes, start: float) -> None:
        if chunk:
            if self.first_byte is None:
                self.first_byte = time.monotonic() - start
            self.chunks.append(chunk)


@cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every exchange: building one loads the CA bundle, which
    costs more than a whole exchange over loopback."""
    return httpx.create_ssl_context()


_LOCAL, _NO_KEEP_ALIVE = threading.local(), httpx.Limits(max_keepalive_connections=0)


def _session() -> tuple[asyncio.Runner, httpx.AsyncClient]:
    """This thread's loop and client for every exchange (per request they cost more CPU); a connection per exchange."""
    if getattr(_LOCAL, "thread", None) != threading.get_native_id():  # a forked process makes its own
        client = httpx.AsyncClient(timeout=None, trust_env=False, verify=_tls(), limits=_NO_KEEP_ALIVE)
        _LOCAL.thread, _LOCAL.runner, _LOCAL.client = threading.get_native_id(), asyncio.Runner(), client
        weakref.finalize(threading.current_thread(), _LOCAL.runner.close)  # the loop goes with its thread
    return _LOCAL.runner, _LOCAL.client


async def _receive(url: str, body: bytes, headers: Mapping[str, str], got: _Received, start: float,
                   hang_up: bool = False) -> None:
    async with _session()[1].stream("POST", url, content=body, headers=dict(headers)) as response:
        got.status = response.status_code
        got.headers = {k.lower(): v for k, v in response.headers.items()}
        async for chunk in response.aiter_bytes():
            got.add(chunk, start)
            if hang_up and chunk:
                return  # a client that goes away mid-answer: the connection closes here


async def _receive_truncated(url: str, body: bytes, headers: Mapping[str, str], got: _Received, start: float) -> None:
    """Announce ``body`` whole, send half of it, send nothing more, and read whatever
    the proxy answers. Plain h11 on a socket: an HTTP client library would wait to
    finish sending before it reads."""
    target = httpx.URL(url)
    port = target.port or (443 if target.scheme == "https" else 80)
    reader, writer = await asyncio.open_connection(target.host, port, ssl=target.scheme == "https" or None)
    try:
        conn = h11.Connection(h11.CLIENT)
        head = [("Host", f"{target.host}:{port}"), ("Content-Length", str(len(body))), *headers.items()]
        writer.write(conn.send(h11.Request(method="POST", target=target.raw_path, headers=head)) or b"")
        writer.write(conn.send(h11.Data(data=body[: len(body) // 2])) or b"")
        await writer.drain()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Response):
                got.status = event.status_code
                got.headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in event.headers}
            elif isinstance(event, h11.Data):
                got.add(bytes(event.data), start)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                if got.status is None:
                    got.error = "the proxy closed the connection without an answer"
                return
    except h11.RemoteProtocolError as exc:
        got.error = f"RemoteProtocolError: {exc}"
    except (ConnectionResetError, BrokenPipeError) as exc:
        got.error = f"{type(exc).__name__}: the proxy broke the connection"
    finally:
        writer.close()


#: Seconds per MB of a padded message a proxy may take on top of ``--timeout`` before the exchange counts
#: as hanging: reading, parsing and forwarding 10 MB is the proxy's own work, and slow is not hung
#: (on a loaded 2-core machine claude-code-router 2.0.0 answered the 10 MB case in 16 s, and
#: llm-interactive-proxy in 19.7 s, 20.6 s to a Messages client, serving the next request after it; clients
#: wait 600 s, openai-python's default). A proxy that never answers still counts as hanging, a minute on.
PAD_SECONDS_PER_MB = 5.0


def exchange_timeout(scenario: Scenario, timeout: float) -> float:
    """The proxy's own time ``scenario``'s exchange may take: ``timeout``, and more for a huge message."""
    return timeout + (scenario.client.pad_bytes or 0) / 1_000_000 * PAD_SECONDS_PER_MB


def deadline(start: float, timeout: float, backend: BackendActivity | None) -> float:
    """When an exchange that began at ``start`` counts as hanging: ``timeout`` seconds of
    the proxy's own time, plus the time the backend spent answering it as the mock measured
    it (a stall or a slow drip is the backend's time, however slowly a loaded machine plays
    it). A proxy retrying forever gains only the mock's short answers: it still times out."""
    return start + timeout + (backend.busy_seconds if backend is not None else 0.0)


BusyProbe = Callable[[], BackendActivity | None]


def _fetch(url: str, body: bytes, headers: Mapping[str, str], timeout: float, *, truncate: bool,
           backend: BusyProbe = lambda: None, hang_up: bool = False) -> _Received:
    """Send one request and read the answer as it comes, until ``deadline``: asked of the
    mock (``backend``) each time the deadline known so far is reached (or, with
    ``hang_up``, only until its first bytes)."""
    got = _Received()
    got.started_at = time.time()
    start = time.monotonic()

    async def fetch() -> None:
        receiving = (_receive_truncated(url, body, headers, got, start) if truncate
                     else _receive(url, body, headers, got, start, hang_up))
        task = asyncio.ensure_future(receiving)
        until = deadline(start, timeout, None)
        try:
            while True:
                done, _ = await asyncio.wait((task,), timeout=max(0.0, until - time.monotonic()))
                if done:
                    task.result()
                    return
                later = deadline(start, timeout, await asyncio.to_thread(backend))
                if later <= time.monotonic():
                    got.timed_out = True
                    return
                until = later
        except (httpx.ConnectError, ConnectionRefusedError):
            raise
        except (httpx.HTTPError, OSError) as exc:
            got.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    _session()[0].run(fetch())
    got.elapsed = time.monotonic() - start
    return got


def _activity(mock: Control, nonce: str) -> BusyProbe:
    def probe() -> BackendActivity | None:
        try:
            return mock.activity(nonce)
        except MockError:
            return None  # the mock cannot say: the proxy gets no more time

    return probe


def run_exchange(
    scenario: Scenario,
    *,
    proxy_url: str,
    mock: Control,
    stream: bool,
    profile: Profile,
    model: str | None,
    proxy_headers: Mapping[str, str],
    timeout: float,
    lockstep: Lockstep | None = None,
    hang_up: bool = False,
) -> Exchange:
    """Play ``scenario`` once through the proxy at ``proxy_url`` (e.g. ``http://host:8000/v1``).

    Never raises for anything the proxy does (errors, hangs, garbage): that is all in
    the ``Exchange``. Raises ``ProxyUnreachable`` when nothing listens at the URL and
    ``MockError`` when the mock itself fails. When the case expects the proxy to
    survive it, one plain request follows and ``Exchange.survived`` says how it went.
    ``lockstep`` arms the run in a lockstep group of the mock (``harness.run.isolation``);
    ``hang_up`` closes the connection once the first bytes of the answer arrived.
    """
    nonce = mock.arm(scenario, lockstep=lockstep)
    timeout = exchange_timeout(scenario, timeout)
    finished = False
    try:
        body = client_body(profile, build_request(scenario, stream=stream, model=model, nonce=nonce))
        headers = request_headers(profile, scenario.client.headers, proxy_headers)
        headers = {**{k: v for k, v in headers.items() if k.lower() != NONCE_HEADER.lower()}, NONCE_HEADER: nonce}
        url = f"{proxy_url.rstrip('/')}{profile.endpoint}"
        payload, recorded_body = request_payload(scenario, body, model)
        retries: list[Retry] = []
        while True:
            try:
                got = _fetch(url, payload, headers, timeout, truncate=scenario.client.truncate_body,
                             backend=_activity(mock, nonce), hang_up=hang_up)
            except (httpx.ConnectError, ConnectionRefusedError) as exc:
                raise ProxyUnreachable(
                    f"cannot connect to the proxy under test at {proxy_url} ({exc or 'connection refused'}); "
                    "is it running, and is --proxy-url right?"
                ) from exc
            # A case that expects an answer is judged on what a retrying SDK client gets; one that
            # expects the error is judged on the error itself.
            again = (plan_retry(got.status, got.headers, len(retries), time.time())
                     if scenario.expect.error is None and lockstep is None and not hang_up else None)
            if again is None:
                break
            retries.append(again)
            time.sleep(again.delay)
        recorded, activity = mock.finish(nonce)
        finished = True
        upstream = tuple(recorded)
    finally:
        if not finished:
            try:
                mock.disarm(nonce)
            except MockError:
                pass  # the run is over either way; an error reading it was already raised
    survived: bool | None = None
    detail: str | None = None
    if scenario.expect.proxy_survives:
        survived, detail = survival_probe(
            scenario, proxy_url=proxy_url, mock=mock, profile=profile, model=model, proxy_headers=proxy_headers,
            timeout=timeout,
        )
    return Exchange(
        scenario_id=scenario.id,
        profile=profile,
        stream=stream,
        request_body=recorded_body,
        request_headers=headers,
        status=got.status,
        response_headers=got.headers,
        raw=b"".join(got.chunks),
        elapsed=got.elapsed,
        first_byte=got.first_byte,
        transport_error=got.error,
        timed_out=got.timed_out,
        upstream=upstream,
        backend_seconds=activity.busy_seconds,
        survived=survived,
        survival_detail=detail,
        started_at=got.started_at,
        retries=tuple(r.describe() for r in retries),
        lockstep_broken=activity.lockstep_broken,
    )


def survival_probe(
    scenario: Scenario,
    *,
    proxy_url: str,
    mock: Control,
    profile: Profile,
    model: str | None,
    proxy_headers: Mapping[str, str],
    timeout: float,
) -> tuple[bool, str]:
    """Whether the proxy still answers a plain request (HTTP 200), and what happened."""
    probe = probe_scenario(scenario, profile)
    try:
        ex = run_exchange(probe, proxy_url=proxy_url, mock=mock, stream=False, profile=profile, model=model,
                          proxy_headers=proxy_headers, timeout=timeout)
    except ProxyUnreachable:
        return False, f"the proxy no longer accepts connections at {proxy_url}"
    if ex.timed_out:
        return False, f"a plain request got no complete answer within {timeout:g} s"
    if ex.transport_error is not None:
        return False, f"a plain request failed: {ex.transport_error}"
    if ex.status != 200:
        excerpt = ex.raw[:200].decode("utf-8", "replace")
        return False, f"a plain request got HTTP {ex.status}: {excerpt!r}"
    return True, f"a plain request got HTTP 200 in {ex.elapsed:.2f} s"
