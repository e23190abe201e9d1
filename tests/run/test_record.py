"""``toolcall-conformance record`` end to end: the official SDKs talk to a recorder in front of
the mock (directly, or through the reference proxy) on real loopback servers; the captures and
scenarios it writes validate, replay in ``none`` mode with the original frame boundaries, and
report request drift and shape drift."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from harness.capture.drift import drifts
from harness.capture.recording import Recording
from harness.core.scenario.loading import parse_scenario, validate_paths
from harness.core.scenario.model import Scenario
from harness.run.recorder import CaptureStore, Recorder, RecorderConfig
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app as create_proxy
from reference_proxy.config import ProxyConfig
from support.sdk_http import anthropic_sdk, openai_sdk
from support.servers import ServeFn

TOOLS_OPENAI = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
TOOLS_ANTHROPIC = [{"name": "get_weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
SECRET = "sk-proj-abcdefghijklmnop1234567890"
OTHER_SECRET = "sk-ant-api03-zyxwvutsrqponmlk9876543210"

BACKENDS: dict[str, dict[str, Any]] = {
    "openai": {"dialect": "openai", "frames": [
        "Let me ", "check ", "the weather.",
        {"tool_call": {"index": 0, "id": "call_abc123", "type": "function", "name": "get_weather",
                       "arguments": "{\"city\": "}},
        {"tool_call": {"index": 0, "arguments": "\"Paris\"}"}}], "finish_reason": "tool_calls"},
    "anthropic": {"dialect": "anthropic", "frames": [
        "Let me ", "check ", "the weather.",
        {"tool_use": {"id": "toolu_01abc", "name": "get_weather", "input_json": ["{\"city\": ", "\"Paris\"}"]}}],
        "finish_reason": "tool_use"},
    "responses": {"dialect": "responses", "frames": [
        "Let me ", "check ", "the weather.",
        {"tool_use": {"id": "call_abc123", "name": "get_weather", "input_json": ["{\"city\": ", "\"Paris\"}"]}}],
        "finish_reason": "function_calls"},
}
TOOLS_RESPONSES = [{"type": "function", **TOOLS_OPENAI[0]["function"]}]


def mock_case(dialect: str, backend: dict[str, Any] | None = None) -> Scenario:
    """What the mock plays for the recorded session."""
    request: dict[str, Any] = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    request["tools"] = TOOLS_ANTHROPIC if dialect == "anthropic" else TOOLS_OPENAI
    if dialect == "anthropic":
        request["max_tokens"] = 64
    return parse_scenario({
        "id": f"mock-{dialect}", "title": "what the mock plays", "family": "recording", "source": "test",
        "backend": backend or BACKENDS[dialect],
        "client": {"profiles": ["openai", dialect], "request": request} if dialect == "responses" else
        {"profile": dialect, "request": request},
        "expect": {"tool_calls": []},
    }, where="test")


def session(dialect: str, base_url: str, *, system: str | None = None, api_key: str = SECRET,
            extra: dict[str, Any] | None = None) -> list[str]:
    """One streamed exchange through the official SDK; the text and call deltas as they came."""
    pieces: list[str] = []
    if dialect == "openai":
        client = openai_sdk(base_url=base_url, api_key=api_key, max_retries=0, timeout=30)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": "What is the weather in Paris?"})
        stream = client.chat.completions.create(model="m", messages=messages, tools=TOOLS_OPENAI,  # type: ignore[arg-type]
                                                stream=True, extra_body=extra or None)
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                for call in choice.delta.tool_calls or ():
                    pieces.append(f"call:{call.function.arguments if call.function else ''}")
        return pieces
    if dialect == "responses":
        rclient = openai_sdk(base_url=base_url, api_key=api_key, max_retries=0, timeout=30)
        more: dict[str, Any] = {"instructions": system} if system else {}
        for event in rclient.responses.create(model="m", input="What is the weather in Paris?", stream=True,
                                              tools=TOOLS_RESPONSES, extra_body=extra or None, **more):  # type: ignore[arg-type]
            if event.type == "response.output_text.delta":
                pieces.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                pieces.append(f"call:{event.delta}")
        return pieces
    aclient = anthropic_sdk(base_url=base_url.removesuffix("/v1"), api_key=api_key, max_retries=0, timeout=30)
    kwargs: dict[str, Any] = {"system": system} if system else {}
    with aclient.messages.stream(model="m", max_tokens=64, tools=TOOLS_ANTHROPIC,  # type: ignore[arg-type]
                                 messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                                 extra_body=extra or None, **kwargs) as events:
        for event in events:
            if event.type == "content_block_delta":
                delta = event.delta
                pieces.append(getattr(delta, "text", None) or f"call:{getattr(delta, 'partial_json', '')}")
    return pieces


@pytest.fixture(autouse=True)
def forget_recorders() -> Iterator[None]:
    yield
    RECORDERS.clear()


@pytest.fixture
def mock(servers: ServeFn) -> tuple[str, MockControl]:
    url = servers(create_mock()).url
    return url, MockControl(url)


RECORDERS: list[Recorder] = []


def recorder(servers: ServeFn, out: Path, upstream: str | None, mode: str = "new-episodes",
             notes: list[str] | None = None) -> str:
    config = RecorderConfig(out=out, upstream=upstream, mode=mode, server="mock", version="1",
                            recorded_on="2026-01-01")
    sink = notes if notes is not None else []
    made = Recorder(config, notify=sink.append)
    RECORDERS.append(made)
    return servers(made.app).url


def settled() -> None:
    """Every exchange the recorders saw is kept (they write once the answer has gone out)."""
    for made in RECORDERS:
        assert made.wait_settled()


def proxy(servers: ServeFn, upstream: str, **config: Any) -> str:
    return servers(create_proxy(ProxyConfig(upstream=f"{upstream}/v1", log_level="warning", **config))).url


def written(out: Path) -> tuple[list[Recording], list[Path]]:
    settled()
    return [r for _, r in CaptureStore(out).recordings], sorted((out / "scenarios").glob("*.yaml"))


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "responses"])
@pytest.mark.parametrize("through_proxy", [False, True], ids=["direct", "through-proxy"])
def test_recorded_session_validates_and_replays_in_none_mode(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path, dialect: str, through_proxy: bool
) -> None:
    mock_url, control = mock
    control.arm(mock_case(dialect))
    rec = recorder(servers, tmp_path, f"{mock_url}/v1")
    entry = proxy(servers, rec) if through_proxy else rec
    first = session(dialect, f"{entry}/v1")
    recordings, scenarios = written(tmp_path)
    assert len(recordings) == 1 and len(scenarios) == 1
    loaded, problems = validate_paths([tmp_path / "scenarios"])
    assert problems == [] and loaded[0].review == "required"
    case = loaded[0]
    played = mock_case(dialect).backend.frames
    assert [getattr(f, "content", None) for f in case.backend.frames] == [getattr(f, "content", None) for f in played]
    assert all(f.delay_ms is not None for f in case.backend.frames)
    assert [c.name for c in case.expect.tool_calls] == ["get_weather"]
    assert case.expect.tool_calls[0].arguments == {"city": "Paris"}
    # Strict replay with no upstream at all: the same deltas, split where they were.
    replay = recorder(servers, tmp_path, None, mode="none")
    again = session(dialect, f"{(proxy(servers, replay) if through_proxy else replay)}/v1")
    assert again == first
    assert len(written(tmp_path)[0]) == 1  # nothing recorded under none


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_request_with_no_recording_names_the_nearest(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path, dialect: str
) -> None:
    mock_url, control = mock
    control.arm(mock_case(dialect))
    session(dialect, f"{recorder(servers, tmp_path, f'{mock_url}/v1')}/v1", system="Be brief.")
    settled()
    notes: list[str] = []
    strict = recorder(servers, tmp_path, None, mode="none", notes=notes)
    error = openai.BadRequestError if dialect == "openai" else anthropic.BadRequestError
    with pytest.raises(error) as caught:
        session(dialect, f"{strict}/v1", system="Be verbose.")
    name = CaptureStore(tmp_path).recordings[0][0]
    assert name in str(caught.value) and "Be verbose." in str(caught.value)
    assert "- /" in notes[0] and "+ /" in notes[0]


@pytest.mark.parametrize("dialect", ["openai"])  # system-to-user rewrites chat messages only
def test_a_proxy_that_changes_its_upstream_request_is_reported_as_request_drift(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path, dialect: str
) -> None:
    mock_url, control = mock
    control.arm(mock_case(dialect))
    session(dialect, f"{proxy(servers, recorder(servers, tmp_path, f'{mock_url}/v1'))}/v1", system="Be brief.")
    settled()
    notes: list[str] = []
    strict = recorder(servers, tmp_path, None, mode="none", notes=notes)
    changed = proxy(servers, strict, system_to_user=True)  # now sends the system prompt as a user message
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)):
        session(dialect, f"{changed}/v1", system="Be brief.")
    assert notes and "request drift" in notes[0]
    logged = [json.loads(line) for line in (tmp_path / "drift.jsonl").read_text().splitlines()]
    assert logged[0]["kind"] == "request" and logged[0]["nearest"] == CaptureStore(tmp_path).recordings[0][0]
    assert any(line.startswith("-") for line in logged[0]["diff"]) and any(line.startswith("+") for line in logged[0]["diff"])


def test_a_changed_chunk_shape_is_reported_as_shape_drift(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path
) -> None:
    mock_url, control = mock
    run = control.arm(mock_case("openai"))
    notes: list[str] = []
    rec = recorder(servers, tmp_path, f"{mock_url}/v1", mode="rewrite", notes=notes)
    session("openai", f"{rec}/v1")
    session("openai", f"{rec}/v1")  # the same shape again: no drift
    settled()
    assert drifts(CaptureStore(tmp_path).recordings) == []
    control.disarm(run)
    changed = {**BACKENDS["openai"], "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}}
    changed["frames"] = [*changed["frames"], {"raw": "data: {\"choices\": [], \"x_extra\": true}\n\n"}]
    control.arm(mock_case("openai", changed))
    session("openai", f"{rec}/v1")
    settled()
    found = drifts(CaptureStore(tmp_path).recordings)
    assert len(found) == 1 and any("x_extra" in line for line in found[0].diff)
    assert any(n.startswith("shape drift: mock") for n in notes)
    assert len(CaptureStore(tmp_path).recordings) == 3  # append-only: every capture kept


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "responses"])
def test_no_secret_reaches_a_recording(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path, dialect: str
) -> None:
    mock_url, control = mock
    control.arm(mock_case(dialect))
    entry = recorder(servers, tmp_path, f"{mock_url}/v1")
    session(dialect, f"{entry}/v1", api_key=SECRET, system=f"the deploy key is {OTHER_SECRET}",
            extra={"api_key": "hunter2-password-value", "metadata": {"token": "tok-1234567890abcdef"}})
    settled()
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 2
    for path in files:
        text = path.read_text("utf-8")
        for secret in (SECRET, OTHER_SECRET, "hunter2-password-value", "tok-1234567890abcdef"):
            assert secret not in text, f"{secret} in {path}"


def test_run_replays_a_recorded_session_green_in_none_mode(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path
) -> None:
    import subprocess
    import sys

    mock_url, control = mock
    control.arm(mock_case("openai"))
    session("openai", f"{proxy(servers, recorder(servers, tmp_path, f'{mock_url}/v1'))}/v1")
    settled()
    command = [sys.executable, "-m", "harness.cli.main", "run", "--scenarios", str(tmp_path / "scenarios"),
               "--recordings", str(tmp_path), "--record-mode", "none", "--upstream-dialect", "openai"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**__import__("os").environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout


def test_record_modes(servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path) -> None:
    """once records into an empty folder and then refuses; new-episodes replays what it has and
    records the rest; rewrite records everything again (captures are only ever added)."""
    mock_url, control = mock
    control.arm(mock_case("openai"))
    upstream = f"{mock_url}/v1"
    session("openai", f"{recorder(servers, tmp_path, upstream, mode='once')}/v1")
    assert len(written(tmp_path)[0]) == 1
    once = recorder(servers, tmp_path, upstream, mode="once")
    session("openai", f"{once}/v1")  # recorded: replayed
    with pytest.raises(openai.BadRequestError):
        session("openai", f"{once}/v1", system="new")
    assert len(written(tmp_path)[0]) == 1
    episodes = recorder(servers, tmp_path, upstream, mode="new-episodes")
    session("openai", f"{episodes}/v1")
    session("openai", f"{episodes}/v1", system="new")
    assert len(written(tmp_path)[0]) == 2
    session("openai", f"{recorder(servers, tmp_path, upstream, mode='rewrite')}/v1")
    assert len(written(tmp_path)[0]) == 3


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_an_answer_in_one_piece_is_recorded_and_replayed(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path, dialect: str
) -> None:
    mock_url, control = mock
    control.arm(mock_case(dialect))
    body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}],
            "tools": TOOLS_ANTHROPIC if dialect == "anthropic" else TOOLS_OPENAI}
    path = "/v1/messages" if dialect == "anthropic" else "/v1/chat/completions"
    import httpx

    first = httpx.post(f"{recorder(servers, tmp_path, f'{mock_url}/v1')}{path}", json=body, timeout=30)
    assert first.status_code == 200
    recordings, scenarios = written(tmp_path)
    assert not recordings[0].streamed and len(scenarios) == 1
    loaded, problems = validate_paths(scenarios)
    assert problems == [] and loaded[0].expect.tool_calls[0].arguments == {"city": "Paris"}
    again = httpx.post(f"{recorder(servers, tmp_path, None, mode='none')}{path}", json=body, timeout=30)
    assert again.status_code == 200 and again.json()["model"] == first.json()["model"]


def test_an_upstream_error_is_kept_as_a_capture_and_relayed(
    servers: ServeFn, mock: tuple[str, MockControl], tmp_path: Path
) -> None:
    mock_url, control = mock
    control.arm(mock_case("openai", {**BACKENDS["openai"], "fault": {"kind": "http_error", "status": 503}}))
    notes: list[str] = []
    with pytest.raises(openai.InternalServerError):
        session("openai", f"{recorder(servers, tmp_path, f'{mock_url}/v1', notes=notes)}/v1")
    recordings, scenarios = written(tmp_path)
    assert recordings[0].status == 503 and scenarios == []
    assert any("no scenario" in n for n in notes)


def test_an_unreachable_upstream_is_an_error_in_the_dialect_shape(servers: ServeFn, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(anthropic.APIStatusError) as caught:
        session("anthropic", f"{recorder(servers, tmp_path, f'http://127.0.0.1:{port}/v1')}/v1")
    assert caught.value.status_code == 502 and "could not reach" in str(caught.value)
    assert written(tmp_path)[0] == []
