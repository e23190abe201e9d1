"""The reference proxy end to end: real uvicorn servers, the mock backend as upstream,
the official ``openai`` and ``anthropic`` SDKs (and raw HTTP where the bytes matter) as
the clients.

Every scenario of the bundled library runs through the proxy, streaming and not,
under each client profile it is meaningful for, and must give what its ``expect``
says: calls, content, finish reason, what reached the upstream.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from support.chat_stream import check_and_fold, parse_sse
from support.library import load_library
from support.messages_stream import check_and_fold as check_and_fold_messages
from support.proxy_rig import Proxy, Rig, request_body, rig  # noqa: F401  (rig: the module's servers)
from support.sdk_http import anthropic_sdk

from harness.core.dialects.clients import ClientProfile
from harness.core.dialects.frames import RawFrame
from harness.core.dialects.script import natural_reason
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.compare import content_equal, json_equal
from harness.judge.markup import DEFAULT_MARKERS, find_leaks
from harness.judge.readers.xml_calls import parse_xml_calls, tool_vocabulary, value_matches
from harness.judge.rules.up import check_assertion
from harness.run.servers import bind_socket
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig

LIBRARY = load_library()
OPENAI_PROFILES = ("openai", "xml-client")  # clients of the chat-completions API
SERVED_PROFILES = (*OPENAI_PROFILES, "anthropic")  # and of the Messages API


def plain_case(s: Scenario) -> bool:
    """A case whose client sends its request as is and expects one answer (no raw
    frames, upstream faults, malformed client bodies, expected errors or several
    choices): the SDK can play it and ``expect`` says everything about the answer."""
    client = s.client
    return (
        not any(isinstance(f, RawFrame) for f in s.backend.frames)
        and getattr(s.backend, "fault", None) is None
        and getattr(client, "raw_body", None) is None
        and not getattr(client, "truncate_body", False)
        and getattr(client, "pad_bytes", None) is None
        and getattr(s.expect, "error", None) is None
        and s.client.request.get("n", 1) == 1  # several choices: the harness judges each (ISO-005)
    )


Case = tuple[Scenario, ClientProfile, bool]  # scenario, client profile, whether the client streams


def runs(scenarios: list[Scenario], *, every_profile: bool, served: tuple[str, ...] = SERVED_PROFILES) -> list[Case]:
    """Each scenario under its own profile (or every served profile it is meaningful
    for), in the form its request asks and, when the scenario allows, the other too."""
    out: list[Case] = []
    for s in scenarios:
        forms = [s.streams, not s.streams] if s.stream_equivalence else [s.streams]
        profiles = s.client.profiles if every_profile else (s.client.profile,)
        out += [(s, p, stream) for p in profiles if p.name in served for stream in forms]
    return out


CASES = runs([s for s in LIBRARY if plain_case(s) and s.backend.dialect.name == "openai"], every_profile=True,
             served=OPENAI_PROFILES)
ANTHROPIC_CASES = runs([s for s in LIBRARY if plain_case(s) and s.backend.dialect.name == "anthropic"], every_profile=True,
                       served=("anthropic",))
# Wire-level cases say nothing profile-specific: their own profile is enough. A case only a translating proxy
# can be played on (its backend cannot be said in its client's API) is the dialect-pair tests' (test_plugin).
SPECIAL = runs([s for s in LIBRARY if not plain_case(s)
                and natural_reason(s, s.client.profile.answers) is None], every_profile=False)


def needed_features(scenario: Scenario, profile: ClientProfile) -> set[str]:
    needed = set(scenario.requires)
    for assertion in scenario.expect.upstream:
        needed |= set(assertion.requires)
    needed |= set(profile.features)
    return needed


def choose_proxy(rig: Rig, scenario: Scenario, profile: ClientProfile) -> Proxy:
    """The proxy configuration that has what the case needs (assertion-level features
    are wanted, not required: without them those assertions are simply not active)."""
    proxy = rig.proxy_for(needed_features(scenario, profile))
    if proxy is not None:
        return proxy
    required = set(scenario.requires) | set(profile.features)
    proxy = rig.proxy_for(required)
    if proxy is None:
        missing = sorted(required - rig.full.config.features())
        pytest.skip(f"the reference proxy does not provide feature(s) {', '.join(missing)}")
    return proxy


def client_headers(scenario: Scenario, profile: ClientProfile) -> dict[str, str]:
    return {**profile.headers, **scenario.client.headers}


@dataclass
class Answer:
    content: str
    calls: list[tuple[str, Any]]
    finish: str | None


def ask_sdk(client: openai.OpenAI, scenario: Scenario, profile: ClientProfile, stream: bool, nonce: str) -> Answer:
    """Send the case through the official SDK and read its answer the SDK's way."""
    body = request_body(scenario, stream, nonce)
    extra = {k: v for k, v in body.items() if k not in ("model", "messages", "stream")}
    headers = {**client_headers(scenario, profile), NONCE_HEADER: nonce}
    if stream:
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        with client.chat.completions.create(
            model=body["model"], messages=body["messages"], stream=True, extra_body=extra, extra_headers=headers
        ) as chunks:
            for chunk in chunks:
                state.handle_chunk(chunk)
        # The snapshot, not get_final_completion(): the latter refuses length-cut answers.
        result: Any = state.current_completion_snapshot
    else:
        result = client.chat.completions.create(
            model=body["model"], messages=body["messages"], extra_body=extra, extra_headers=headers
        )
    choice = result.choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or ()]
    return Answer(choice.message.content or "", calls, choice.finish_reason)


