"""The OpenAI-dialect mock backend, driven over real sockets by httpx and the official SDK.

Expectations are derived from each scenario's frames, never from the mock's code:
what a frame says is what must arrive, as one SSE event, in order.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import openai
import pytest
from click.testing import CliRunner
from support.mock_chat import (
    check_answer, check_stream, expected_delta, expected_message, expected_usage, make_scenario, post, sdk,
    vllm_finish_choice,
)
from support.mock_server import (  # noqa: F401  (fresh, shared: fixtures)
    Mock, answer_model, compact, fresh, http_client, read_until_closed, shared,
)
from support.servers import ServeFn

from harness.core.dialects.frames import ContentFrame, ToolCallFrame
from harness.core.errors import MockError
from harness.core.nonce import NONCE_HEADER, find_nonce, new_nonce, nonce_line, place_nonce
from harness.core.replay.wire import DEFAULT_MODEL
from harness.core.scenario.loading import bundled_scenarios_dir, parse_scenario, validate_paths
from harness.core.scenario.model import Scenario
from mock_backends.app import RUN_HEADER, SELECTED_BY_HEADER, create_app
from mock_backends.cli import mock as mock_command
from mock_backends.control import MockControl



# --------------------------------------------------------------------------- streams: frames exactly as written

STREAM_CASES: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "content-split-tags": (
        ["<to", 'ols>{"name": "get_weather", ', '"arguments": {"city": "Paris"}}</tools', ">"],
        {"usage": {"prompt_tokens": 120, "completion_tokens": 24, "total_tokens": 144}},
    ),
    "empty-and-unicode-content": (["", "héllo ", "wörld ✓ 😀", "a\nb\r\n\"q\"\\", "\u2028"], {}),
    "native-tool-calls": (
        [
            "Let me check. ",
            {"tool_call": {"index": 0, "id": "call_a1", "type": "function", "name": "get_weather"}},
            {"tool_call": {"index": 0, "arguments": '{"city": '}},
            {"tool_call": {"index": 0, "arguments": '"Paris"}'}},
            {"tool_call": {"index": 1, "id": "call_b2", "type": "function", "name": "read_file",
                           "arguments": '{"path": "ä.txt"}'}},
        ],
        {"finish_reason": "tool_calls", "usage": {"prompt_tokens": 9, "completion_tokens": 3}},
    ),
    "tool-call-partial-fields": (
        [
            {"tool_call": {"index": 0, "name": "get_weather"}},
            {"tool_call": {"index": 0}},
            {"tool_call": {"index": 0, "arguments": "{}"}},
        ],
        {"finish_reason": "tool_calls"},
    ),
    "raw-frames-verbatim": (
        [
            "before ",
            {"raw": ": keep-alive\n\n"},
            {"raw": 'data: {"choices":[]}\n\n'},
            {"raw": 'data: {"broken'},
            "after",
        ],
        {},
    ),
    "backend-model-and-delays": (
        [{"content": "slow ", "delay_ms": 3}, "steady"],
        {"model": "served/Qwen2.5-7B", "delay_ms": 2, "finish_reason": "length"},
    ),
    "no-frames": ([], {}),
}

SDK_CASES = [k for k, (frames, _) in STREAM_CASES.items() if not any(isinstance(f, dict) and "raw" in f for f in frames)]


@pytest.mark.parametrize("include_usage", [None, False, True], ids=["no-options", "usage-false", "usage-true"])
@pytest.mark.parametrize("case", list(STREAM_CASES))
def test_stream_frames_arrive_exactly(shared: Mock, case: str, include_usage: bool | None) -> None:
    url, control, http = shared
    frames, backend = STREAM_CASES[case]
    scenario = make_scenario(f"stream-{case}", frames, **backend)
    nonce = control.arm(scenario)
    body = dict(scenario.client.request)
    if include_usage is not None:
        body["stream_options"] = {"include_usage": include_usage}
    response = post(http, url, body, nonce)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    check_stream(response.content, scenario, model=answer_model(scenario, body), include_usage=bool(include_usage))


@pytest.mark.parametrize("include_usage", [False, True])
@pytest.mark.parametrize("case", SDK_CASES)
def test_stream_through_openai_sdk(shared: Mock, case: str, include_usage: bool) -> None:
    url, control, http = shared
    frames, backend = STREAM_CASES[case]
    scenario = make_scenario(f"sdk-{case}", frames, **backend)
    nonce = control.arm(scenario)
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(sdk(url, nonce).chat.completions.create(**scenario.client.request, **extra))
    frames_sent = scenario.backend.frames
    assert len(chunks) == 2 + len(frames_sent) + include_usage
    assert chunks[0].choices[0].delta.role == "assistant"
    for chunk, frame in zip(chunks[1:], frames_sent):
        delta = chunk.choices[0].delta
        if isinstance(frame, ContentFrame):
            assert delta.content == frame.content and delta.tool_calls is None
        else:
            assert isinstance(frame, ToolCallFrame)
            assert delta.tool_calls is not None and len(delta.tool_calls) == 1
            call = delta.tool_calls[0]
            assert (call.index, call.id, call.type) == (frame.index, frame.id, frame.type)
            if frame.name is None and frame.arguments is None:
                assert call.function is None
            else:
                assert call.function is not None
                assert (call.function.name, call.function.arguments) == (frame.name, frame.arguments)
    finish = chunks[1 + len(frames_sent)]
    assert finish.choices[0].finish_reason == scenario.backend.finish_reason
    assert finish.model == answer_model(scenario, scenario.client.request)
    if include_usage:
        assert chunks[-1].choices == [] and chunks[-1].usage is not None
        assert chunks[-1].usage.model_dump(include={"prompt_tokens", "completion_tokens", "total_tokens"}) == (
            expected_usage(scenario.backend)
        )
    else:
        assert all(c.usage is None for c in chunks)


# --------------------------------------------------------------------------- non-streaming and forced modes


@pytest.mark.parametrize("case", list(STREAM_CASES))
def test_non_streaming_joins_frames(shared: Mock, case: str) -> None:
    url, control, http = shared
    frames, backend = STREAM_CASES[case]
    scenario = make_scenario(f"json-{case}", frames, request={"stream": False}, **backend)
    nonce = control.arm(scenario)
    response = post(http, url, scenario.client.request, nonce)
    check_answer(response, scenario, scenario.client.request)

    completion = sdk(url, nonce).chat.completions.create(**scenario.client.request)
    message = expected_message(scenario.backend)
    assert completion.choices[0].message.content == message["content"]
    got_calls = [
        (c.type, c.function.name, c.function.arguments)
        for c in completion.choices[0].message.tool_calls or ()
    ]
    want_calls = [(c["type"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls", ())]
    assert got_calls == want_calls
    assert completion.choices[0].finish_reason == scenario.backend.finish_reason



# --------------------------------------------------------------------------- routes under any prefix


@pytest.mark.parametrize("path", ["/models", "/v1/models", "/x/y/v1/models", "/v1/models/"])
def test_models_list(shared: Mock, path: str) -> None:
    url, control, http = shared
    control.arm(make_scenario("models", ["x"], request={"model": "client-side-name"}, model="served-name"))
    response = http.get(url + path)
    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "list"
    ids = [m["id"] for m in data["data"]]
    assert {"client-side-name", "served-name", DEFAULT_MODEL} <= set(ids) and len(ids) == len(set(ids))
    assert all(m["object"] == "model" and isinstance(m["created"], int) for m in data["data"])


def assert_openai_error(response: httpx.Response, status: int, code: str, *needles: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "param", "code"} and error["code"] == code
    assert error["type"] == "invalid_request_error"
    message: str = error["message"]
    for needle in needles:
        assert needle in message, (needle, message)
    return message


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/v1/chat/completions", 405, "method_not_allowed"),
        ("POST", "/v1/models", 405, "method_not_allowed"),
        ("POST", "/v1/embeddings", 404, "invalid_route"),
        ("GET", "/", 404, "invalid_route"),
        ("PUT", "/_mock/runs", 404, "invalid_route"),
    ],
)
def test_wrong_routes_answer_openai_errors(shared: Mock, method: str, path: str, status: int,
                                           code: str) -> None:
    url, _, http = shared
    assert_openai_error(http.request(method, url + path), status, code, path)


# --------------------------------------------------------------------------- selection

# What a proxy does to the request on its way upstream: each changes the body or the headers it forwards.
Rewrite = Callable[[dict[str, Any], dict[str, str]], None]


def _user_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "user"]


def _rename_model(body: dict[str, Any], headers: dict[str, str]) -> None:
    body["model"] = "openai:renamed-by-proxy"


def _drop_system(body: dict[str, Any], headers: dict[str, str]) -> None:
    body["messages"] = [m for m in body["messages"] if m["role"] != "system"]


def _inject_system(body: dict[str, Any], headers: dict[str, str]) -> None:
    body["messages"].insert(0, {"role": "system", "content": "injected by the proxy"})


def _rewrite_first_user(body: dict[str, Any], headers: dict[str, str]) -> None:
    _user_turns(body)[0]["content"] = "first turn rewritten by the proxy"


def _rewrite_last_user(body: dict[str, Any], headers: dict[str, str]) -> None:
    _user_turns(body)[-1]["content"] = "last turn rewritten by the proxy"


def _drop_user_field(body: dict[str, Any], headers: dict[str, str]) -> None:
    del body["user"]


def _drop_unknown_headers(body: dict[str, Any], headers: dict[str, str]) -> None:
    del headers[NONCE_HEADER]


def _non_stream(body: dict[str, Any], headers: dict[str, str]) -> None:
    body["stream"] = False


CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    "two-turns": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "First question."},
        {"role": "assistant", "content": "First answer."},
        {"role": "user", "content": "Last question."},
    ],
    "one-turn": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "The only question."}],
}

# (conversation, what the proxy did after the harness placed the nonce): one copy survives each time
VARIANTS: list[tuple[str, list[Rewrite]]] = [
    ("two-turns", [_drop_unknown_headers, _drop_user_field, _rewrite_last_user, _rename_model]),  # first turn
    ("two-turns", [_drop_unknown_headers, _drop_user_field, _rewrite_first_user, _inject_system]),  # last turn
    ("two-turns", [_drop_user_field, _rewrite_first_user, _rewrite_last_user, _drop_system]),  # header
    ("two-turns", [_drop_unknown_headers, _rewrite_first_user, _rewrite_last_user, _non_stream]),  # user field
    ("one-turn", [_drop_unknown_headers, _rewrite_last_user, _rename_model, _drop_system]),  # user field
    ("one-turn", [_drop_user_field, _rewrite_first_user, _inject_system, _non_stream]),  # header
    ("one-turn", [_drop_unknown_headers, _drop_user_field, _inject_system, _rename_model]),  # the one turn
    ("one-turn", [_drop_unknown_headers, _drop_user_field, _drop_system, _non_stream]),  # the one turn
]


def _as_the_proxy_forwards(conversation: str, rewrites: list[Rewrite], request: Mapping[str, Any],
                           nonce: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The harness's request for ``nonce``, then the proxy's rewrites of it."""
    body = place_nonce({**request, "messages": CONVERSATIONS[conversation]}, nonce)
    headers = {NONCE_HEADER: nonce}
    placed = (compact(body), dict(headers))
    for rewrite in rewrites:
        rewrite(body, headers)
    assert (compact(body), headers) != placed, "the proxy changed nothing"
    return body, headers


