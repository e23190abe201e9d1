"""The reference proxy's ``/v1/responses``, end to end: real uvicorn servers on sockets
(the mock backend and the proxy), the official ``openai`` SDK's Responses client, and
the harness playing library cases under the ``responses`` client profile, in front of a
Chat Completions upstream and of a Responses upstream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from support import PATIENT_TIMEOUT, WHOLE_LIBRARY_FEATURES
from support.library import load_library
from support.sdk_http import openai_sdk

from harness.core.dialects import DIALECTS, NotPortable
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.script import serve_as
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.runner import play
from harness.run.servers import serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig
from reference_proxy.responses_streams import ChunksAsResponses

# The reference proxy's upstream_dialect setting for each upstream the mock serves.
UPSTREAMS = {"openai": "openai", "anthropic": "anthropic", "responses": "native"}
TOOLS = [{"type": "function", "name": "get_weather", "description": "Weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, MockControl, dict[str, str]]]:
    """One mock, and one proxy per upstream dialect in front of it."""
    with serve(create_mock()) as mock, MockControl(mock.url) as control:
        proxies: dict[str, str] = {}
        stack = []
        try:
            for upstream, setting in UPSTREAMS.items():
                config = ProxyConfig(upstream=f"{mock.url}/v1", log_level="warning", upstream_dialect=setting)
                server = serve(create_app(config))
                proxies[upstream] = server.__enter__().url
                stack.append(server)
            yield mock.url, control, proxies
        finally:
            for server in reversed(stack):
                server.__exit__(None, None, None)


def hermes_scenario(stream: bool | str = "auto") -> Scenario:
    """A Qwen/Hermes-style backend that writes its call as text."""
    return parse_scenario({
        "id": "responses-hermes", "title": "a Hermes call in the text", "source": "synthetic",
        "backend": {"dialect": "openai", "stream": stream, "frames": [
            "Let me check.\n<tool_call>\n", '{"name": "get_weather", "argu', 'ments": {"city": "Paris"}}',
            "\n</tool_call>"]},
        "client": {"request": {"model": "qwen", "messages": [{"role": "user", "content": "weather?"}],
                               "tools": [{"type": "function", "function": {k: v for k, v in TOOLS[0].items()
                                                                           if k != "type"}}]}},
        "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    })


def sdk(proxy: str, nonce: str) -> openai.OpenAI:
    return openai_sdk(base_url=proxy + "/v1", api_key="x", default_headers={NONCE_HEADER: nonce}, max_retries=0)


@pytest.mark.parametrize("upstream", list(UPSTREAMS))
def test_a_hermes_call_in_the_text_reaches_the_responses_client_as_a_function_call(
        servers: tuple[str, MockControl, dict[str, str]], upstream: str) -> None:
    _, control, proxies = servers
    scenario = serve_as(hermes_scenario(), DIALECTS[upstream])
    request: dict[str, Any] = {"model": "qwen", "input": "weather in Paris?", "tools": TOOLS}
    with sdk(proxies[upstream], control.arm(scenario)).responses.stream(**request) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert calls[0].call_id and "<tool_call>" not in final.output_text
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == len(final.output)

    whole = sdk(proxies[upstream], control.arm(scenario)).responses.create(**request)
    assert [(i.name, json.loads(i.arguments)) for i in whole.output if i.type == "function_call"] == [
        ("get_weather", {"city": "Paris"})]


def test_the_follow_up_turn_reaches_a_chat_upstream_as_a_tool_message(
        servers: tuple[str, MockControl, dict[str, str]]) -> None:
    _, control, proxies = servers
    scenario = hermes_scenario()
    nonce = control.arm(scenario)
    sdk(proxies["openai"], nonce).responses.create(model="qwen", tools=TOOLS, input=[  # type: ignore[arg-type]
        {"role": "user", "content": "weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ])
    (sent,) = control.recorded(nonce)
    assert sent.path == "/v1/chat/completions" and sent.body is not None
    assert sent.body["messages"][1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]


def test_call_arguments_that_resume_after_another_call_or_text_all_reach_the_client(
        servers: tuple[str, MockControl, dict[str, str]]) -> None:
    """A chat upstream may go on with a call after the next one began, or after text: every
    fragment reaches the Responses client, in the item of the call it belongs to."""
    _, control, proxies = servers
    frames: list[Any] = [
        {"tool_call": {"index": 0, "id": "call_a", "type": "function", "name": "get_weather", "arguments": '{"ci'}},
        {"tool_call": {"index": 1, "id": "call_b", "type": "function", "name": "get_weather", "arguments": '{"city"'}},
        {"tool_call": {"index": 0, "arguments": 'ty": "Paris"}'}},
        "Checking both.",
        {"tool_call": {"index": 1, "arguments": ': "Oslo"}'}},
    ]
    scenario = parse_scenario({
        "id": "responses-interleaved", "title": "interleaved native calls", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": frames, "finish_reason": "tool_calls"},
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "weather?"}],
                               "tools": [{"type": "function", "function": {k: v for k, v in TOOLS[0].items()
                                                                           if k != "type"}}]}},
        "expect": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}},
                                  {"name": "get_weather", "arguments": {"city": "Oslo"}}]},
    })
    request: dict[str, Any] = {"model": "m", "input": "weather?", "tools": TOOLS}
    with sdk(proxies["openai"], control.arm(scenario)).responses.stream(**request) as stream:
        deltas = [(event.output_index, event.delta) for event in stream
                  if event.type == "response.function_call_arguments.delta"]
        final = stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [json.loads(item.arguments) for item in calls] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert len({item.call_id for item in calls}) == 2
    for index, item in enumerate(final.output):
        if item.type == "function_call":  # every fragment streamed to its own item
            assert "".join(d for i, d in deltas if i == index) == item.arguments
    assert final.output_text == "Checking both."


def test_the_writer_keeps_every_call_open_until_the_answer_ends() -> None:
    """Whatever order the chat chunks name their calls in (a call resumed after the next one
    began, or after text), the Responses writer puts every fragment in its call's item."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "model": "m"})

    def call(index: int, arguments: str, name: str | None = None) -> dict[str, Any]:
        fn = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
        return {"tool_calls": [{"index": index, **({"id": f"call_{index}"} if name else {}), "function": fn}]}

    writer = ChunksAsResponses({"model": "m", "input": "weather?"}, "m")
    chunks = [call(0, '{"ci', "get_weather"), call(1, '{"city"', "get_weather"), call(0, 'ty": "Paris"}'),
              {"content": "Checking both."}, call(1, ': "Oslo"}')]
    wire = "".join(writer.read(chunk(c)) for c in chunks) + writer.read(chunk({}, "tool_calls")) + writer.read("[DONE]")
    events = [json.loads(line[6:]) for line in wire.splitlines() if line.startswith("data: ")]
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed"
    assert [(item["type"], item.get("arguments")) for item in final["output"]] == [
        ("function_call", '{"city": "Paris"}'), ("function_call", '{"city": "Oslo"}'), ("message", None)]
    numbers = [e["sequence_number"] for e in events]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)