def check_answer(scenario: Scenario, profile: ClientProfile, answer: Answer) -> None:
    expect = scenario.expect
    content = answer.content
    if profile.reads_xml:
        assert answer.calls == [], "an XML-reading client gets no tool_calls"
        parsed = parse_xml_calls(content, tool_vocabulary(scenario.client.request))
        assert all(c.complete for c in parsed.calls)
        got = [(c.name, dict(c.params)) for c in parsed.calls]
        assert [n for n, _ in got] == [c.name for c in expect.tool_calls], content
        for (_, params), want in zip(got, expect.tool_calls):
            assert set(params) == set(want.arguments), content
            assert all(value_matches(want.arguments[k], params[k]) for k in want.arguments), (params, want.arguments)
        content = parsed.outside
        if expect.finish_reason is not None:
            want_finish = "stop" if expect.finish_reason == "tool_calls" else expect.finish_reason
            assert answer.finish == want_finish
    else:
        assert [n for n, _ in answer.calls] == [c.name for c in expect.tool_calls]
        for (_, arguments), want in zip(answer.calls, expect.tool_calls):
            assert json_equal(arguments, dict(want.arguments)), (arguments, want.arguments)
        if expect.finish_reason is not None:
            assert answer.finish == expect.finish_reason
    if expect.content is not None:
        assert content_equal(expect.content, content, exact=expect.content_exact,
                             lines_are_layout=profile.reads_xml), repr(content)
    allowed = expect.content or ""  # the part of the expected answer that may hold markup
    if expect.content_regex is not None:
        match = re.search(expect.content_regex, content, re.DOTALL)
        assert match, repr(content[:500])
        allowed = match.group(0)
    leaks = find_leaks(content, (*DEFAULT_MARKERS, *expect.markers), allowed=allowed)
    assert not leaks, leaks


def check_upstream(rig: Rig, proxy: Proxy, scenario: Scenario, nonce: str, sent: Mapping[str, Any]) -> Any:
    """Check what reached the upstream; returns the body of the last request (or None)."""
    recorded = rig.mock.recorded(nonce)
    expect = scenario.expect
    if expect.upstream_requests is not None:
        assert len(recorded) == expect.upstream_requests
    elif scenario.backend.strict:  # a request the strict template refused is asked again, laid out as it takes it
        assert len(recorded) in (1, 2)
    else:
        assert len(recorded) == 1
    active = [a for a in expect.upstream if set(a.requires) <= proxy.config.features()]
    if not recorded:
        assert not active, "no request reached the upstream, so its assertions cannot hold"
        return None
    for assertion in active:
        assert check_assertion(assertion, recorded[-1].body, sent) is None
    return recorded[-1].body