async def test_concurrent_requests_each_get_their_own_run(shared: Mock) -> None:
    url, control, http = shared
    request = {"model": "scenario-model", "stream": True, "messages": CONVERSATIONS["two-turns"]}
    runs = []
    for i in range(10):
        scenario = make_scenario(f"concurrent-{i}", [f"run {i} ", "sends ", f"its own frames ✓{i}"],
                                 request=request, delay_ms=2)
        runs.append((scenario, control.arm(scenario)))
    planned = []
    for n in range(4 * len(VARIANTS)):
        scenario, nonce = runs[n % len(runs)]
        conversation, rewrites = VARIANTS[n % len(VARIANTS)]
        body, headers = _as_the_proxy_forwards(conversation, rewrites, scenario.client.request, nonce)
        assert find_nonce(headers, compact(body)) == nonce, "the case needs one surviving copy"
        planned.append((scenario, nonce, body, headers))

    async with httpx.AsyncClient(timeout=20) as client:
        responses = await asyncio.gather(*(
            client.post(url + "/v1/chat/completions", json=body, headers=headers) for _, _, body, headers in planned
        ))
    for (scenario, nonce, body, _), response in zip(planned, responses):
        check_answer(response, scenario, body)
        assert (response.headers[RUN_HEADER], response.headers[SELECTED_BY_HEADER]) == (nonce, "nonce")
    for scenario, nonce in runs:
        sent = sorted(compact(b) for s, n, b, _ in planned if n == nonce)
        assert sorted(compact(r.body) for r in control.recorded(nonce)) == sent


