"""The ``responses`` client profile end to end: the harness posts Responses requests and
judges Responses answers. The mock itself, serving the backend in Responses form at
``/v1/responses``, stands in for a proxy that relays its upstream unchanged, so every
case whose answer needs no rescue must pass, streamed and not.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support import PATIENT_TIMEOUT

from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.responses_request import chat_to_responses
from harness.core.dialects.script import serve_as
from harness.core.exchange import Exchange
from harness.core.scenario.model import Scenario
from harness.run.runner import play
from harness.run.servers import serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app
from mock_backends.control import MockControl
from support.library import load_library

RELAYED = ("plain-native-parallel", "plain-native-single", "plain-text-multibyte",
           "plain-length-cutoff", "plain-text-non-stream")


@pytest.fixture(scope="module")
def mock() -> Iterator[tuple[str, MockControl]]:
    with serve(create_app()) as server, MockControl(server.url) as control:
        yield server.url, control


def _library() -> dict[str, Scenario]:
    return {s.id: s for s in load_library()}


@pytest.mark.parametrize("scenario_id", RELAYED)
def test_a_relayed_responses_answer_passes(mock: tuple[str, MockControl], scenario_id: str) -> None:
    url, control = mock
    scenario = _library()[scenario_id]
    profile, skip = choose_profile(scenario, CLIENTS["responses"], ())
    assert skip is None, skip
    run = play(serve_as(scenario, DIALECTS["responses"]), settings=RunSettings(proxy_url=url + "/v1", timeout=PATIENT_TIMEOUT),
               mock=control, profile=profile)
    assert run.failures == [], [f"{a.label}: {f}" for a, f in run.failures]
    exchange = run.attempts[0].exchange
    assert isinstance(exchange, Exchange) and exchange.upstream[-1].path == "/v1/responses"
    assert "input" in exchange.request_body and "messages" not in exchange.request_body


def test_a_case_without_an_openai_client_is_not_played_as_responses() -> None:
    library = load_library()
    anthropic = next(s for s in library if s.client.profile.name == "anthropic")
    assert "not meaningful under client profile responses" in (choose_profile(anthropic, CLIENTS["responses"], ())[1] or "")
    raw = next(s for s in library if s.client.raw_body is not None and CLIENTS["openai"] in s.client.profiles)
    assert "raw body" in (choose_profile(raw, CLIENTS["responses"], ())[1] or "")


def test_chat_request_said_as_responses() -> None:
    body = {
        "model": "m", "stream": True, "user": "u", "max_tokens": 9, "tool_choice": {"type": "function",
                                                                                   "function": {"name": "read"}},
        "tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}],
        "stream_options": {"include_usage": True},
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": "Reading.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"p": 1}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }
    assert chat_to_responses(body) == {
        "model": "m", "stream": True, "user": "u", "max_output_tokens": 9,
        "tool_choice": {"type": "function", "name": "read"},
        "tools": [{"type": "function", "name": "read", "parameters": {"type": "object"}}],
        "input": [
            {"type": "message", "role": "system", "content": "be brief"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "message", "role": "assistant", "content": "Reading."},
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"p": 1}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        ],
    }


def test_the_plugin_plays_a_responses_client_with_the_bundled_proxy(pytester: pytest.Pytester) -> None:
    """``--conformance-client-profile responses --conformance-upstream-dialect responses`` with the
    bundled reference proxy: every case passes, with every rule enforced, and the report names the pair."""
    upstream = "responses"
    import json
    import shutil
    from pathlib import Path

    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    library = _library()
    for scenario_id in ("hermes-hermes.text-around", "plain-native-parallel", "faults-openai-drop-mid-event"):
        source = library[scenario_id].path
        assert source is not None
        (pytester.path / "scenarios" / "x").mkdir(parents=True, exist_ok=True)
        shutil.copy(source, pytester.path / "scenarios" / "x" / Path(source).name)
    report = pytester.path / "r.json"
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(pytester.path / "scenarios"),
                                "--conformance-client-profile", "responses", "--conformance-upstream-dialect", upstream,
                                "--conformance-strict", "--conformance-timeout", str(PATIENT_TIMEOUT),
                                "--conformance-report-json", str(report), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    data = json.loads(report.read_text())
    assert [(s["outcome"], s["profile"], s["upstream"]) for s in data["scenarios"]] == [("passed", "responses",
                                                                                       upstream)] * 3


def test_re_chunked_variants_of_a_responses_backend_pass_relayed(mock: tuple[str, MockControl]) -> None:
    """Re-chunking cuts the Responses events as the mock writes them (``harness.core.frames.rechunk``)."""
    url, control = mock
    scenario = serve_as(_library()["plain-native-parallel"], DIALECTS["responses"])
    run = play(scenario, settings=RunSettings(proxy_url=url + "/v1", timeout=PATIENT_TIMEOUT, rechunk=3, seed=7),
               mock=control, profile=CLIENTS["responses"])
    assert [a.kind for a in run.attempts].count("rechunk") == 3
    assert run.failures == [], [f"{a.label}: {f}" for a, f in run.failures]
