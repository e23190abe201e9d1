"""The reference proxy's behaviour beyond the scenario library: forwarding, the form the
upstream answers in, XML for native calls, streaming latency, the loop guard, and every
error path (bad requests, upstream down, upstream errors, timeouts, broken streams).

Real servers throughout; tiny hand-written upstreams where the mock cannot misbehave
the way a case needs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from starlette.responses import Response
from starlette.types import Receive, Scope, Send
from support.chat_stream import check_and_fold, parse_sse
from support.proxy_rig import Rig, post, request_body, rig  # noqa: F401  (rig: the module's servers)
from support.sdk_http import openai_sdk

from harness.core.dialects.clients import CLIENTS
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.servers import bind_socket, serve
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig

# --------------------------------------------------------------------------- inline cases


def inline(frames: list[Any], *, tools: bool = True, stream_backend: Any = "auto", finish: str = "stop", **request: Any) -> Scenario:
    data: dict[str, Any] = {
        "id": "inline",
        "title": "inline case",
        "source": "synthetic",
        "backend": {"dialect": "openai", "frames": frames, "finish_reason": finish, "stream": stream_backend},
        "client": {"request": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}], **request}},
        "expect": {},
    }
    if tools:
        data["client"]["request"]["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                },
            }
        ]
    return parse_scenario(data)


def run_inline(rig: Rig, scenario: Scenario, *, stream: bool = True, headers: Mapping[str, str] | None = None) -> tuple[httpx.Response, list[Any]]:
    nonce = rig.mock.arm(scenario)
    try:
        response = post(rig, rig.default, request_body(scenario, stream, nonce), {**(headers or {}), NONCE_HEADER: nonce})
        return response, rig.mock.recorded(nonce)
    finally:
        rig.mock.disarm(nonce)


NATIVE = [
    "Opening it.",
    {"tool_call": {"index": 0, "id": "chatcmpl-tool-9", "type": "function", "name": "read_file", "arguments": ""}},
    {"tool_call": {"index": 0, "arguments": "{\"path\": \"a <b> & c.txt\"}"}},
]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_native_calls_as_xml_for_xml_reading_clients(rig: Rig, stream: bool) -> None:
    response, _ = run_inline(rig, inline(NATIVE, finish="tool_calls"), stream=stream, headers=CLIENTS["xml-client"].headers)
    assert response.status_code == 200
    if stream:
        folded = check_and_fold(parse_sse(response.text))
        content, calls, finish = folded.content, folded.calls, folded.finish
    else:
        message = response.json()["choices"][0]["message"]
        content, calls, finish = message["content"], message.get("tool_calls", []), response.json()["choices"][0]["finish_reason"]
    assert calls == [] and finish == "stop"
    assert content == "Opening it.\n<read_file>\n<path>a <b> & c.txt</path>\n</read_file>"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_upstream_answers_in_the_other_form(rig: Rig, stream: bool) -> None:
    """A backend that always streams, or never does, still gives the client the form it asked for."""
    frames = ["Here: ", "<tools>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}</tools>"]
    response, _ = run_inline(rig, inline(frames, stream_backend=not stream, stream_options={"include_usage": True}), stream=stream)
    assert response.status_code == 200
    if stream:
        folded = check_and_fold(parse_sse(response.text))
        assert (folded.content, folded.calls, folded.finish) == ("Here: ", [("read_file", {"path": "x"})], "tool_calls")
        assert folded.usage is not None
    else:
        choice = response.json()["choices"][0]
        assert choice["message"]["content"] == "Here:" and choice["finish_reason"] == "tool_calls"
        assert [json.loads(c["function"]["arguments"]) for c in choice["message"]["tool_calls"]] == [{"path": "x"}]


def test_malformed_upstream_event_is_skipped(rig: Rig) -> None:
    frames = ["Hello", {"raw": "data: {\"choices\": [ broken\n\n"}, " world"]
    response, _ = run_inline(rig, inline(frames, tools=False))
    folded = check_and_fold(parse_sse(response.text))
    assert (folded.content, folded.finish, folded.error) == ("Hello world", "stop", None)


def test_first_text_leaves_before_the_upstream_finished(rig: Rig) -> None:
    """The upstream pauses an hour after its first frame (it stops when the proxy hangs
    up); the first content must reach the client within that pause (the read below gives
    up after 60 s, which no load makes a correct proxy need)."""
    frames = ["Hello", {"content": " world", "delay_ms": 3_600_000}]
    scenario = inline(frames)
    nonce = rig.mock.arm(scenario)
    try:
        body = request_body(scenario, True, nonce)
        timeout = httpx.Timeout(10, read=60)
        with httpx.Client(timeout=timeout) as client:
            with client.stream("POST", f"{rig.default.url}/v1/chat/completions", json=body, headers={NONCE_HEADER: nonce}) as response:
                assert response.status_code == 200
                first_content = None
                for line in response.iter_lines():
                    if line.startswith("data: {"):
                        delta = json.loads(line[6:])["choices"][0]["delta"]
                        if "content" in delta:
                            first_content = delta["content"]
                            break
        assert first_content == "Hello"
    finally:
        rig.mock.disarm(nonce)


def test_request_forwarded_as_received(rig: Rig) -> None:
    scenario = inline(["ok"], temperature=0.2, stream_options={"include_usage": True}, vendor_field={"x": [1]})
    headers = {
        "Authorization": "Bearer client-key",
        "User-Agent": "my-agent/1",
        "Proxy-Authorization": "Basic c2VjcmV0",
        "X-Custom": "kept",
    }
    nonce = rig.mock.arm(scenario)
    try:
        body = request_body(scenario, True, nonce)
        response = post(rig, rig.default, body, {**headers, NONCE_HEADER: nonce})
        (recorded,) = rig.mock.recorded(nonce)
    finally:
        rig.mock.disarm(nonce)
    assert response.status_code == 200
    assert recorded.body == body
    assert recorded.path == "/v1/chat/completions"
    assert recorded.headers["authorization"] == "Bearer client-key"
    assert recorded.headers["user-agent"] == "my-agent/1" and recorded.headers["x-custom"] == "kept"
    assert "proxy-authorization" not in recorded.headers


def test_api_key_replaces_authorization(rig: Rig, servers: Any) -> None:
    keyed = servers(create_app(dataclasses.replace(rig.default.config, api_key="sk-upstream")))
    scenario = inline(["ok"], tools=False)
    nonce = rig.mock.arm(scenario)
    try:
        response = rig.http.post(
            f"{keyed.url}/chat/completions",
            json=request_body(scenario, False, nonce),
            headers={"Authorization": "Bearer client-key", NONCE_HEADER: nonce},
        )
        (recorded,) = rig.mock.recorded(nonce)
    finally:
        rig.mock.disarm(nonce)
    assert response.status_code == 200 and response.json()["choices"][0]["message"]["content"] == "ok"
    assert recorded.headers["authorization"] == "Bearer sk-upstream"


def tool_turns(count: int) -> list[dict[str, Any]]:
    """``count`` rounds of an assistant call and its tool result."""
    out: list[dict[str, Any]] = []
    for i in range(count):
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}}
        out += [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": f"call_{i}", "content": "r"}]
    return out


def test_loop_guard_off_forwards(rig: Rig, servers: Any) -> None:
    unguarded = servers(create_app(dataclasses.replace(rig.default.config, loop_guard_max_tool_messages=None)))
    assert "loop-guard" not in dataclasses.replace(rig.default.config, loop_guard_max_tool_messages=None).features()
    scenario = inline(["continuing"], messages=[{"role": "user", "content": "go"}, *tool_turns(30)])
    nonce = rig.mock.arm(scenario)
    try:
        response = rig.http.post(
            f"{unguarded.url}/v1/chat/completions", json=request_body(scenario, False, nonce), headers={NONCE_HEADER: nonce}
        )
        assert len(rig.mock.recorded(nonce)) == 1
    finally:
        rig.mock.disarm(nonce)
    assert response.json()["choices"][0]["message"]["content"] == "continuing"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_loop_guard_answers_alone(rig: Rig, stream: bool) -> None:
    client = rig.sdk(rig.default)
    messages: Any = [{"role": "user", "content": "go"}, *tool_turns(21)]
    if stream:
        state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
        with client.chat.completions.create(model="m", messages=messages, stream=True) as chunks:
            for chunk in chunks:
                state.handle_chunk(chunk)
        result: Any = state.get_final_completion()
    else:
        result = client.chat.completions.create(model="m", messages=messages)
    choice = result.choices[0]
    assert choice.finish_reason == "stop" and choice.message.content and not choice.message.tool_calls
    assert result.model == "m"


def test_models_and_health(rig: Rig) -> None:
    for path in ("/v1/models", "/models"):
        response = rig.http.get(f"{rig.default.url}{path}")
        assert response.status_code == 200 and response.json()["object"] == "list"
    assert rig.sdk(rig.default).models.list().data is not None
    health = rig.http.get(f"{rig.default.url}/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"


# --------------------------------------------------------------------------- errors

ERROR_KEYS = {"message", "type", "param", "code"}


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"{not json", "invalid_json"),
        (b'"a string"', "invalid_body"),
        (b'{"model": "m"}', "missing_required_parameter"),
        (b'{"model": "m", "messages": "hi"}', "invalid_type"),
    ],
)
def test_bad_client_requests(rig: Rig, content: bytes, code: str) -> None:
    response = rig.http.post(f"{rig.default.url}/v1/chat/completions", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == ERROR_KEYS and error["type"] == "invalid_request_error" and error["code"] == code


def test_unknown_route_and_method(rig: Rig) -> None:
    for method, path, status in (("GET", "/v2/nothing", 404), ("GET", "/v1/chat/completions", 405)):
        response = rig.http.request(method, f"{rig.default.url}{path}")
        assert response.status_code == status and set(response.json()["error"]) == ERROR_KEYS


def closed_port_url() -> str:
    sock = bind_socket()
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_upstream_down_is_502(servers: Any, stream: bool) -> None:
    proxy = servers(create_app(ProxyConfig(upstream=closed_port_url(), connect_timeout=2, log_level="warning")))
    client = openai_sdk(base_url=f"{proxy.url}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream)
    assert info.value.status_code == 502
    assert set(info.value.response.json()["error"]) == ERROR_KEYS


FIRST_EVENT = b'data: {"id":"u","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"partial "},"finish_reason":null}]}\n\n'
HELD = b'data: {"id":"u","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"<tool_call>\\n{\\"na"},"finish_reason":null}]}\n\n'
HUNG_UP: list[bool] = []  # what the "watch" upstream saw
# A stalling upstream waits until the proxy hangs up (at most this long): however slowly a
# loaded machine runs, the proxy's 0.3 s read timeout always ends the wait first.
PAUSE_CAP = 120.0
UPSTREAM_ERRORS = {
    "500": (500, b'{"error": {"message": "engine crashed", "type": "server_error", "param": null, "code": 500}}', {}),
    "503": (503, b"Service Unavailable", {"retry-after": "7"}),
    "400": (400, b'{"object": "error", "message": "context too long", "type": "BadRequestError", "code": 400}', {}),
}


async def _until_hung_up(receive: Receive) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(PAUSE_CAP):
            while (await receive())["type"] != "http.disconnect":
                pass


async def misbehave(scope: Scope, receive: Receive, send: Send) -> None:
    """An upstream that fails the way the ``x-misbehave`` header says (the proxy forwards it)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    how = dict(scope["headers"]).get(b"x-misbehave", b"").decode()
    if how in UPSTREAM_ERRORS:
        status, body, headers = UPSTREAM_ERRORS[how]
        await Response(body, status_code=status, headers=headers, media_type="application/json")(scope, receive, send)
        return
    if how == "slow":
        await _until_hung_up(receive)
        await Response(b"{}", media_type="application/json")(scope, receive, send)
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
    await send({"type": "http.response.body", "body": FIRST_EVENT + HELD, "more_body": True})
    if how == "watch":  # wait for the proxy to hang up, and say whether it did
        try:
            async with asyncio.timeout(5):
                while (await receive())["type"] != "http.disconnect":
                    pass
            HUNG_UP.append(True)
        except TimeoutError:
            HUNG_UP.append(False)
        return
    if how == "stall":
        await _until_hung_up(receive)
    else:
        raise RuntimeError("upstream process died")