def test_a_stale_nonce_does_not_hide_the_armed_one(fresh: Mock) -> None:
    url, control, http = fresh
    scenario = make_scenario("current", ["the current run"], request={"stream": False})
    nonce = control.arm(scenario)
    stale = control.arm(make_scenario("earlier", ["an earlier run"]))
    control.disarm(stale)
    earlier_turns = [
        {"role": "user", "content": "Hello."},
        {"role": "assistant", "content": "Hi."},
        {"role": "user", "content": f"As before:\n\n{nonce_line(stale)}"},  # left over from an earlier run
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "Go on."},
    ]
    body = place_nonce({**scenario.client.request, "messages": earlier_turns}, nonce)
    assert body["messages"][2] == earlier_turns[2], "only the first and last user turns carry the nonce"
    response = post(http, url, body, None, headers={NONCE_HEADER: stale})  # the stale copy comes first
    check_answer(response, scenario, body)
    assert response.headers[RUN_HEADER] == nonce and len(control.recorded(nonce)) == 1


def test_requests_without_a_nonce_take_the_oldest_waiting_run(fresh: Mock) -> None:
    url, control, http = fresh
    scenarios = [make_scenario(f"queued-{i}", [f"answer {i}"], request={"stream": False}) for i in range(3)]
    nonces = [control.arm(s) for s in scenarios]
    bare = {"model": "m", "messages": [{"role": "user", "content": "rewritten by the proxy"}]}  # no copy left

    def taken(response: httpx.Response) -> tuple[str, str]:
        return response.headers[RUN_HEADER], response.headers[SELECTED_BY_HEADER]

    response = post(http, url, bare, nonces[2])  # carries its nonce: this run leaves the queue
    check_answer(response, scenarios[2], bare)
    assert taken(response) == (nonces[2], "nonce")
    for i in (0, 1):
        response = post(http, url, bare, None)
        check_answer(response, scenarios[i], bare)
        assert taken(response) == (nonces[i], "queue")
    refused = post(http, url, bare, None)
    assert_openai_error(refused, 400, "scenario_not_found", NONCE_HEADER, "3 run(s)", "already received a request")
    assert RUN_HEADER not in refused.headers
    for nonce in nonces[1:]:
        control.disarm(nonce)
    response = post(http, url, bare, None)  # a retry while its run is the only one armed
    check_answer(response, scenarios[0], bare)
    assert taken(response) == (nonces[0], "only")
    assert [r.body for r in control.recorded(nonces[0])] == [bare, bare]