def case_id(case: Case) -> str:
    return f"{case[0].id}[{case[1].name}-{'stream' if case[2] else 'whole'}]"


def check_chunk_sequence(raw: bytes, scenario: Scenario, profile: ClientProfile, body: Mapping[str, Any], answer: Answer) -> None:
    """The bytes the SDK read: role first, whole start deltas, argument deltas with index
    and arguments only, one finish, usage exactly when asked, ``[DONE]`` last, and the
    same answer the SDK assembled."""
    folded = check_and_fold(parse_sse(raw.decode("utf-8")))
    assert folded.done and folded.error is None and folded.finish is not None
    options = body.get("stream_options")
    asked = isinstance(options, dict) and options.get("include_usage") is True
    assert (folded.usage is not None) == asked
    assert (folded.content, folded.calls, folded.finish) == (answer.content, answer.calls, answer.finish)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_scenario(rig: Rig, case: Case) -> None:
    scenario, profile, stream = case
    proxy = choose_proxy(rig, scenario, profile)
    nonce = rig.mock.arm(scenario)
    try:
        body = request_body(scenario, stream, nonce)
        answer = ask_sdk(rig.sdk(proxy), scenario, profile, stream, nonce)
        if stream:
            check_chunk_sequence(bytes(rig.recorder.raw), scenario, profile, body, answer)
        check_answer(scenario, profile, answer)
        recorded = check_upstream(rig, proxy, scenario, nonce, body)
    finally:
        rig.mock.disarm(nonce)
    if recorded is not None:  # the upstream is asked in the client's form
        assert recorded.get("stream", False) is stream
        assert recorded.get("stream_options") == body.get("stream_options")


@pytest.mark.parametrize("case", SPECIAL, ids=[case_id(c) for c in SPECIAL])
def test_special_scenario_judged_by_the_harness(rig: Rig, case: Case) -> None:
    """Cases about the wire itself (hand-written frames, upstream faults, malformed
    client bodies, expected errors) are judged by the harness's own rules, which know
    how to send and read them."""
    from harness.judge.rules import Options, evaluate
    from harness.run.proxy_client import run_exchange

    scenario, profile, stream = case
    proxy = choose_proxy(rig, scenario, profile)
    exchange = run_exchange(
        scenario,
        proxy_url=f"{proxy.url}/v1",
        mock=rig.mock,
        stream=stream,
        profile=profile,
        model=None,
        proxy_headers={},
        timeout=15,
    )
    failures = evaluate(scenario, exchange, Options(profile=profile, features=proxy.config.features()))
    assert not failures, "\n".join(str(f) for f in failures)


# --------------------------------------------------------------------------- Messages clients

#: The SDK warns about the scenarios' model names; irrelevant to a proxy test.
sdk_model_warnings = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

#: The Messages parameters the SDK's ``create``/``stream`` take by name; the rest go as extra_body.
MESSAGES_PARAMS = frozenset(
    {"model", "max_tokens", "messages", "system", "tools", "tool_choice", "metadata", "temperature", "top_p", "top_k",
     "stop_sequences"}
)