# The families played in front of each upstream: rescue where the text arrives unchanged, translation and
# faults where the proxy rewrites the upstream's events (a sample: the whole library is played with
# --conformance-client-profile responses, docs/harness.md).
FAMILIES = {"openai": ("hermes", "plain", "faults"), "anthropic": ("plain",), "responses": ("hermes", "plain")}


def _playable(upstream: str) -> list[Scenario]:
    """The cases of ``FAMILIES`` a Responses client can play in front of ``upstream``."""
    out = []
    for s in load_library():
        if s.family not in FAMILIES[upstream]:
            continue
        if choose_profile(s, CLIENTS["responses"], ())[1] is not None:
            continue
        try:
            out.append(serve_as(s, DIALECTS[upstream]))
        except NotPortable:
            continue
    return out


@pytest.mark.parametrize("upstream", list(UPSTREAMS))
def test_library_cases_pass_as_a_responses_client(servers: tuple[str, MockControl, dict[str, str]],
                                                  upstream: str) -> None:
    _, control, proxies = servers
    cases = _playable(upstream)
    assert len(cases) >= 10
    failed = {}
    for scenario in cases:
        run = play(scenario, settings=RunSettings(proxy_url=proxies[upstream] + "/v1", timeout=PATIENT_TIMEOUT),
                   mock=control, profile=CLIENTS["responses"])
        if run.failures:
            failed[scenario.id] = [str(f) for _, f in run.failures]
    assert failed == {}


def test_a_correct_but_different_responses_proxy_passes(servers: tuple[str, MockControl, dict[str, str]]) -> None:
    """Other item ids, extra event fields and one delta per call's arguments fail nothing,
    not even with --strict, on the cases of the families a translator touches most (an HTTP error
    has no events to rewrite)."""
    from mutants.responses import CORRECT_BUT_DIFFERENT_RESPONSES as different

    mock_url, control, _ = servers
    features = WHOLE_LIBRARY_FEATURES
    cases = [s for s in load_library() if (s.family in ("plain", "hermes") or s.id.startswith("faults-openai-drop"))
             and choose_profile(s, CLIENTS["responses"], features)[1] is None]
    assert len(cases) >= 25
    with serve(different.app(f"{mock_url}/v1")) as proxy:
        settings = RunSettings(proxy_url=proxy.url + "/v1", features=features, strict=True, timeout=PATIENT_TIMEOUT)
        failed = {s.id: run.failed_rules for s in cases
                  if (run := play(s, settings=settings, mock=control, profile=CLIENTS["responses"])).failures}
    assert failed == {}