@pytest.mark.parametrize(
    ("armed", "nonce", "status", "needles"),
    [
        (0, None, 400, ["tcc-", NONCE_HEADER, "no run is armed", "POST /_mock/runs"]),
        (1, "unarmed", 404, ["{nonce}"]),
        (1, "disarmed", 404, ["{nonce}"]),
        (1, None, 200, []),  # taken from the queue
        (1, "armed", 200, []),
    ],
)
def test_selection_without_a_usable_nonce(fresh: Mock, armed: int, nonce: str | None,
                                          status: int, needles: list[str]) -> None:
    url, control, http = fresh
    scenarios = [make_scenario(f"sel-{i}", [f"answer {i}"], request={"stream": False}) for i in range(armed)]
    nonces = [control.arm(s) for s in scenarios]
    sent_nonce = {"unarmed": new_nonce(), "armed": nonces[0] if nonces else None, None: None}.get(nonce)
    if nonce == "disarmed":
        sent_nonce = control.arm(scenarios[0])
        control.disarm(sent_nonce)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    response = post(http, url, body, sent_nonce)
    if status == 200:
        check_answer(response, scenarios[0], body)
        assert [r.body for r in control.recorded(nonces[0])] == [body]
        return
    assert_openai_error(response, status, "scenario_not_found", *(n.format(nonce=sent_nonce) for n in needles))
    assert all(control.recorded(n) == [] for n in nonces)


def test_unknown_nonce_through_sdk(fresh: Mock) -> None:
    url, control, http = fresh
    control.arm(make_scenario("armed", ["x"]))
    nonce = new_nonce()
    with pytest.raises(openai.NotFoundError) as raised:
        sdk(url, nonce).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert nonce in str(raised.value)


# --------------------------------------------------------------------------- recording and bad bodies


def test_recorded_requests_match_what_was_sent(shared: Mock) -> None:
    url, control, http = shared
    scenario = make_scenario("recorded", ["ok"])
    nonce = control.arm(scenario)
    body = {**scenario.client.request, "temperature": 0.2, "extra": {"ü": [1, None, True]}}
    before = time.time()
    response = post(http, url, body, nonce, path="/v1/chat/completions?a=1&b=two",
                    headers={"X-Custom-Header": "Value", "Authorization": "Bearer sk-proxy"})
    assert response.status_code == 200
    client = sdk(url, nonce)
    client.chat.completions.create(**scenario.client.request, extra_headers={"X-Another-One": "Z"})
    first, second = control.recorded(nonce)
    assert (first.method, first.path, first.query, first.body, first.raw_body) == (
        "POST", "/v1/chat/completions", "a=1&b=two", body, None
    )
    assert before <= first.received_at <= second.received_at <= time.time()
    assert all(k == k.lower() for r in (first, second) for k in r.headers)
    assert first.headers["x-custom-header"] == "Value" and first.headers["authorization"] == "Bearer sk-proxy"
    assert first.headers[NONCE_HEADER.lower()] == nonce
    assert second.headers["x-another-one"] == "Z" and second.headers["authorization"] == "Bearer x"
    assert second.body == {**scenario.client.request}
    # A caller done with the run reads it and forgets it in one request.
    last, activity = control.finish(nonce)
    assert last == [first, second] and activity.answering == 0
    with pytest.raises(MockError, match="run_not_found|no armed run"):
        control.recorded(nonce)


@pytest.mark.parametrize(
    ("raw", "code", "recorded_as"),
    [
        (b"{bad json", "invalid_json", "raw_body"),
        (b"", "invalid_json", "raw_body"),
        (b"\xff\xfe not utf-8", "invalid_json", "raw_body"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid_json", "raw_body"),
        (b'[{"role": "user"}]', "invalid_request", "body"),
    ],
    ids=["broken", "empty", "not-utf8", "too-deep", "not-an-object"],
)
def test_malformed_body_is_recorded_and_answered_400(shared: Mock, raw: bytes, code: str,
                                                     recorded_as: str) -> None:
    url, control, http = shared
    nonce = control.arm(make_scenario("malformed", ["never sent"]))
    response = post(http, url, raw, nonce)
    assert_openai_error(response, 400, code, "JSON")
    (seen,) = control.recorded(nonce)
    if recorded_as == "raw_body":
        assert seen.body is None and seen.raw_body == raw.decode("utf-8", "replace")
    else:
        assert seen.body == json.loads(raw) and seen.raw_body is None


# --------------------------------------------------------------------------- request validation

GOOD_MESSAGES: list[Any] = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "What is in the root?"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "b"},
    {"role": "tool", "tool_call_id": "call_1", "content": "a"},
    {"role": "user", "content": "and now?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "an earlier call may be answered again"},
]