def ask_anthropic_sdk(client: anthropic.Anthropic, scenario: Scenario, profile: ClientProfile, stream: bool, nonce: str) -> Answer:
    """Send the case through the official ``anthropic`` SDK; the answer is its final message
    (streaming: what ``messages.stream(...)`` accumulated)."""
    body = request_body(scenario, stream, nonce)
    params = {k: v for k, v in body.items() if k in MESSAGES_PARAMS}
    extra = {k: v for k, v in body.items() if k not in MESSAGES_PARAMS and k != "stream"}
    headers = {**client_headers(scenario, profile), NONCE_HEADER: nonce}
    if stream:
        with client.messages.stream(**params, extra_body=extra, extra_headers=headers) as events:
            for _ in events:
                pass
            result = events.get_final_message()
    else:
        result = client.messages.create(**params, extra_body=extra, extra_headers=headers)
    text = "".join(block.text for block in result.content if block.type == "text")
    calls = [(block.name, block.input) for block in result.content if block.type == "tool_use"]
    assert all(block.id.startswith("toolu_") for block in result.content if block.type == "tool_use")
    assert not any(block.type == "text" and not block.text.strip() for block in result.content)
    return Answer(text, calls, result.stop_reason)


@sdk_model_warnings
@pytest.mark.parametrize("case", ANTHROPIC_CASES, ids=[case_id(c) for c in ANTHROPIC_CASES])
def test_messages_scenario(rig: Rig, case: Case) -> None:
    scenario, profile, stream = case
    proxy = choose_proxy(rig, scenario, profile)
    nonce = rig.mock.arm(scenario)
    try:
        body = request_body(scenario, stream, nonce)
        answer = ask_anthropic_sdk(rig.anthropic_sdk(proxy), scenario, profile, stream, nonce)
        if stream:  # the bytes the SDK read follow the Messages grammar and fold to the same answer
            folded = check_and_fold_messages(bytes(rig.recorder.raw).decode("utf-8"))
            assert (folded.text, folded.calls, folded.stop_reason) == (answer.content, answer.calls, answer.finish)
            assert folded.stopped and folded.error is None
        check_answer(scenario, profile, answer)
        recorded = check_upstream(rig, proxy, scenario, nonce, body)
    finally:
        rig.mock.disarm(nonce)
    if recorded is not None:  # the upstream is asked in the client's form
        assert recorded.get("stream", False) is stream


@sdk_model_warnings
def test_tool_choice_reaches_the_upstream_emulated(rig: Rig) -> None:
    """What the upstream gets for each tool_choice: no tools for none; the tools and a
    directive in the last user turn (naming the tool for type tool), without tool_choice."""
    by_id = {s.id: s for s in LIBRARY}
    for scenario_id, tools_sent, named in [
        ("anthropic-tool-choice-none", False, None),
        ("anthropic-tool-choice-any", True, None),
        ("anthropic-tool-choice-tool", True, "Read"),
    ]:
        scenario = by_id[scenario_id]
        nonce = rig.mock.arm(scenario)
        try:
            ask_anthropic_sdk(rig.anthropic_sdk(rig.default), scenario, scenario.client.profile, True, nonce)
            (recorded,) = rig.mock.recorded(nonce)
        finally:
            rig.mock.disarm(nonce)
        upstream, sent = recorded.body, request_body(scenario, True, nonce)
        assert "tool_choice" not in upstream and ("tools" in upstream) is tools_sent
        assert upstream["messages"][:-1] == sent["messages"][:-1]
        last = json.dumps(upstream["messages"][-1])
        if tools_sent:
            assert last != json.dumps(sent["messages"][-1]) and "tool" in last
            assert named is None or f"`{named}`" in last
        else:
            assert upstream["messages"][-1] == sent["messages"][-1]


@sdk_model_warnings
def test_messages_errors_reach_the_sdk_as_status_errors(rig: Rig) -> None:
    """An invalid request and a wrong method on /v1/messages answer in the Messages error shape."""
    client = rig.anthropic_sdk(rig.default)
    narrator: Any = [{"role": "narrator", "content": "x"}]
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(model="m", max_tokens=5, messages=narrator)
    body: Any = raised.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "messages.0.role" in body["error"]["message"]
    answer = rig.http.get(f"{rig.default.url}/v1/messages")
    assert answer.status_code == 405 and answer.json()["type"] == "error"


