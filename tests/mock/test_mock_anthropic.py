"""The Anthropic Messages dialect of the mock backend, driven over real sockets by httpx and the official SDK.

Expectations are derived from each scenario's frames as the Messages streaming
grammar lays them out (consecutive text frames one text block, a tool_use frame a
block of its own, raw frames verbatim), never from the mock's code.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import anthropic
import pytest
from support.mock_messages import (
    BLOCK_EVENTS, assert_anthropic_error, check_answer, check_stream, expected_content, layout, make_scenario, post,
    sdk, usage_of,
)
from support.mock_server import Mock, answer_model, fresh, http_client, read_until_closed, shared  # noqa: F401
from support.servers import ServeFn

from harness.core.dialects import DIALECTS
from harness.core.nonce import NONCE_HEADER, new_nonce, place_nonce
from harness.core.replay.wire import DEFAULT_MODEL
from harness.core.scenario.loading import bundled_scenarios_dir, parse_scenario, validate_paths
from harness.core.scenario.model import Scenario
from mock_backends.app import create_app
from mock_backends.control import MockControl



# --------------------------------------------------------------------------- streams: frames exactly as written

CASES: dict[str, tuple[list[Any], dict[str, Any]]] = {
    "text-split-tags": (
        ["<function_calls>\n<inv", 'oke name="get_weather">', '<parameter name="city">Paris</parameter>',
         "</invoke>\n</function_calls>"],
        {"usage": {"prompt_tokens": 120, "completion_tokens": 24}},
    ),
    "empty-and-unicode-text": (["", "héllo ", "wörld ✓ 😀", "a\nb\r\n\"q\"\\", "\u2028"], {}),
    "native-tool-use": (
        [
            "Let me check. ",
            {"tool_use": {"id": "toolu_01A", "name": "get_weather", "input_json": ['{"city": ', '"Paris"}']}},
            {"tool_use": {"name": "read_file", "input_json": ['{"path": "ä.txt"}']}},
        ],
        {"finish_reason": "tool_use", "usage": {"input_tokens": 9, "output_tokens": 3}},
    ),
    "tool-first-then-text": (
        [
            {"tool_use": {"name": "get_weather", "input_json": ["", "{}"]}},
            "after ",
            "the call",
            {"tool_use": {"id": "toolu_02B", "name": "read_file", "input_json": []}},
        ],
        {"finish_reason": "tool_use"},
    ),
    "ping-and-raw-frames": (
        [
            "before ",
            {"raw": ": keep-alive\n\n"},
            {"raw": 'event: ping\ndata: {"type": "ping"}\n\n'},
            "still the same block ",
            {"raw": "event: content_block_delta\ndata: {\"broken\n\n"},
            "after",
        ],
        {"ping": True},
    ),
    "backend-model-and-delays": (
        [{"content": "slow ", "delay_ms": 3}, "steady"],
        {"model": "served/claude-like", "delay_ms": 2, "finish_reason": "max_tokens"},
    ),
    "no-frames": ([], {"ping": True}),
}

SDK_CASES = [k for k, (frames, _) in CASES.items() if not any(isinstance(f, dict) and "raw" in f for f in frames)]


@pytest.mark.parametrize("case", list(CASES))
def test_stream_frames_arrive_exactly(shared: Mock, case: str) -> None:
    url, control, http = shared
    frames, backend = CASES[case]
    scenario = make_scenario(f"stream-{case}", frames, **backend)
    nonce = control.arm(scenario)
    response = post(http, url, scenario.client.request, nonce)
    check_answer(response, scenario, scenario.client.request)
    (seen,) = control.recorded(nonce)
    assert seen.path == "/v1/messages" and seen.body == scenario.client.request


@pytest.mark.parametrize("case", SDK_CASES)
def test_stream_through_anthropic_sdk(shared: Mock, case: str) -> None:
    url, control, _ = shared
    frames, backend = CASES[case]
    scenario = make_scenario(f"sdk-{case}", frames, **backend)
    request = {k: v for k, v in scenario.client.request.items() if k != "stream"}
    with sdk(url, control.arm(scenario)).messages.stream(**request) as stream:
        events = [e for e in stream if e.type in BLOCK_EVENTS]
        final = stream.get_final_message()
    items, _ = layout(scenario.backend)
    assert [e.type for e in events] == ["message_start", *(i.name for i in items if i.raw is None)]
    for event, item in zip(events[1:], (i for i in items if i.raw is None)):
        if event.type == "content_block_delta":
            assert event.index == item.payload["index"]
            assert event.delta.model_dump(include={"type", "text", "partial_json"}) == item.payload["delta"]
        elif event.type in ("content_block_start", "content_block_stop"):
            assert event.index == item.payload["index"]
    assert final.model == answer_model(scenario, request)
    assert final.stop_reason == scenario.backend.finish_reason
    assert (final.usage.input_tokens, final.usage.output_tokens) == usage_of(scenario.backend)
    got = [b.model_dump(include={"type", "text", "id", "name", "input"}) for b in final.content]
    want = expected_content(scenario.backend)
    for block, expected in zip(got, want):
        if expected["type"] == "tool_use" and expected["id"] is None:
            assert block["id"].startswith("toolu_")
            expected["id"] = block["id"]
    assert got == want


# --------------------------------------------------------------------------- non-streaming and forced modes


@pytest.mark.parametrize("case", list(CASES))
def test_non_streaming_message(shared: Mock, case: str) -> None:
    url, control, http = shared
    frames, backend = CASES[case]
    scenario = make_scenario(f"json-{case}", frames, request={"stream": False}, **backend)
    nonce = control.arm(scenario)
    first = post(http, url, scenario.client.request, nonce)
    check_answer(first, scenario, scenario.client.request)
    message = sdk(url, nonce).messages.create(**scenario.client.request)
    assert message._request_id not in (None, first.headers["request-id"]), "each answer has its own request-id"
    got = [b.model_dump(include={"type", "text", "name", "input"}) for b in message.content]
    assert got == [{k: v for k, v in b.items() if k != "id"} for b in expected_content(scenario.backend)]
    assert message.stop_reason == scenario.backend.finish_reason


def test_broken_tool_input_is_kept_as_text_when_not_streaming(shared: Mock) -> None:
    url, control, http = shared
    scenario = make_scenario("broken-input", [{"tool_use": {"name": "get_weather", "input_json": ['{"city": "Par']}}],
                             request={"stream": False}, finish_reason="tool_use")
    response = post(http, url, scenario.client.request, control.arm(scenario))
    assert response.json()["content"][0]["input"] == '{"city": "Par'



# --------------------------------------------------------------------------- routes under any prefix



@pytest.mark.parametrize("anthropic_client", [True, False])
def test_models_list_in_the_clients_shape(shared: Mock, anthropic_client: bool) -> None:
    url, control, http = shared
    control.arm(make_scenario("models", ["x"], request={"model": "client-side-name"}, model="served-name"))
    headers = {"anthropic-version": "2023-06-01"} if anthropic_client else {}
    response = http.get(url + "/v1/models", headers=headers)
    assert response.status_code == 200
    data = response.json()
    ids = [m["id"] for m in data["data"]]
    assert {"client-side-name", "served-name", DEFAULT_MODEL} <= set(ids) and len(ids) == len(set(ids))
    if anthropic_client:
        assert (data["has_more"], data["first_id"], data["last_id"]) == (False, ids[0], ids[-1])
        assert all(m["type"] == "model" and m["display_name"] and m["created_at"].endswith("Z") for m in data["data"])
    else:
        assert data["object"] == "list" and all(m["object"] == "model" for m in data["data"])


# --------------------------------------------------------------------------- errors on the Messages route


def test_wrong_dialect_answers_in_the_routes_shape(shared: Mock) -> None:
    url, control, http = shared
    openai_backend = parse_scenario({
        "id": "openai-backend", "title": "t", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["hi"]},
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "x"}]}},
        "expect": {},
    })
    nonce = control.arm(openai_backend)
    response = post(http, url, {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}, nonce)
    assert_anthropic_error(response, 400, "wrong_dialect", "openai-backend", "openai dialect", "/chat/completions")
    anthropic_backend = make_scenario("anthropic-backend", ["hi"])
    nonce2 = control.arm(anthropic_backend)
    response = http.post(url + "/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
                         headers={NONCE_HEADER: nonce2})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "wrong_dialect" and "anthropic-backend" in error["message"]
    assert "/messages" in error["message"]
    assert len(control.recorded(nonce)) == len(control.recorded(nonce2)) == 1


@pytest.mark.parametrize(
    ("armed", "nonce", "status", "kind", "needles"),
    [
        (0, None, 400, "scenario_not_found", ["tcc-", NONCE_HEADER, "no run is armed"]),
        (2, None, 400, "scenario_not_found", ["2 run(s)", "already received a request"]),
        (1, "unarmed", 404, "scenario_not_found", ["{nonce}"]),
    ],
)
def test_selection_errors_are_anthropic_shaped(fresh: Mock, armed: int, nonce: str | None, status: int, kind: str,
                                               needles: list[str]) -> None:
    url, control, http = fresh
    body: dict[str, Any] = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    for i in range(armed):  # each run has had its request: none is waiting for one without a nonce
        assert post(http, url, body, control.arm(make_scenario(f"sel-{i}", ["x"]))).status_code == 200
    sent = new_nonce() if nonce == "unarmed" else None
    assert_anthropic_error(post(http, url, body, sent), status, kind, *(n.format(nonce=sent) for n in needles))
    if sent is not None:
        with pytest.raises(anthropic.NotFoundError) as raised:
            sdk(url, sent).messages.create(**body)
        assert sent in str(raised.value)


@pytest.mark.parametrize(
    ("raw", "recorded_as"),
    [(b"{bad json", "raw_body"), (b"", "raw_body"), (b"\xff\xfe", "raw_body"), (b"[" * 100_000, "raw_body"),
     (b'[{"role": "user"}]', "body")],
    ids=["broken", "empty", "not-utf8", "too-deep", "not-an-object"],
)
def test_malformed_body_is_recorded_and_answered_anthropic_400(shared: Mock, raw: bytes, recorded_as: str) -> None:
    url, control, http = shared
    nonce = control.arm(make_scenario("malformed", ["never sent"]))
    response = post(http, url, raw, nonce)
    assert_anthropic_error(response, 400, "invalid_request_error", "JSON")
    assert response.headers["request-id"].startswith("req_"), "the API's errors carry a request-id too"
    (seen,) = control.recorded(nonce)
    if recorded_as == "raw_body":
        assert seen.body is None and seen.raw_body == raw.decode("utf-8", "replace")
    else:
        assert seen.body == json.loads(raw)


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "kind"),
    [
        ("GET", "/v1/messages", {}, 405, "invalid_request_error"),
        ("PUT", "/anthropic/v1/messages/", {}, 405, "invalid_request_error"),
        ("POST", "/v1/messages/count_tokens", {"anthropic-version": "2023-06-01"}, 404, "not_found_error"),
    ],
)
def test_wrong_routes_for_anthropic_clients(shared: Mock, method: str, path: str, headers: dict[str, str],
                                            status: int, kind: str) -> None:
    url, _, http = shared
    response = http.request(method, url + path, headers=headers)
    assert_anthropic_error(response, status, kind, path, "/messages")
    if status == 405:
        assert response.headers["allow"] == "POST"


# --------------------------------------------------------------------------- request validation

GOOD_MESSAGES: list[Any] = [
    {"role": "user", "content": "What is in the root?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md"},
                                 {"type": "text", "text": "go on"}]},
    {"role": "assistant", "content": "Done."},
]

# (body changes, needles in the message: None when the request is valid)
VALIDATION: dict[str, tuple[dict[str, Any], list[str] | None]] = {
    "valid-conversation": ({}, None),
    "valid-extra-fields": ({"system": "Be brief.", "metadata": {"user_id": "u"}, "temperature": 0.1}, None),
    "missing-messages": ({"messages": None}, ["messages", "required"]),
    "messages-not-a-list": ({"messages": {"role": "user"}}, ["messages", "list"]),
    "empty-messages": ({"messages": []}, ["messages", "at least one"]),
    "missing-max-tokens": ({"max_tokens": None}, ["max_tokens", "required"]),
    "max-tokens-string": ({"max_tokens": "100"}, ["max_tokens", "integer"]),
    "max-tokens-bool": ({"max_tokens": True}, ["max_tokens", "integer"]),
    "max-tokens-zero": ({"max_tokens": 0}, ["max_tokens", "greater than or equal to 1"]),
    "system-message-string": ({"messages": [*GOOD_MESSAGES, {"role": "system", "content": "<system-reminder>x"}]},
                              None),
    "system-message-blocks": ({"messages": [{"role": "system", "content": [{"type": "text", "text": "x"}]},
                                            *GOOD_MESSAGES]}, None),
    "system-message-image": ({"messages": [*GOOD_MESSAGES[:2], {"role": "system", "content": [
                                  {"type": "text", "text": "x"}, {"type": "image", "source": {}}]}]},
                             ["messages.2.content.1", "text blocks only", "'image'"]),
    "system-message-number": ({"messages": [{"role": "system", "content": 3}, *GOOD_MESSAGES]},
                              ["messages.0.content", "string or list of text blocks"]),
    "unknown-role": ({"messages": [*GOOD_MESSAGES[:2], {"role": "narrator", "content": "x"}]},
                     ["messages.2.role", "'narrator'"]),
    "message-not-an-object": ({"messages": ["hello"]}, ["messages.0", "dictionary"]),
    "orphan-tool-result": (
        {"messages": [GOOD_MESSAGES[0], GOOD_MESSAGES[1],
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"}]}]},
        ["messages.2.content.0", "'toolu_9'", "tool_use"],
    ),
    "tool-result-before-tool-use": (
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]},
                      *GOOD_MESSAGES[1:]]},
        ["messages.0.content.0", "'toolu_1'"],
    ),
    "tool-result-without-id": (
        {"messages": [*GOOD_MESSAGES[:2], {"role": "user", "content": [{"type": "tool_result"}]}]},
        ["messages.2.content.0", "tool_use_id"],
    ),
}


@pytest.mark.parametrize("case", list(VALIDATION))
def test_request_validation(shared: Mock, case: str) -> None:
    url, control, http = shared
    changes, needles = VALIDATION[case]
    scenario = make_scenario("validated", ["fine"], request={"stream": False})
    nonce = control.arm(scenario)
    body = {**scenario.client.request, "messages": GOOD_MESSAGES}
    body.update(changes)
    body = {k: v for k, v in body.items() if v is not None}
    response = post(http, url, body, nonce)
    if needles is None:
        check_answer(response, scenario, body)
    else:
        assert_anthropic_error(response, 400, "invalid_request_error", *needles)
        # the SDK refuses to send less, and sizes its timeout from an integer max_tokens
        if {"model", "messages"} <= body.keys() and isinstance(body.get("max_tokens"), int):
            with pytest.raises(anthropic.BadRequestError):
                sdk(url, nonce).messages.create(**body)
    assert control.recorded(nonce)[0].body == body, "refused requests are recorded too"


# --------------------------------------------------------------------------- upstream faults

FAULT_FRAMES: list[Any] = [
    "one ",
    "two ✓",
    {"tool_use": {"id": "toolu_f1", "name": "get_weather", "input_json": ['{"city":', ' "Paris"}']}},
    "three",
]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "invalid_request_error"), (401, "authentication_error"), (403, "permission_error"),
     (404, "not_found_error"), (413, "request_too_large"), (418, "invalid_request_error"),
     (429, "rate_limit_error"), (500, "api_error"), (503, "api_error"), (529, "overloaded_error")],
)
def test_http_error_fault_default_bodies(shared: Mock, status: int, kind: str, stream: bool) -> None:
    url, control, http = shared
    scenario = make_scenario("http-error", FAULT_FRAMES, request={"stream": stream},
                             fault={"kind": "http_error", "status": status})
    nonce = control.arm(scenario)
    assert_anthropic_error(post(http, url, scenario.client.request, nonce), status, kind, str(status))
    with pytest.raises(anthropic.APIStatusError) as raised:
        sdk(url, nonce).messages.create(**scenario.client.request)
    assert raised.value.status_code == status
    assert isinstance(raised.value.body, dict) and raised.value.body["error"]["type"] == kind


@pytest.mark.parametrize(
    ("fault", "content_type", "body"),
    [
        ({"kind": "http_error", "status": 529, "headers": {"retry-after": "3"},
          "body": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}},
         "application/json", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ({"kind": "http_error", "status": 502, "body": "<html>bad gateway</html>"}, "text/plain; charset=utf-8",
         "<html>bad gateway</html>"),
    ],
    ids=["given-body-and-headers", "text-body"],
)
def test_http_error_fault_given_body(shared: Mock, fault: dict[str, Any], content_type: str, body: Any) -> None:
    url, control, http = shared
    scenario = make_scenario("http-error-body", FAULT_FRAMES, fault=fault)
    response = post(http, url, scenario.client.request, control.arm(scenario))
    assert response.status_code == fault["status"] and response.headers["content-type"] == content_type
    assert (response.json() if isinstance(body, dict) else response.text) == body
    for name, value in fault.get("headers", {}).items():
        assert response.headers[name] == value



def _same_id(raw: bytes) -> bytes:
    return re.sub(rb'"msg_[0-9a-f]+"', b'"msg_X"', raw)


@pytest.mark.parametrize("mid_event", [False, True])
@pytest.mark.parametrize("after_frame", [0, 1, 2, 3, 4])
def test_drop_fault_streaming(shared: Mock, after_frame: int, mid_event: bool) -> None:
    url, control, http = shared
    whole = make_scenario("whole", FAULT_FRAMES, ping=True)
    complete = post(http, url, whole.client.request, control.arm(whole)).content
    walk = check_stream(complete, whole, model=answer_model(whole, whole.client.request))
    scenario = make_scenario("drop", FAULT_FRAMES, ping=True,
                             fault={"kind": "drop", "after_frame": after_frame, "mid_event": mid_event})
    response, raw, error = read_until_closed(http, url + "/v1/messages", scenario.client.request,
                                             control.arm(scenario))
    assert response.status_code == 200 and error == "RemoteProtocolError", "the connection must close mid-body"
    end = walk.frame_ends[after_frame]
    expected = complete[:end]
    if mid_event:
        nxt = complete[end : complete.index(b"\n\n", end) + 2]
        expected += nxt[: len(nxt) // 2]
    assert _same_id(raw) == _same_id(expected)



def test_no_terminator_fault_leaves_out_message_stop(shared: Mock) -> None:
    url, control, http = shared
    scenario = make_scenario("no-stop", FAULT_FRAMES, fault={"kind": "no_terminator"}, finish_reason="tool_use")
    response = post(http, url, scenario.client.request, control.arm(scenario))
    assert response.status_code == 200
    check_stream(response.content, scenario, model=answer_model(scenario, scenario.client.request), terminated=False)
    assert response.content.endswith(b'"usage":{"output_tokens":0}}\n\n')


def test_stall_fault_pauses_then_completes(shared: Mock) -> None:
    url, control, http = shared
    seconds = 0.3
    scenario = make_scenario("stall", FAULT_FRAMES, fault={"kind": "stall", "after_frame": 1, "seconds": seconds})
    arrivals: list[tuple[float, bytes]] = []
    with http.stream("POST", url + "/v1/messages", json=scenario.client.request,
                     headers={NONCE_HEADER: control.arm(scenario)}) as response:
        for piece in response.iter_raw():
            arrivals.append((time.monotonic(), piece))
    raw = b"".join(p for _, p in arrivals)
    check_stream(raw, scenario, model=answer_model(scenario, scenario.client.request))
    # A lower bound only: the stall is the behaviour under test, not the mock's speed.
    before = next(t for t, p in arrivals if b'"one "' in p)
    after = next(t for t, p in arrivals if b'"two \xe2\x9c\x93"' in p)
    assert after - before >= seconds * 0.9


@pytest.mark.parametrize(("write_bytes", "split_multibyte", "model"),
                         [(7, False, "m"), (None, True, "m"), (None, True, "modèle"), (5, True, "m")])
def test_writes_are_cut_but_decode_the_same(shared: Mock, write_bytes: int | None, split_multibyte: bool,
                                            model: str) -> None:
    url, control, http = shared
    backend: dict[str, Any] = {"split_multibyte": split_multibyte, "ping": True}
    if write_bytes is not None:
        backend["write_bytes"] = write_bytes
    frames = [*FAULT_FRAMES, {"tool_use": {"name": "read_file", "input_json": ['{"path": "ü"}']}}]
    scenario = make_scenario("writes", frames, request={"model": model}, **backend)
    pieces: list[bytes] = []
    with http.stream("POST", url + "/v1/messages", json=scenario.client.request,
                     headers={NONCE_HEADER: control.arm(scenario)}) as response:
        pieces.extend(response.iter_raw())
    raw = b"".join(pieces)
    check_stream(raw, scenario, model=model)
    if write_bytes is not None:
        assert max(map(len, pieces)) <= write_bytes
    if split_multibyte:
        undecodable = 0
        for piece in pieces:
            try:
                piece.decode("utf-8")
            except UnicodeDecodeError:
                undecodable += 1
        assert undecodable >= 2, "some reads must end or start inside a character"
        if model != "m":  # every event of the head carries the model: message_start is cut too
            first = pieces[0]
            assert first.startswith(b"event: message_start") and first.endswith("modèle".encode()[:4])


# --------------------------------------------------------------------------- the bundled library


def _library() -> list[Scenario]:
    scenarios, _ = validate_paths([bundled_scenarios_dir()])
    return [s for s in scenarios if s.backend.dialect.name == "anthropic"]


def _frames_only(scenario: Scenario) -> Scenario:
    """The scenario without pauses and faults: here only the frames that arrive matter."""
    data = scenario.to_mapping()
    for key in ("delay_ms", "write_delay_ms", "fault"):
        data["backend"].pop(key, None)
    for frame in data["backend"]["frames"]:
        if isinstance(frame, dict):
            frame.pop("delay_ms", None)
    return parse_scenario(data)


def _request(scenario: Scenario, nonce: str, stream: bool) -> dict[str, Any]:
    return place_nonce({**scenario.client.request, "stream": stream}, nonce, DIALECTS["anthropic"])


def test_every_bundled_anthropic_backend_replays_its_frames(servers: ServeFn) -> None:
    library = [s for s in _library() if not s.client.truncate_body]  # a half-sent body never arrives whole
    families = {s.family for s in library}
    assert {"anthropic", "faults"} <= families, families
    url = servers(create_app()).url
    with MockControl(url) as control, http_client() as http:
        for original in library:
            scenario = _frames_only(original)
            nonce = control.arm(scenario)
            # a bad-input case: the API refuses the request itself
            refused = original.family == "bad-input" and original.expect.error is not None
            for stream in (True, False):
                body = _request(scenario, nonce, stream)
                raw = scenario.client.raw_body
                sent: Any = body if raw is None else raw.encode("utf-8")  # a misbehaving client's bytes, relayed
                response = post(http, url, sent, nonce if raw is not None else None,
                                headers=dict(scenario.client.headers))
                try:
                    if refused:
                        assert_anthropic_error(response, 400, "invalid_request_error")
                    else:
                        check_answer(response, scenario, body)
                except AssertionError as exc:
                    raise AssertionError(f"{scenario.id} (stream={stream}): {exc}") from exc
            control.disarm(nonce)


def test_every_bundled_anthropic_fault_plays(servers: ServeFn) -> None:
    library = [s for s in _library() if s.backend.fault is not None]
    assert {s.backend.fault.kind for s in library if s.backend.fault} >= {"http_error", "drop", "no_terminator"}
    url = servers(create_app(library)).url
    with MockControl(url) as control, http_client() as http:
        for scenario in library:
            fault = scenario.backend.fault
            assert fault is not None
            nonce = control.arm_id(scenario.id)
            body = _request(scenario, nonce, scenario.streams)
            response, raw, error = read_until_closed(http, url + "/v1/messages", body, nonce)
            model = answer_model(scenario, body)
            where = f"{scenario.id}: {fault.kind}"
            if fault.kind == "http_error":
                assert response.status_code == fault.status and error is None, where
                if isinstance(fault.body, dict):
                    assert json.loads(raw) == fault.body, where
                elif fault.body is None:
                    assert json.loads(raw)["type"] == "error", where
            elif fault.kind == "drop":
                assert response.status_code == 200 and error == "RemoteProtocolError", where
            elif fault.kind == "no_terminator":
                check_stream(raw, scenario, model=model, terminated=False)
            else:
                check_stream(raw, scenario, model=model)