@pytest.fixture(scope="module")
def shaky() -> Iterator[str]:
    """A proxy in front of ``misbehave``, with a short read timeout."""
    with serve(misbehave) as upstream:
        config = ProxyConfig(upstream=f"{upstream.url}/v1", read_timeout=0.3, log_level="warning")
        with serve(create_app(config)) as proxy:
            yield proxy.url


@pytest.mark.parametrize("case", sorted(UPSTREAM_ERRORS))
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_upstream_http_errors_passed_on(shaky: str, stream: bool, case: str) -> None:
    status, body, headers = UPSTREAM_ERRORS[case]
    message = json.loads(body)["error"]["message"] if body.startswith(b'{"error"') else (
        json.loads(body)["message"] if body.startswith(b"{") else body.decode()
    )
    client = openai_sdk(base_url=f"{shaky}/v1", api_key="k", max_retries=0, default_headers={"x-misbehave": case})
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=stream)
    assert info.value.status_code == status
    error = info.value.response.json()["error"]
    assert set(error) >= ERROR_KEYS and error["message"] == message
    for name, value in headers.items():
        assert info.value.response.headers[name] == value
    models = httpx.get(f"{shaky}/v1/models", headers={"x-misbehave": case})
    assert models.status_code == status and models.json()["error"]["message"] == message