def inline_messages(frames: list[Any], *, stream_backend: Any = "auto", finish: str = "end_turn") -> Scenario:
    """A Messages case written in place (a backend that may answer in the other form)."""
    tool = {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}}}
    return parse_scenario(
        {
            "id": "inline-messages",
            "title": "inline Messages case",
            "source": "synthetic",
            "backend": {"dialect": "anthropic", "frames": frames, "finish_reason": finish, "stream": stream_backend},
            "client": {
                "profile": "anthropic",
                "request": {"model": "m", "max_tokens": 64, "stream": True, "tools": [tool],
                            "messages": [{"role": "user", "content": "go"}]},
            },
            "expect": {},
        }
    )


LEAKED_READ = ["Here: ", '<invoke name="Read">\n<parameter name="file_path">x.py</parameter>\n</invoke>']


@sdk_model_warnings
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_messages_upstream_answers_in_the_other_form(rig: Rig, stream: bool) -> None:
    """A Messages backend that always streams, or never does, still gives the client the form it asked for."""
    scenario = inline_messages(LEAKED_READ, stream_backend=not stream)
    nonce = rig.mock.arm(scenario)
    try:
        answer = ask_anthropic_sdk(rig.anthropic_sdk(rig.default), scenario, scenario.client.profile, stream, nonce)
        (recorded,) = rig.mock.recorded(nonce)
    finally:
        rig.mock.disarm(nonce)
    assert recorded.body.get("stream", False) is stream
    assert (answer.content.strip(), answer.calls, answer.finish) == ("Here:", [("Read", {"file_path": "x.py"})], "tool_use")


@pytest.mark.parametrize(
    ("api_key", "expected"),
    [(None, {"x-api-key": "sk-client", "authorization": "Bearer client"}), ("sk-upstream", {"x-api-key": "sk-upstream"})],
    ids=["client-credentials", "configured-key"],
)
def test_messages_headers_forwarded(rig: Rig, servers: Any, api_key: str | None, expected: dict[str, str]) -> None:
    proxy = servers(create_app(dataclasses.replace(rig.default.config, api_key=api_key)))
    scenario = inline_messages(["ok"])
    nonce = rig.mock.arm(scenario)
    headers = {"x-api-key": "sk-client", "Authorization": "Bearer client", "anthropic-version": "2023-06-01",
               "anthropic-beta": "fine-grained-tool-streaming-2025-05-14", "Connection": "keep-alive, x-hop",
               "X-Hop": "1", "X-Custom": "kept", NONCE_HEADER: nonce}
    try:
        response = rig.http.post(f"{proxy.url}/messages", json=request_body(scenario, False, nonce), headers=headers)
        (recorded,) = rig.mock.recorded(nonce)
    finally:
        rig.mock.disarm(nonce)
    assert response.status_code == 200 and response.json()["content"] == [{"type": "text", "text": "ok"}]
    assert recorded.path == "/v1/messages"
    got = {k: v for k, v in recorded.headers.items() if k in ("x-api-key", "authorization")}
    assert got == expected
    assert recorded.headers["anthropic-version"] == "2023-06-01" and recorded.headers["x-custom"] == "kept"
    assert recorded.headers["anthropic-beta"] == "fine-grained-tool-streaming-2025-05-14"
    assert "x-hop" not in recorded.headers


@sdk_model_warnings
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_messages_upstream_down_is_502(servers: Any, stream: bool) -> None:
    sock = bind_socket()
    port = sock.getsockname()[1]
    sock.close()
    config = ProxyConfig(upstream=f"http://127.0.0.1:{port}/v1", connect_timeout=2, log_level="warning")
    proxy = servers(create_app(config))
    client = anthropic_sdk(base_url=proxy.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}], stream=stream)
    assert info.value.status_code == 502
    body = info.value.response.json()
    assert body["type"] == "error" and body["error"]["type"] == "api_error" and body["error"]["message"]
