"""Playing scenarios against a proxy: one exchange, and everything one test item runs.

``run_exchange`` is the only place the harness talks to the proxy under test. It
arms the mock, sends the scenario's request, reads the raw answer under one overall
deadline (a proxy that hangs, trickles bytes or never closes cannot stall the run),
collects what the mock received and returns an ``Exchange`` for the rules to judge.
``play`` runs the exchanges of one test item: as written, without streaming, and
re-chunked, shrinking a re-chunk failure to the boundary that causes it.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import h11
import httpx

from harness.errors import ConformanceFailure, MockError, ProxyUnreachable
from harness.exchange import BackendActivity, Exchange, Profile
from harness.nonce import NONCE_HEADER, place_nonce
from harness.profiles import ENDPOINTS, PROFILE_FEATURES, client_body, request_headers, written_profile
from harness.rechunk import DEFAULT_SHRINK_BUDGET, Shrunk, Variant, apply_variant, shrink, variants
from harness import isolation
from harness.rules import Options, compare_answers, compare_item, compare_round, evaluate
from harness.scenario import Scenario, parse_scenario
from mock_backends.control import Lockstep, MockControl

# --------------------------------------------------------------------------- user settings


@dataclass(frozen=True)
class ModelChoice:
    """``--model NAME`` for every scenario and ``--model FAMILY=NAME`` per family."""

    default: str | None = None
    per_family: Mapping[str, str] = field(default_factory=dict)

    def for_family(self, family: str) -> str | None:
        return self.per_family.get(family, self.default)

    def as_options(self) -> list[str]:
        out = [] if self.default is None else [self.default]
        return out + [f"{fam}={name}" for fam, name in self.per_family.items()]


def parse_models(values: Iterable[str]) -> ModelChoice:
    default: str | None = None
    per_family: dict[str, str] = {}
    for value in values:
        family, eq, name = value.partition("=")
        if eq:
            if not family.strip() or not name.strip():
                raise ValueError(f"--model {value!r}: expected NAME or FAMILY=NAME")
            per_family[family.strip()] = name.strip()
        elif value.strip():
            default = value.strip()
        else:
            raise ValueError("--model: the model name is empty")
    return ModelChoice(default, per_family)


def parse_header(value: str) -> tuple[str, str]:
    """``'Name: value'`` as given to ``--proxy-header``."""
    name, colon, rest = value.partition(":")
    name = name.strip()
    if not colon or not name or any(c.isspace() for c in name):
        raise ValueError(f"--proxy-header {value!r}: expected 'Name: value'")
    return name, rest.strip()


def parse_headers(values: Iterable[str]) -> dict[str, str]:
    return dict(parse_header(v) for v in values)


def parse_features(values: Iterable[str]) -> frozenset[str]:
    """``--features a,b --features c`` → {a, b, c}."""
    return frozenset(part.strip() for value in values for part in value.split(",") if part.strip())


def with_profile_features(features: Iterable[str], profile: Profile | None) -> frozenset[str]:
    """The features claimed, plus those an explicit ``--client-profile`` implies: asking
    for the vtc profile says the proxy serves vtc clients, so it claims ``vtc``."""
    return frozenset(features) | frozenset(PROFILE_FEATURES[profile] if profile is not None else ())


# --------------------------------------------------------------------------- one exchange


PADDING = "(padding to make the message large) "


def pad_text(text: str, size: int) -> str:
    """``text`` grown with filler to ``size`` UTF-8 bytes (unchanged when already longer)."""
    missing = size - len(text.encode("utf-8"))
    if missing <= 0:
        return text
    return text + (PADDING * (missing // len(PADDING) + 1))[:missing]


def _pad_first_user(body: dict[str, Any], size: int) -> None:
    messages = body.get("messages")
    if not isinstance(messages, list):
        return
    for i, message in enumerate(messages):
        if not (isinstance(message, dict) and message.get("role") == "user"):
            continue
        content = message.get("content")
        if isinstance(content, list):
            for j, part in enumerate(content):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts = list(content)
                    parts[j] = {**part, "text": pad_text(part["text"], size)}
                    messages[i] = {**message, "content": parts}
                    return
        messages[i] = {**message, "content": pad_text(content if isinstance(content, str) else "", size)}
        return


def build_request(scenario: Scenario, *, stream: bool, model: str | None, nonce: str) -> dict[str, Any]:
    """The body the client sends: the scenario's request, streaming as asked, with
    the model the user chose, padded when the case asks for a huge message, and the
    nonce placed where proxies keep it."""
    body = dict(scenario.client.request)
    body["stream"] = stream
    if not stream:
        body.pop("stream_options", None)
    if model is not None:
        body["model"] = model
    if scenario.client.pad_bytes is not None:
        body["messages"] = list(body.get("messages") or ())
        _pad_first_user(body, scenario.client.pad_bytes)
    return place_nonce(body, nonce, scenario.client.dialect)


_MODEL_FIELD = re.compile(r'("model"\s*:\s*)"(?:[^"\\]|\\.)*"')


def with_model(raw: str, model: str | None) -> str:
    """A raw body with the model the user chose in place of its own (its first ``"model": "…"``),
    so a model-routing proxy routes a malformed request as it would a good one."""
    if model is None:
        return raw
    return _MODEL_FIELD.sub(lambda m: m.group(1) + json.dumps(model), raw, count=1)


def _payload(scenario: Scenario, body: Mapping[str, Any], model: str | None = None) -> tuple[bytes, Mapping[str, Any]]:
    """The bytes to send and the body as recorded: a misbehaving client's raw bytes
    (recorded parsed when they are a JSON object) or the JSON request."""
    raw = scenario.client.raw_body
    if raw is None:
        return json.dumps(body, ensure_ascii=False).encode("utf-8"), body
    raw = with_model(raw, model)
    try:
        parsed = json.loads(raw)
    except ValueError:
        parsed = None
    return raw.encode("utf-8"), parsed if isinstance(parsed, dict) else {}


@dataclass
class _Received:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    first_byte: float | None = None
    elapsed: float = 0.0
    timed_out: bool = False
    error: str | None = None

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


async def _receive(url: str, body: bytes, headers: Mapping[str, str], got: _Received, start: float,
                   hang_up: bool = False) -> None:
    async with httpx.AsyncClient(timeout=None, trust_env=False, verify=_tls()) as client:
        async with client.stream("POST", url, content=body, headers=dict(headers)) as response:
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

    asyncio.run(fetch())
    got.elapsed = time.monotonic() - start
    return got


def _activity(mock: MockControl, nonce: str) -> BusyProbe:
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
    mock: MockControl,
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
    ``lockstep`` arms the run in a lockstep group of the mock (``harness.isolation``);
    ``hang_up`` closes the connection once the first bytes of the answer arrived.
    """
    nonce = mock.arm(scenario, lockstep=lockstep)
    try:
        body = client_body(profile, build_request(scenario, stream=stream, model=model, nonce=nonce))
        headers = request_headers(profile, scenario.client.headers, proxy_headers)
        headers = {**{k: v for k, v in headers.items() if k.lower() != NONCE_HEADER.lower()}, NONCE_HEADER: nonce}
        url = f"{proxy_url.rstrip('/')}{ENDPOINTS[profile]}"
        payload, recorded_body = _payload(scenario, body, model)
        try:
            got = _fetch(url, payload, headers, timeout, truncate=scenario.client.truncate_body,
                         backend=_activity(mock, nonce), hang_up=hang_up)
        except (httpx.ConnectError, ConnectionRefusedError) as exc:
            raise ProxyUnreachable(
                f"cannot connect to the proxy under test at {proxy_url} ({exc or 'connection refused'}); "
                "is it running, and is --proxy-url right?"
            ) from exc
        recorded, activity = mock.state(nonce)
        upstream = tuple(recorded)
    finally:
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
    )