def test_upstream_timeout_before_answer_is_504(shaky: str) -> None:
    response = httpx.post(
        f"{shaky}/v1/chat/completions", json={"model": "m", "messages": []}, headers={"x-misbehave": "slow"}, timeout=10
    )
    assert response.status_code == 504 and set(response.json()["error"]) == ERROR_KEYS


@pytest.mark.parametrize("failure", ["stall", "drop"])
def test_upstream_failing_mid_stream(shaky: str, failure: str) -> None:
    """Text already held back is flushed, then an error chunk and ``[DONE]``; the SDK raises APIError."""
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
    }
    response = httpx.post(f"{shaky}/v1/chat/completions", json=body, headers={"x-misbehave": failure}, timeout=10)
    assert response.status_code == 200
    folded = check_and_fold(parse_sse(response.text))
    assert folded.content == 'partial <tool_call>\n{"na'
    assert folded.error is not None and set(folded.error) == ERROR_KEYS and folded.done and folded.finish is None
    client = openai_sdk(base_url=f"{shaky}/v1", api_key="k", max_retries=0, default_headers={"x-misbehave": failure})
    with pytest.raises(openai.APIError):
        for _ in client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], stream=True, extra_body={"tools": body["tools"]}
        ):
            pass


def test_client_hang_up_cancels_the_upstream_request(shaky: str) -> None:
    """A client that goes away mid-answer makes the proxy drop the upstream request, so
    the backend stops generating (the upstream below waits up to 5 s to see it)."""
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=10) as client:
        with client.stream("POST", f"{shaky}/v1/chat/completions", json=body, headers={"x-misbehave": "watch"}) as response:
            first = next(response.iter_lines())
            assert first.startswith("data: ")
    for _ in range(100):
        if HUNG_UP:
            break
        threading.Event().wait(0.05)
    assert HUNG_UP == [True]


def test_client_stalling_mid_body_gets_408(rig: Rig) -> None:
    """A client that announces more body than it sends gets a 408 once it has paused
    longer than ``body_timeout`` (5 s, the default), and the proxy keeps serving others."""
    host, port = rig.default.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 400\r\n\r\n" + b'{"model": "m", "messages": ['
        )
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert json.loads(body)["error"]["code"] == "request_timeout"
    assert rig.http.get(f"{rig.default.url}/health").status_code == 200