# (body changes, expected code and needles in the message: None when the request is valid)
VALIDATION: dict[str, tuple[dict[str, Any], tuple[str, list[str]] | None]] = {
    "valid-conversation": ({}, None),
    "valid-legacy-function-role": ({"messages": [*GOOD_MESSAGES[:2], {"role": "function", "name": "f",
                                                                        "content": "x"}]}, None),
    "missing-messages": ({"messages": None}, ("missing_required_parameter", ["'messages'"])),
    "messages-not-a-list": ({"messages": "hi"}, ("invalid_type", ["'messages'", "array", "a string"])),
    "empty-messages": ({"messages": []}, ("empty_array", ["'messages'", "empty array"])),
    "message-not-an-object": ({"messages": [GOOD_MESSAGES[1], 7]}, ("invalid_type", ["'messages[1]'", "object"])),
    "missing-role": ({"messages": [{"content": "x"}]}, ("missing_required_parameter", ["'messages[0].role'"])),
    "unknown-role": ({"messages": [GOOD_MESSAGES[1], {"role": "narrator", "content": "x"}]},
                     ("invalid_value", ["'messages[1].role'", "'narrator'", "'developer'"])),
    "tool-without-any-call": ({"messages": [GOOD_MESSAGES[1], {"role": "tool", "tool_call_id": "call_1",
                                                               "content": "x"}]},
                              ("invalid_tool_message", ["messages[1]", "'call_1'", "no preceding assistant"])),
    "tool-answers-unknown-id": ({"messages": [*GOOD_MESSAGES[:4], {"role": "tool", "tool_call_id": "call_zz",
                                                                   "content": "x"}]},
                                ("invalid_tool_message", ["messages[4]", "'call_zz'"])),
    "tool-before-its-call": ({"messages": [GOOD_MESSAGES[1], GOOD_MESSAGES[3], GOOD_MESSAGES[2]]},
                             ("invalid_tool_message", ["messages[1]", "'call_2'"])),
    "tool-without-call-id": ({"messages": [*GOOD_MESSAGES[:3], {"role": "tool", "content": "x"}]},
                             ("missing_required_parameter", ["'messages[3].tool_call_id'"])),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_request_validation(shared: Mock, case: str) -> None:
    url, control, http = shared
    changes, expected = VALIDATION[case]
    scenario = make_scenario("validated", ["fine"], request={"stream": False})
    nonce = control.arm(scenario)
    body = {**scenario.client.request, "messages": GOOD_MESSAGES, **changes}
    body = {k: v for k, v in body.items() if v is not None}
    response = post(http, url, body, nonce)
    if expected is None:
        check_answer(response, scenario, body)
    else:
        code, needles = expected
        assert_openai_error(response, 400, code, *needles)
        assert response.json()["error"]["param"] == "messages"
        if "messages" in body:
            with pytest.raises(openai.BadRequestError) as raised:
                sdk(url, nonce).chat.completions.create(**body)
            assert raised.value.code == code
    assert control.recorded(nonce)[0].body == body, "refused requests are recorded too"


# --------------------------------------------------------------------------- network writes

SPLIT_FRAMES = ["héllo ", "plain ascii ", "wörld ✓", "😀", {"raw": 'data: {"x":"ß"}\n\n'}, "end"]


@pytest.mark.parametrize(
    ("write_bytes", "split_multibyte", "model"),
    [
        (None, False, "m"),
        (7, False, "m"),
        (3, False, "m"),
        (None, True, "m"),
        (None, True, "modèle"),  # the first multi-byte character is in every event's model name
        (5, True, "m"),
    ],
)
def test_writes_are_cut_but_decode_the_same(shared: Mock, write_bytes: int | None,
                                            split_multibyte: bool, model: str) -> None:
    url, control, http = shared
    backend: dict[str, Any] = {"split_multibyte": split_multibyte}
    if write_bytes is not None:
        backend["write_bytes"] = write_bytes
    scenario = make_scenario("writes", SPLIT_FRAMES, request={"model": model}, **backend)
    nonce = control.arm(scenario)
    pieces: list[bytes] = []
    with http.stream("POST", url + "/v1/chat/completions", json=scenario.client.request,
                      headers={NONCE_HEADER: nonce}) as response:
        assert response.status_code == 200
        # Each server write is one HTTP chunk, and httpx never hands out bytes of two
        # chunks in one read: so every write boundary is also a read boundary here.
        assert response.headers["transfer-encoding"] == "chunked"
        pieces.extend(response.iter_raw())
    raw = b"".join(pieces)
    spans = check_stream(raw, scenario, model=model, include_usage=False)

    boundaries = set()
    offset = 0
    for piece in pieces:
        offset += len(piece)
        boundaries.add(offset)
    if write_bytes is not None:
        assert max(map(len, pieces)) <= write_bytes
        assert len(pieces) >= len(raw) // write_bytes
    if split_multibyte:
        cut_events = 0
        for start, end in spans:
            event = raw[start:end]
            first = next((i for i, b in enumerate(event) if b >= 0x80), None)
            if first is None:
                continue
            cut_events += 1
            assert start + first + 1 in boundaries, f"event at {start} not cut inside its first multi-byte char"
        assert cut_events >= 4
        cut_reads = [p for p in pieces if p and not _decodes(p)]
        assert cut_reads, "some read must end or start inside a character"
    if write_bytes is None and not split_multibyte:
        assert all(start in boundaries or start == 0 for start, _ in spans)


def _decodes(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --------------------------------------------------------------------------- upstream faults

FAULT_FRAMES = ["one ", "two ", "three ✓", "four"]



@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("fault", "status", "expected_body", "content_type"),
    [
        ({"kind": "http_error", "status": 503}, 503, None, "application/json"),
        ({"kind": "http_error", "status": 429, "headers": {"retry-after": "7"},
          "body": {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": "rl"}}},
         429, {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": "rl"}}, "application/json"),
        ({"kind": "http_error", "status": 502, "body": "<html>bad gateway</html>"}, 502, "<html>bad gateway</html>",
         "text/plain; charset=utf-8"),
    ],
    ids=["default-body", "given-body-and-headers", "text-body"],
)
def test_http_error_fault(shared: Mock, fault: dict[str, Any], status: int, expected_body: Any, content_type: str,
                          stream: bool) -> None:
    url, control, http = shared
    scenario = make_scenario("http-error", FAULT_FRAMES, fault=fault, request={"stream": stream})
    nonce = control.arm(scenario)
    response = post(http, url, scenario.client.request, nonce)
    assert response.status_code == status and response.headers["content-type"] == content_type
    for name, value in fault.get("headers", {}).items():
        assert response.headers[name] == value
    if expected_body is None:
        error = response.json()["error"]
        assert set(error) == {"message", "type", "param", "code"} and str(status) in error["message"]
        assert error["type"] == "server_error"
    elif isinstance(expected_body, str):
        assert response.text == expected_body
    else:
        assert response.json() == expected_body
    assert len(control.recorded(nonce)) == 1
    with pytest.raises(openai.APIStatusError) as raised:
        sdk(url, nonce).chat.completions.create(**scenario.client.request)
    assert raised.value.status_code == status


@pytest.mark.parametrize("mid_event", [False, True])
@pytest.mark.parametrize("after_frame", [0, 2, 4])
def test_drop_fault_streaming(shared: Mock, after_frame: int, mid_event: bool) -> None:
    url, control, http = shared
    scenario = make_scenario("drop", FAULT_FRAMES, fault={"kind": "drop", "after_frame": after_frame,
                                                          "mid_event": mid_event})
    response, raw, error = read_until_closed(http, url + "/v1/chat/completions", scenario.client.request,
                                              control.arm(scenario))
    assert response.status_code == 200 and error == "RemoteProtocolError", "the connection must close mid-body"
    events = raw.split(b"\n\n")
    complete, rest = [e + b"\n\n" for e in events[:-1]], events[-1]
    assert len(complete) == 1 + after_frame
    role = complete[0]
    for event, frame in zip(complete[1:], scenario.backend.frames):
        assert json.loads(event[6:])["choices"][0]["delta"] == expected_delta(frame)
    if not mid_event:
        assert rest == b""
        return
    role_delta = b'{"role":"assistant","content":""}'
    if after_frame < len(scenario.backend.frames):
        nxt = role.replace(role_delta, compact(expected_delta(scenario.backend.frames[after_frame])))
    else:
        nxt = role.replace(role_delta + b',"logprobs":null,"finish_reason":null}',
                           compact(vllm_finish_choice("stop"))[len(b'{"index":0,"delta":'):])
    assert rest and rest == nxt[: len(nxt) // 2]



def test_no_terminator_fault(shared: Mock) -> None:
    url, control, http = shared
    scenario = make_scenario("no-done", FAULT_FRAMES, fault={"kind": "no_terminator"})
    response = post(http, url, scenario.client.request, control.arm(scenario))
    assert response.status_code == 200
    check_stream(response.content, scenario, model=answer_model(scenario, scenario.client.request),
                 include_usage=False, done=False)


@pytest.mark.parametrize("stream", [True, False])
def test_stall_fault_pauses_then_completes(shared: Mock, stream: bool) -> None:
    url, control, http = shared
    seconds = 0.3
    scenario = make_scenario("stall", FAULT_FRAMES, request={"stream": stream},
                             fault={"kind": "stall", "after_frame": 1, "seconds": seconds})
    nonce = control.arm(scenario)
    arrivals: list[tuple[float, bytes]] = []
    start = time.monotonic()
    with http.stream("POST", url + "/v1/chat/completions", json=scenario.client.request,
                     headers={NONCE_HEADER: nonce}) as response:
        for piece in response.iter_raw():
            arrivals.append((time.monotonic(), piece))
    raw = b"".join(p for _, p in arrivals)
    check_answer(httpx.Response(200, content=raw, headers=response.headers), scenario, scenario.client.request)
    # A lower bound only: the stall is the behaviour under test, not the mock's speed.
    if stream:
        before = next(t for t, p in arrivals if b'"one "' in p)
        after = next(t for t, p in arrivals if b'"two "' in p)
        assert after - before >= seconds * 0.9
    else:
        assert arrivals[-1][0] - start >= seconds * 0.9


def test_write_delay_drips_an_event(shared: Mock) -> None:
    url, control, http = shared
    scenario = make_scenario("drip", ["a slow drip ", "of bytes"], write_bytes=40, write_delay_ms=20)
    nonce = control.arm(scenario)
    start = time.monotonic()
    with http.stream("POST", url + "/v1/chat/completions", json=scenario.client.request,
                     headers={NONCE_HEADER: nonce}) as response:
        pieces = list(response.iter_raw())
    elapsed = time.monotonic() - start
    raw = b"".join(pieces)
    check_stream(raw, scenario, model=answer_model(scenario, scenario.client.request), include_usage=False)
    assert max(map(len, pieces)) <= 40
    events = raw.count(b"\n\n")
    pauses = sum(-(-len(e + b"\n\n") // 40) - 1 for e in raw.split(b"\n\n")[:-1])
    assert events == 5 and pauses >= 10
    assert elapsed >= pauses * 0.020 * 0.9  # a lower bound: every pause was taken


def test_each_answer_is_recorded_with_the_time_it_took(shared: Mock) -> None:
    """What the mock sent for a request, byte for byte, and how long it spent on it: the
    harness counts that time as the backend's own, not the proxy's. Lower bounds only."""
    url, control, http = shared
    scenario = make_scenario("timed", ["one ", {"content": "two", "delay_ms": 200}])
    nonce = control.arm(scenario)
    sent = time.time()
    raw = post(http, url, scenario.client.request, nonce).content
    (request,), activity = control.state(nonce)
    asked = time.time()
    assert request.answer is not None and request.answer.status == 200
    assert request.answer.body == raw and request.answer.headers["content-type"].startswith("text/event-stream")
    assert request.answer.seconds is not None and request.answer.seconds >= 0.2 * 0.9
    assert activity.answering == 0 and activity.busy_seconds >= 0.2 * 0.9
    # the moments on the wall clock, which a load generator in another process sets its own against
    assert activity.ended_at is not None and activity.clock is not None
    assert sent + 0.2 * 0.9 <= activity.ended_at <= activity.clock <= asked


def test_anthropic_backend_is_refused_on_the_openai_route(shared: Mock) -> None:
    url, control, http = shared
    scenario = parse_scenario({
        "id": "anthropic-backend", "title": "t", "source": "synthetic",
        "backend": {"dialect": "anthropic", "frames": ["hi", {"tool_use": {"name": "f", "input_json": ["{}"]}}]},
        "client": {"profile": "anthropic",
                   "request": {"model": "claude", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}],
                               "tools": [{"name": "f", "input_schema": {"type": "object"}}]}},
        "expect": {},
    })
    nonce = control.arm(scenario)
    response = post(http, url, {"model": "m", "messages": [{"role": "user", "content": "x"}]}, nonce)
    assert_openai_error(response, 400, "wrong_dialect", "anthropic", "anthropic-backend")
    assert len(control.recorded(nonce)) == 1


# --------------------------------------------------------------------------- the bundled library


def _library() -> list[Scenario]:
    scenarios, _ = validate_paths([bundled_scenarios_dir()])
    return scenarios


def _frames_only(scenario: Scenario) -> Scenario:
    """The scenario without pauses and faults: timing is the benchmarks' concern and faults
    have their own tests; here only the frames that arrive matter."""
    data = scenario.to_mapping()
    for key in ("delay_ms", "write_delay_ms", "fault"):
        data["backend"].pop(key, None)
    for frame in data["backend"]["frames"]:
        if isinstance(frame, dict):
            frame.pop("delay_ms", None)
    return parse_scenario(data)


def test_every_bundled_openai_backend_replays_its_frames(servers: ServeFn) -> None:
    # the dialect this mock serves; a half-sent body never reaches a backend whole
    library = [s for s in _library() if s.backend.dialect.name == "openai" and not s.client.truncate_body]
    assert any(s.id == "qwen-tools-single-call" for s in library)
    url = servers(create_app()).url
    with MockControl(url) as control, http_client() as http:
        for original in library:
            scenario = _frames_only(original)
            nonce = control.arm(scenario)
            # a bad-input case: the backend refuses the request itself, as a real one does
            refused = original.family == "bad-input" and original.expect.error is not None
            # a strict backend refuses what its chat template refuses (mock_backends/strict.py)
            refused = refused or original.backend.strict
            for stream in (True, False):
                body = place_nonce({**scenario.client.request, "stream": stream}, nonce)
                body.pop("n", None)  # one choice here; several are tested in test_isolation.py
                if not stream:
                    body.pop("stream_options", None)
                raw = scenario.client.raw_body
                sent: Any = body if raw is None else raw.encode("utf-8")  # a misbehaving client's bytes, relayed
                response = post(http, url, sent, nonce if raw is not None else None,
                                headers=dict(scenario.client.headers))
                try:
                    if refused:
                        assert response.status_code == 400, response.text
                        assert response.json()["error"]["type"] == "invalid_request_error"
                    else:
                        check_answer(response, scenario, body)
                except AssertionError as exc:
                    raise AssertionError(f"{scenario.id} (stream={stream}): {exc}") from exc
            control.disarm(nonce)


def test_preloaded_scenarios_arm_by_id(servers: ServeFn) -> None:
    library = _library()
    url = servers(create_app(library)).url
    with MockControl(url) as control, http_client() as http:
        assert control.health() == {"status": "ok", "runs": 0, "preloaded": len(library)}
        scenario = next(s for s in library if s.id == "qwen-tools-single-call")
        nonce = control.arm_id(scenario.id)
        assert control.health()["runs"] == 1
        response = post(http, url, scenario.client.request, nonce)
        check_answer(response, scenario, scenario.client.request)
        with pytest.raises(MockError, match="no preloaded scenario 'no-such-id'"):
            control.arm_id("no-such-id")


# --------------------------------------------------------------------------- control API


def test_control_api_errors(fresh: Mock) -> None:
    url, control, http = fresh
    bad = make_scenario("ok", ["x"]).to_mapping()
    bad["backend"]["frames"] = [{"content": "x", "raw": "y"}]
    del bad["title"]
    response = http.post(url + "/_mock/runs", json={"scenario": bad})
    message = assert_openai_error(response, 400, "invalid_scenario", "title", "frames")
    assert len(response.json()["error"]["problems"]) >= 2, message
    for payload in (b"not json", b"{}", b'{"scenario_id": "a", "scenario": {}}', b'{"scenario_id": 3}'):
        assert http.post(url + "/_mock/runs", content=payload).json()["error"]["type"] == "invalid_request_error"
    nonce = new_nonce()
    for method in ("GET", "DELETE"):
        assert_openai_error(http.request(method, f"{url}/_mock/runs/{nonce}"), 404, "run_not_found", nonce)
    with pytest.raises(MockError, match="title"):
        control.arm(_raw_scenario(bad))
    with pytest.raises(MockError, match=nonce):
        control.recorded(nonce)
    with pytest.raises(MockError, match=nonce):
        control.disarm(nonce)
    armed = control.arm(make_scenario("ok", ["x"]))
    assert control.health()["runs"] == 1
    control.disarm(armed)
    assert control.health()["runs"] == 0
    with MockControl("http://127.0.0.1:9", timeout=2) as unreachable, pytest.raises(MockError, match="cannot reach"):
        unreachable.health()


def _raw_scenario(mapping: dict[str, Any]) -> Scenario:
    """A Scenario whose plain data is invalid, as a caller might build by hand."""
    valid = make_scenario("valid", ["x"])
    return Scenario(**{**{f: getattr(valid, f) for f in ("id", "title", "family", "source", "backend", "client",
                                                         "expect")}, "raw": mapping})


# --------------------------------------------------------------------------- logging and CLI


def test_one_log_line_per_request(fresh: Mock, caplog: pytest.LogCaptureFixture) -> None:
    url, control, http = fresh
    scenario = make_scenario("logged", ["x"])
    nonce = control.arm(scenario)
    queued = control.arm(make_scenario("queued", ["y"]))
    with caplog.at_level(logging.INFO, logger="mock_backends"):
        post(http, url, scenario.client.request, nonce, path="/v1/chat/completions")
        post(http, url, {**scenario.client.request, "stream": False}, nonce, path="/chat/completions")
        post(http, url, scenario.client.request, None, path="/v1/chat/completions")
        post(http, url, scenario.client.request, None, path="/v1/chat/completions")
    lines = [r.getMessage() for r in caplog.records if r.name == "mock_backends"]
    assert lines == [
        f"POST /v1/chat/completions {nonce} logged 200 stream",
        f"POST /chat/completions {nonce} logged 200 json",
        f"POST /v1/chat/completions {queued} queued 200 stream (no nonce: oldest waiting run)",
        "POST /v1/chat/completions no nonce - 400 unmatched",
    ]


def test_cli_help() -> None:
    result = CliRunner().invoke(mock_command, ["--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--scenarios"):
        assert option in result.output


@pytest.mark.parametrize("kind", ["missing", "invalid"])
def test_cli_bad_scenarios_path(tmp_path: Any, kind: str) -> None:
    target = tmp_path / "nowhere"
    if kind == "invalid":
        target.mkdir()
        (target / "broken.yaml").write_text("id: [unclosed\n")
    result = CliRunner().invoke(mock_command, ["--scenarios", str(target), "--port", "0"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and str(target) in lines[0] and lines[0].startswith("Error: cannot load scenarios")
