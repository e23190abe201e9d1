"""The relay writes a streamed body straight to the server's ``send`` (``relay.SERVER_SEND``)
when the app put it in the scope: the bytes are the ones written through Starlette's
wrapped ``send``, the start still passes the wrappers, and a failed write ends the
response as before."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import Message, Scope

from reference_proxy.app import ProxyApp, create_app
from reference_proxy.config import ProxyConfig
from reference_proxy.pipeline import StreamPipeline
from reference_proxy.relay import SERVER_SEND, RelayResponse
from reference_proxy.rescue import ToolSpec


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


TEXT = [chunk({"role": "assistant", "content": ""})] + [chunk({"content": f"tok{i} "}) for i in range(30)]
DONE = b"data: [DONE]\n\n"

#: Upstream bodies, each a list of network reads: a clean answer, several events per read, a
#: malformed chunk, an ``event: error``, a body cut before ``[DONE]``, a tool call written as text.
BODIES: dict[str, list[bytes]] = {
    "one event per read": TEXT + [chunk({}, "stop"), DONE],
    "a burst in one read": [b"".join(TEXT) + chunk({}, "stop") + DONE],
    "a malformed chunk": TEXT[:5] + [b"data: {not json\n\n"] + TEXT[5:] + [chunk({}, "stop"), DONE],
    "an upstream error event": TEXT[:5] + [b'event: error\ndata: {"error": {"message": "overloaded"}}\n\n'],
    "cut before [DONE]": TEXT[:10],
    "a text tool call": TEXT[:3] + [chunk({"content": '<tool_call>{"name": "get_weather", '}),
                                    chunk({"content": '"arguments": {"city": "Paris"}}</tool_call>'}),
                                    chunk({}, "stop"), DONE],
}
TOOLS = (ToolSpec("get_weather", {"type": "object"}),)


class Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read
            await asyncio.sleep(0)


Send = Callable[[Message], Awaitable[None]]


def same_ids(messages: list[Message]) -> list[Message]:
    """The messages with each rescued call's random id made one."""
    return [{**m, "body": re.sub(rb"call_[A-Za-z0-9]+", b"call_x", m["body"])} for m in messages]


async def relay(reads: list[bytes], scope: Scope, send: Send) -> None:
    upstream = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(reads))
    pipeline = StreamPipeline(tools=TOOLS, xml_client=False, include_usage=False, request_model="m",
                              completion_id="c", created=1)

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    await asyncio.wait_for(RelayResponse(upstream, pipeline, lambda hung_up: None)(scope, receive, send), 30)


@pytest.mark.parametrize("reads", BODIES.values(), ids=BODIES.keys())
async def test_the_server_send_gets_the_bytes_the_wrapped_send_got(reads: list[bytes]) -> None:
    wrapped_only: list[Message] = []
    through_wrapper: list[Message] = []
    straight: list[Message] = []

    async def old_send(message: Message) -> None:
        wrapped_only.append(message)

    async def wrapper(message: Message) -> None:
        through_wrapper.append(message)

    async def server(message: Message) -> None:
        straight.append(message)

    await relay(reads, {"type": "http"}, old_send)
    await relay(reads, {"type": "http", SERVER_SEND: server}, wrapper)
    assert [m["type"] for m in through_wrapper] == ["http.response.start"]  # the wrappers still see the start
    assert through_wrapper[0] == wrapped_only[0]
    assert same_ids(straight) == same_ids(wrapped_only[1:])  # every body write, byte for byte, same pieces
    assert straight[-1]["more_body"] is False
    body = b"".join(m["body"] for m in straight)
    assert b"internal_error" not in body  # each case takes its own path, not the catch-all
    assert EXPECTED[id(reads)] in body


#: What each body's answer shows, so each case is known to take the path it names.
EXPECTED = {
    id(BODIES["one event per read"]): b"tok29 ",
    id(BODIES["a burst in one read"]): b"tok29 ",
    id(BODIES["a malformed chunk"]): b"tok29 ",  # skipped, and the answer goes on
    id(BODIES["an upstream error event"]): b"overloaded",
    id(BODIES["cut before [DONE]"]): b"tok8 ",
    id(BODIES["a text tool call"]): b'"tool_calls"',
}


@pytest.mark.parametrize(("error", "hung_up"), [(ConnectionResetError(), True), (RuntimeError("shutting down"), False)])
async def test_a_failed_server_send_ends_the_response_as_before(error: Exception, hung_up: bool) -> None:
    """A client gone (``OSError``) is a hang-up; anything else is raised to the wrappers."""
    upstream = httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=Reads(BODIES["one event per read"]))
    pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=False, request_model="m",
                              completion_id="c", created=1)
    ended: list[bool] = []

    async def wrapper(message: Message) -> None:
        pass

    async def server(message: Message) -> None:
        raise error

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    call = RelayResponse(upstream, pipeline, ended.append)({"type": "http", SERVER_SEND: server}, receive, wrapper)
    if hung_up:
        await asyncio.wait_for(call, 30)
    else:
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(call, 30)
    assert ended == [hung_up]


def health_scope() -> Scope:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
            "scheme": "http", "path": "/health", "raw_path": b"/health", "query_string": b"",
            "headers": [], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}


async def test_an_added_middleware_keeps_seeing_every_body_write() -> None:
    """A middleware added to the app sits inside the server's ``send``: the shortcut is off."""
    app = create_app(ProxyConfig(upstream="http://127.0.0.1:9/v1", log_level="warning"))
    app.add_middleware(GZipMiddleware)
    scope = health_scope()

    async def send(message: Message) -> None:
        pass

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(scope, receive, send)
    assert SERVER_SEND not in scope


async def test_the_app_puts_the_server_send_in_the_scope() -> None:
    app = create_app(ProxyConfig(upstream="http://127.0.0.1:9/v1", log_level="warning"))
    assert isinstance(app, ProxyApp)
    scope = health_scope()
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(scope, receive, send)
    assert scope[SERVER_SEND] is send
    assert sent[0]["status"] == 200
