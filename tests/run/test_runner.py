"""The runner against real sockets: what it sends, and that no proxy behaviour can
hang it or make it raise (except a proxy that is not there at all)."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.errors import ProxyUnreachable
from harness.core.exchange import BackendActivity, Exchange
from harness.core.nonce import NONCE_HEADER, NONCE_RE
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.embedded import EmbeddedServers
from harness.core.client_request import build_request, with_model
from harness.run.proxy_client import _fetch, deadline, run_exchange
from harness.run.runner import play
from harness.run.settings import ModelChoice, RunSettings, parse_features, parse_header, parse_models
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}
NATIVE = LIBRARY["plain-native-single"]
ServeFn = Callable[[Any], Any]


@pytest.fixture
def mock(servers: ServeFn) -> Iterator[MockControl]:
    with MockControl(servers(create_mock()).url) as control:
        yield control


def _app(handler: Callable[[Request], Any]) -> Starlette:
    return Starlette(routes=[Route("/v1/chat/completions", handler, methods=["POST"])])


def _exchange(scenario: Scenario, url: str, mock: MockControl, *, stream: bool = True, profile: Profile = CLIENTS["openai"],
              model: str | None = None, headers: dict[str, str] | None = None, timeout: float = 5.0) -> Exchange:
    return run_exchange(scenario, proxy_url=url, mock=mock, stream=stream, profile=profile, model=model,
                        proxy_headers=headers or {}, timeout=timeout)


# --------------------------------------------------------------------------- what is sent


def test_request_headers_body_and_nonce(servers: ServeFn, mock: MockControl) -> None:
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def echo(request: Request) -> Response:
        seen.append((dict(request.headers), json.loads(await request.body())))
        return JSONResponse({"ok": True})

    url = servers(_app(echo)).url + "/v1"
    scenario = LIBRARY["plain-include-usage"]  # streams, with stream_options
    assert scenario.client.request.get("stream_options")
    cases: list[tuple[Profile, bool, dict[str, str], str]] = [
        (CLIENTS["xml-client"], True, {}, "Cline/3.38.0 toolcall-conformance"),
        (CLIENTS["openai"], False, {}, "OpenAI/Python toolcall-conformance"),
        (CLIENTS["openai"], True, {"user-agent": "mine/1.0", "Authorization": "Bearer k"}, "mine/1.0"),
    ]
    for profile, stream, user_headers, agent in cases:
        ex = _exchange(scenario, url, mock, stream=stream, profile=profile, model="served-name", headers=user_headers)
        headers, body = seen[-1]
        assert headers["user-agent"] == agent
        assert ex.status == 200 and ex.profile == profile and ex.stream == stream
        nonce = headers[NONCE_HEADER.lower()]
        assert NONCE_RE.fullmatch(nonce.encode())
        assert body["user"] == nonce and nonce in body["messages"][0]["content"]
        assert body["model"] == "served-name" and body["stream"] is stream
        assert ("stream_options" in body) is stream
        assert body == dict(ex.request_body)
        if "Authorization" in user_headers:
            assert headers["authorization"] == "Bearer k"
    assert all(NONCE_HEADER not in k for k in scenario.client.headers)


def test_scenario_headers_override_the_profile_and_users_override_both() -> None:
    from harness.core.dialects.profiles import request_headers

    merged = request_headers(CLIENTS["xml-client"], {"User-Agent": "RooCode/3"}, {"x-api-key": "k"})
    assert merged["User-Agent"] == "RooCode/3" and merged["x-api-key"] == "k"
    merged = request_headers(CLIENTS["xml-client"], {"User-Agent": "RooCode/3"}, {"user-agent": "mine"})
    assert [v for k, v in merged.items() if k.lower() == "user-agent"] == ["mine"]


def _case(client: dict[str, Any], **expect: Any) -> Scenario:
    request = client.pop("request", {"model": "m", "stream": False, "messages": [{"role": "user", "content": "hi"}]})
    return parse_scenario({
        "id": "runner-case", "title": "t", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["hello"]},
        "client": {"request": request, **client},
        "expect": {"content": "hello", **expect},
    })


def test_misbehaving_clients_and_the_anthropic_endpoint(servers: ServeFn, mock: MockControl) -> None:
    seen: list[tuple[str, dict[str, str], bytes]] = []

    async def record(request: Request) -> Response:
        seen.append((request.url.path, dict(request.headers), await request.body()))
        return JSONResponse({"ok": True})

    app = Starlette(routes=[Route(p, record, methods=["POST"]) for p in ("/v1/chat/completions", "/v1/messages")])
    url = servers(app).url + "/v1"

    ex = _exchange(_case({"pad_bytes": 5000}), url, mock, stream=False)
    content = json.loads(seen[-1][2])["messages"][0]["content"]
    assert content.startswith("hi(padding") and len(content.split("\n\n[conformance run")[0].encode()) == 5000
    assert ex.request_body["messages"][0]["content"] == content

    ex = _exchange(_case({"raw_body": '{"model": "m", "messages": ['}), url, mock, stream=False)
    assert seen[-1][2] == b'{"model": "m", "messages": [' and ex.request_body == {}
    assert seen[-1][1][NONCE_HEADER.lower()] == ex.request_headers[NONCE_HEADER]

    anthropic = _case({"profile": "anthropic", "request": {"model": "claude", "max_tokens": 9, "stream": True,
                                                           "messages": [{"role": "user", "content": "hi"}]}})
    ex = _exchange(anthropic, url, mock, profile=CLIENTS["anthropic"])
    path, headers, body = seen[-1]
    assert path == "/v1/messages" and headers["anthropic-version"] == "2023-06-01"
    assert headers["user-agent"].startswith("Anthropic/Python") and json.loads(body)["stream"] is True


def test_a_half_sent_body_is_answered_or_abandoned(servers: ServeFn, mock: MockControl) -> None:
    async def reject_early(request: Request) -> Response:  # answers before the body is complete
        return JSONResponse({"error": {"message": "incomplete body", "type": "invalid_request_error"}},
                            status_code=400)

    async def wait_for_body(request: Request) -> Response:
        return JSONResponse({"size": len(await request.body())})

    truncated = _case({"truncate_body": True})
    early = _exchange(truncated, servers(_app(reject_early)).url + "/v1", mock, stream=False)
    assert early.status == 400 and b"incomplete body" in early.raw and not early.timed_out
    patient = _exchange(truncated, servers(_app(wait_for_body)).url + "/v1", mock, stream=False, timeout=0.5)
    assert patient.timed_out and patient.status is None


def test_survival_probe_after_the_exchange(servers: ServeFn, mock: MockControl) -> None:
    calls: list[int] = []

    async def breaks_after_one(request: Request) -> Response:
        calls.append(1)
        if len(calls) > 1:
            return JSONResponse({"error": {"message": "wedged", "type": "server_error"}}, status_code=500)
        return JSONResponse({"ok": True})

    async def fine(request: Request) -> Response:
        return JSONResponse({"ok": True})

    case = _case({}, proxy_survives=True)
    broken = _exchange(case, servers(_app(breaks_after_one)).url + "/v1", mock, stream=False)
    assert broken.status == 200 and broken.survived is False
    assert broken.survival_detail is not None and "HTTP 500" in broken.survival_detail
    healthy = _exchange(case, servers(_app(fine)).url + "/v1", mock, stream=False)
    assert healthy.survived is True
    assert _exchange(_case({}), servers(_app(fine)).url + "/v1", mock, stream=False).survived is None


# --------------------------------------------------------------------------- what cannot stall a run


async def _hang(request: Request) -> Response:
    while not await request.is_disconnected():  # no answer ever; returns once the client gives up
        await asyncio.sleep(0.05)
    return Response()


async def _done_then_stall(request: Request) -> Response:
    async def body() -> Any:
        yield b'data: {"choices": []}\n\n'
        yield b"data: [DONE]\n\n"
        await asyncio.sleep(3600)

    return StreamingResponse(body(), media_type="text/event-stream")


async def _trickle(request: Request) -> Response:
    async def body() -> Any:
        while True:
            yield b": still here\n"
            await asyncio.sleep(0.05)

    return StreamingResponse(body(), media_type="text/event-stream")


async def _answer_at_once(request: Request) -> Response:
    return JSONResponse({"ok": True})


def _room_for_first_bytes(servers: ServeFn, mock: MockControl) -> float:
    """A timeout that leaves an answer's first bytes time to arrive on this machine as
    loaded as it is now: twenty times the slowest of three whole exchanges with a prompt
    proxy (at least 2 s, which a loaded machine's loopback has never needed here)."""
    prompt = servers(_app(_answer_at_once)).url + "/v1"
    return max(2.0, 20 * max(_exchange(NATIVE, prompt, mock, stream=False).elapsed for _ in range(3)))


@pytest.mark.parametrize(
    ("handler", "status", "received"),
    [(_hang, None, b""), (_done_then_stall, 200, b"data: [DONE]\n\n"), (_trickle, 200, b": still here\n")],
    ids=["never-answers", "never-closes-after-done", "trickles-forever"],
)
def test_the_deadline_ends_every_exchange(servers: ServeFn, mock: MockControl, handler: Any, status: int | None,
                                          received: bytes) -> None:
    url = servers(_app(handler)).url + "/v1"
    ex = _exchange(NATIVE, url, mock, timeout=_room_for_first_bytes(servers, mock))
    assert ex.timed_out and ex.transport_error is None
    assert ex.status == status
    assert received in ex.raw  # what arrived before the deadline is kept
    assert (ex.first_byte is None) == (not received)


def test_the_deadline_counts_only_the_proxys_own_time() -> None:
    """``--timeout`` is the proxy's time: the backend's time answering it is added."""
    assert deadline(100.0, 5.0, None) == 105.0
    assert deadline(100.0, 5.0, BackendActivity(answering=1, busy_seconds=7.5)) == 112.5


@pytest.mark.parametrize("backend_busy", [True, False], ids=["backend-still-answering", "backend-idle"])
def test_a_busy_backend_moves_the_deadline(servers: ServeFn, backend_busy: bool) -> None:
    """A relay that finishes only after the harness's first deadline has passed twice:
    while the mock says it is still answering, the harness waits; when the mock is idle,
    the same relay counts as hanging. Ordered by events, not by the clock."""
    asked: list[float] = []
    release = threading.Event()

    async def relay(request: Request) -> Response:
        async def body() -> Any:
            yield b'data: {"choices": []}\n\n'
            while not release.is_set() and not await request.is_disconnected():
                await asyncio.sleep(0.01)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    def backend() -> BackendActivity:
        asked.append(time.monotonic())
        if len(asked) >= 2:
            release.set()
        busy = time.monotonic() - start if backend_busy else 0.0
        return BackendActivity(answering=int(backend_busy), busy_seconds=busy)

    url = servers(_app(relay)).url + "/v1/chat/completions"
    start = time.monotonic()
    got = _fetch(url, b"{}", {"content-type": "application/json"}, 0.2, truncate=False, backend=backend)
    release.set()
    if backend_busy:
        assert not got.timed_out and len(asked) >= 2 and b"data: [DONE]" in b"".join(got.chunks)
    else:
        assert got.timed_out and len(asked) == 1


def test_a_broken_connection_is_recorded_not_raised(servers: ServeFn, mock: MockControl) -> None:
    async def dies(request: Request) -> Response:
        async def body() -> Any:
            yield b'data: {"choices": []}\n\n'
            raise RuntimeError("the proxy crashed mid-stream")

        return StreamingResponse(body(), media_type="text/event-stream")

    url = servers(_app(dies)).url + "/v1"
    ex = _exchange(NATIVE, url, mock)
    assert ex.transport_error is not None and not ex.timed_out
    assert ex.status == 200 and ex.raw.startswith(b'data: {"choices": []}')


def test_nothing_listening_is_proxy_unreachable(mock: MockControl) -> None:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        with pytest.raises(ProxyUnreachable, match="cannot connect to the proxy under test at " + url):
            _exchange(NATIVE, url, mock)


# --------------------------------------------------------------------------- against the reference proxy


def test_exchange_and_item_against_the_reference_proxy() -> None:
    with EmbeddedServers() as urls, MockControl(urls.mock_url) as control:
        assert urls.proxy_url is not None and "xml-client" in urls.proxy_features
        ex = _exchange(NATIVE, urls.proxy_url, control)
        assert ex.status == 200 and not ex.timed_out and ex.first_byte is not None
        assert ex.raw.rstrip().endswith(b"data: [DONE]")
        assert len(ex.upstream) == 1
        assert ex.upstream[0].headers.get(NONCE_HEADER.lower()) == ex.request_headers[NONCE_HEADER]

        settings = RunSettings(proxy_url=urls.proxy_url, features=urls.proxy_features, rechunk=4, seed=11)
        scenario = LIBRARY["qwen-tools-single-call"]
        run = play(scenario, settings=settings, mock=control, profile=CLIENTS["openai"])
        kinds = [a.kind for a in run.attempts]
        assert kinds == ["stream", "non-stream", "equivalence", "rechunk", "rechunk", "rechunk", "rechunk"]
        assert [a.variant.strategy for a in run.attempts if a.variant] == ["per-char", "tags", "random", "multibyte"]
        assert run.failures == []
        per_char = run.attempts[3].scenario
        assert len(per_char.backend.frames) == len(scenario.backend.text)


# --------------------------------------------------------------------------- option parsing


def test_option_parsing() -> None:
    assert parse_models(["m1", "hermes=h-model", "qwen-tools = q"]) == ModelChoice("m1", {"hermes": "h-model",
                                                                                           "qwen-tools": "q"})
    plain = next(s for s in load_library() if s.family == "plain" and not s.rescues)
    hermes = next(s for s in load_library() if s.family == "hermes")
    assert parse_models(["hermes=h"]).for_scenario(plain) is None
    assert parse_models(["a", "hermes=h"]).for_scenario(hermes) == "h"
    for bad in ("=x", "fam=", ""):
        with pytest.raises(ValueError, match="--model"):
            parse_models([bad])
    assert parse_header("Authorization: Bearer a:b") == ("Authorization", "Bearer a:b")
    for bad in ("no colon", ": value", "two words: v"):
        with pytest.raises(ValueError, match="Name: value"):
            parse_header(bad)
    assert parse_features(["a,b", " c ", ""]) == frozenset({"a", "b", "c"})


def test_build_request_keeps_the_scenario_untouched() -> None:
    scenario = LIBRARY["plain-include-usage"]
    before = json.dumps(scenario.client.request, sort_keys=True)
    body = build_request(scenario, stream=False, model=None, nonce="tcc-" + "0" * 32)
    assert "stream_options" not in body and body["model"] == scenario.client.request["model"]
    assert json.dumps(scenario.client.request, sort_keys=True) == before


# --------------------------------------------------------------------------- the replay command


def test_replay_prints_the_answer_and_the_verdicts(servers: ServeFn) -> None:
    from click.testing import CliRunner

    from harness.cli.main import main

    runner = CliRunner()
    good = runner.invoke(main, ["replay", NATIVE.id, "--rechunk-seed", "3", "--rechunk-variant", "1"])
    assert good.exit_code == 0, good.output
    assert "(reference proxy)" in good.output and "re-chunk variant 1 (tags, seed 3," in good.output
    assert "--- answer as received (streaming request; HTTP 200;" in good.output
    assert "data: [DONE]" in good.output and "verdict: every applicable rule holds" in good.output

    # a proxy that never answers: whatever the machine's load, the replay ends at the timeout
    silent = servers(_app(_hang)).url + "/v1"
    bad = runner.invoke(main, ["replay", NATIVE.id, "--proxy-url", silent, "--timeout", "0.4", "--no-stream"])
    assert bad.exit_code == 1
    assert "(non-streaming request; no response;" in bad.output
    assert "the exchange was abandoned after 0.4 s" in bad.output
    assert "rule HTTP-002 [client, transport]: The answer completes within the run's timeout (the proxy's own" in bad.output
    assert "\n  breaks openai-python" in bad.output  # who a client rule's failure costs

    unknown = runner.invoke(main, ["replay", "plain-native-singel"])
    assert unknown.exit_code == 2 and "did you mean plain-native-single" in unknown.output

    # a scenario file, as the import command writes one: replayed as it is, wherever it is
    assert NATIVE.path is not None
    by_file = runner.invoke(main, ["replay", str(NATIVE.path), "--no-stream"])
    assert by_file.exit_code == 0, by_file.output
    assert "verdict: every applicable rule holds" in by_file.output
    missing = runner.invoke(main, ["replay", "cases/nowhere.yaml"])
    assert missing.exit_code == 2 and "no scenario file 'cases/nowhere.yaml'" in missing.output


@pytest.mark.parametrize(
    ("raw", "model", "sent"),
    [
        ('{"model": "qwen", "messages": [', "gpt-x", '{"model": "gpt-x", "messages": ['),
        ('{"model":"a\\"b","model":"c"}', "m", '{"model":"m","model":"c"}'),
        ('{"messages": [}', "m", '{"messages": [}'),
        ('{"model": "qwen"}', None, '{"model": "qwen"}'),
    ],
)
def test_raw_bodies_carry_the_users_model(raw: str, model: str | None, sent: str) -> None:
    """--model reaches malformed bodies too, so a model-routing proxy does not answer them 404."""
    assert with_model(raw, model) == sent