def probe_scenario(scenario: Scenario, profile: Profile) -> Scenario:
    """A plain one-line question in the client's dialect, answered by the same
    backend dialect: what the proxy must still handle after a bad exchange."""
    request: dict[str, Any] = {
        "model": scenario.client.request.get("model", "probe"),
        "stream": False,
        "messages": [{"role": "user", "content": "Are you still there? Answer yes."}],
    }
    if profile == "anthropic":
        request["max_tokens"] = 16
    return parse_scenario(
        {
            "id": f"{scenario.id}.survival-probe",
            "title": f"survival probe after {scenario.id}",
            "source": "synthetic",
            "stream_equivalence": False,
            "backend": {"dialect": scenario.backend.dialect, "frames": ["yes"]},
            "client": {"profile": written_profile(profile), "profiles": [written_profile(profile)],
                       "request": request},
            "expect": {"content": "yes"},
        },
        family=scenario.family,
    )


def survival_probe(
    scenario: Scenario,
    *,
    proxy_url: str,
    mock: MockControl,
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


# --------------------------------------------------------------------------- one test item


@dataclass(frozen=True)
class RunSettings:
    """What every item of a session shares."""

    proxy_url: str
    features: frozenset[str] = frozenset()
    strict: bool = False
    timeout: float = 10.0
    models: ModelChoice = field(default_factory=ModelChoice)
    proxy_headers: Mapping[str, str] = field(default_factory=dict)
    rechunk: int = 0
    seed: int = 0
    shrink_budget: int = DEFAULT_SHRINK_BUDGET


@dataclass(frozen=True)
class Attempt:
    """One exchange of an item (or the comparison of two) and what it broke."""

    kind: str  # "stream", "non-stream", "equivalence", "rechunk", "item" (all the answers together), "isolation"
    label: str
    scenario: Scenario  # as played (re-chunked variants differ from the file)
    exchange: Exchange | None
    failures: tuple[ConformanceFailure, ...]
    other: Exchange | None = None  # "equivalence": the streamed exchange compared against
    variant: Variant | None = None
    shrunk: Shrunk | None = None
    shrunk_rules: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScenarioRun:
    scenario: Scenario
    profile: Profile
    attempts: tuple[Attempt, ...]

    @property
    def failures(self) -> list[tuple[Attempt, ConformanceFailure]]:
        return [(a, f) for a in self.attempts for f in a.failures]

    @property
    def failed_rules(self) -> list[str]:
        """Distinct rule ids that failed, in the order first seen."""
        return list(dict.fromkeys(f.rule_id for _, f in self.failures))


def _exchange(scenario: Scenario, settings: RunSettings, mock: MockControl, profile: Profile, stream: bool) -> Exchange:
    return run_exchange(
        scenario,
        proxy_url=settings.proxy_url,
        mock=mock,
        stream=stream,
        profile=profile,
        model=settings.models.for_family(scenario.family),
        proxy_headers=settings.proxy_headers,
        timeout=settings.timeout,
    )


def play(
    scenario: Scenario,
    *,
    settings: RunSettings,
    mock: MockControl,
    profile: Profile,
) -> ScenarioRun:
    """Every exchange of one item; all failures are collected, none stops the others."""
    options = Options(profile=profile, strict=settings.strict, features=settings.features)
    attempts: list[Attempt] = []
    template = scenario
    if isolation.wants_round(scenario):
        scenario = isolation.tag(scenario, isolation.new_token())
    streamed = _exchange(scenario, settings, mock, profile, scenario.streams)
    kind = "stream" if scenario.streams else "non-stream"
    label = f"{'streaming' if scenario.streams else 'non-streaming'}, as the scenario's request says"
    attempts.append(Attempt(kind, label, scenario, streamed, tuple(evaluate(scenario, streamed, options))))

    replayable = scenario.client.raw_body is None and not scenario.client.truncate_body  # the JSON request is sent
    if scenario.streams and scenario.stream_equivalence and replayable:
        plain = _exchange(scenario, settings, mock, profile, False)
        attempts.append(
            Attempt("non-stream", "the same request with stream: false", scenario, plain,
                    tuple(evaluate(scenario, plain, options)))
        )
        attempts.append(
            Attempt("equivalence", "streamed vs non-streamed answer", scenario, plain,
                    tuple(compare_answers(scenario, streamed, plain, options)), other=streamed)
        )

    # A fault is placed by frame number, so re-split frames would move it: such cases keep their frames.
    if settings.rechunk > 0 and scenario.streams and scenario.rechunk and replayable and scenario.backend.fault is None:
        main_rules = {f.rule_id for f in attempts[0].failures}
        shrunk_once = False
        for variant in variants(scenario, settings.rechunk, settings.seed):
            played = apply_variant(scenario, variant)
            exchange = _exchange(played, settings, mock, profile, True)
            failures = tuple(evaluate(played, exchange, options))
            new_rules = tuple(dict.fromkeys(f.rule_id for f in failures if f.rule_id not in main_rules))
            shrunk: Shrunk | None = None
            if new_rules and not shrunk_once and not exchange.timed_out:
                # Only the first failing variant is shrunk: each shrink step is a full exchange.
                shrunk_once = True
                shrunk = _shrink(scenario, variant, new_rules, settings, mock, profile, options)
            attempts.append(
                Attempt("rechunk", variant.label, played, exchange, failures, variant=variant,
                        shrunk=shrunk, shrunk_rules=new_rules if shrunk else ())
            )
    answers = [(a.label, a.scenario, a.exchange) for a in attempts
               if a.kind != "equivalence" and a.exchange is not None]
    together = tuple(compare_item(answers, options))
    if together:
        attempts.append(Attempt("item", "all the answers of this item together", scenario, None, together))
    if isolation.wants_round(template):
        def one(tagged: Scenario, **how: Any) -> Exchange:
            return run_exchange(tagged, proxy_url=settings.proxy_url, mock=mock, stream=tagged.streams, profile=profile,
                                model=settings.models.for_family(tagged.family), proxy_headers=settings.proxy_headers,
                                timeout=settings.timeout, **how)

        round_ = isolation.play_round(template, one, options, profile, settings.timeout)
        failures = tuple(compare_round(round_, options))
        attempts.append(Attempt("isolation", isolation.LABEL, scenario, None, failures))
    return ScenarioRun(template, profile, tuple(attempts))


def _shrink(
    scenario: Scenario,
    variant: Variant,
    rules: Sequence[str],
    settings: RunSettings,
    mock: MockControl,
    profile: Profile,
    options: Options,
) -> Shrunk:
    wanted = set(rules)

    def fails(splits: tuple[int, ...]) -> bool:
        played = apply_variant(scenario, variant, splits)
        exchange = _exchange(played, settings, mock, profile, True)
        return any(f.rule_id in wanted for f in evaluate(played, exchange, options))

    return shrink(variant.splits, fails, budget=settings.shrink_budget)


# --------------------------------------------------------------------------- one replay


@dataclass(frozen=True)
class Replay:
    """One exchange replayed on request, with what the rules say about it."""

    scenario: Scenario  # as played (re-split when asked)
    profile: Profile
    exchange: Exchange
    failures: tuple[ConformanceFailure, ...]
    variant: Variant | None = None


def replay(
    scenario: Scenario,
    *,
    settings: RunSettings,
    mock: MockControl,
    profile: Profile,
    stream: bool | None = None,
    variant_index: int | None = None,
    splits: Sequence[int] | None = None,
) -> Replay:
    """Replay one exchange of ``scenario``: as written, without streaming, one
    re-chunked variant (``settings.seed`` + ``variant_index``) or an explicit split."""
    streaming = scenario.streams if stream is None else stream
    variant: Variant | None = None
    played = scenario
    if variant_index is not None:
        variant = variants(scenario, variant_index + 1, settings.seed)[variant_index]
        played = apply_variant(scenario, variant, splits)
    elif splits is not None:
        played = apply_variant(scenario, Variant(-1, "explicit", settings.seed, tuple(splits)))
    exchange = _exchange(played, settings, mock, profile, streaming)
    options = Options(profile=profile, strict=settings.strict, features=settings.features)
    return Replay(played, profile, exchange, tuple(evaluate(played, exchange, options)), variant)
