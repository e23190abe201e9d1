"""The CPU of the proxy's relay path per event, in one process, without sockets or load.

The end-to-end many-streams run (``proxy_overhead.py --only-many``) is CPU-bound on a
shared host, so a few percent drown in its noise. This script runs the part of the proxy
that a relayed event passes through — Starlette's app, its error middlewares and route,
``RelayResponse``, the upstream body decoded into events, the chat pipeline, the writes —
with an in-memory upstream body (one network read per event, the paced answer of the
many-streams run: a role chunk, ``--frames`` token frames of vLLM's shape, a finish chunk,
a usage chunk, ``[DONE]``) and a server ``send`` that only keeps each write's length.
It reports the CPU microseconds per event (``time.process_time``, best of ``--repeat``)
for each way of serving the route, run alternately in one process:

* ``starlette``: a plain ``Starlette`` app, every body write through the ``send`` its
  error middlewares and route wrap (the proxy before ``relay.SERVER_SEND``);
* ``proxy app``: ``app.ProxyApp``, the body writes straight to the server's ``send``.

Both write the same bytes (checked before timing). What it leaves out: the sockets, the
upstream request (building and sending it), uvicorn's HTTP parsing and framing, and the
event loop's waiting, which the end-to-end run measures.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/relay_cpu.py`` (about half a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Message, Scope

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reference_proxy.app import ProxyApp  # noqa: E402
from reference_proxy.pipeline import StreamPipeline  # noqa: E402
from reference_proxy.relay import RelayResponse  # noqa: E402
from reference_proxy.rescue import ToolSpec  # noqa: E402

TOOLS = (ToolSpec("get_weather", {"type": "object"}),)


def chunk(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "stop_reason": None}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def answer(frames: int) -> list[bytes]:
    """The paced answer, one network read per event."""
    words = ("The ", "quick", " brow", "n fo", "x jum", "ps ov", "er th", "e laz", "y dog", ". ")
    usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
             "usage": {"prompt_tokens": 10, "completion_tokens": frames, "total_tokens": 10 + frames}}
    return ([chunk({"role": "assistant", "content": ""})]
            + [chunk({"content": words[i % len(words)]}) for i in range(frames)]
            + [chunk({}, "stop"), b"data: " + json.dumps(usage, separators=(",", ":")).encode() + b"\n\n", b"data: [DONE]\n\n"])


class Reads(httpx.AsyncByteStream):
    def __init__(self, reads: list[bytes]) -> None:
        self.reads = reads

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for read in self.reads:
            yield read


def build(kind: Callable[..., Starlette], reads: list[bytes]) -> Starlette:
    async def stream(request: Request) -> RelayResponse:
        upstream = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Reads(reads))
        pipeline = StreamPipeline(tools=TOOLS, xml_client=False, include_usage=True, request_model="m",
                              completion_id="c", created=1)
        return RelayResponse(upstream, pipeline, lambda hung_up: None)

    return kind(routes=[Route("/v1/chat/completions", stream, methods=["POST"])])


async def serve(app: Starlette, streams: int, out: list[int]) -> None:
    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        out.append(len(message.get("body", b"")))

    for _ in range(streams):
        scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                        "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                        "query_string": b"", "headers": [], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
        await app(scope, receive, send)


async def written(app: Starlette) -> bytes:
    bodies: list[bytes] = []

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        bodies.append(message.get("body", b""))

    scope: Scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                    "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
                    "query_string": b"", "headers": [], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 2)}
    await app(scope, receive, send)
    return b"".join(bodies)


async def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--frames", type=int, default=40, help="token frames per answer (default 40)")
    parser.add_argument("--streams", type=int, default=100, help="answers per timed round (default 100)")
    parser.add_argument("--repeat", type=int, default=25, help="timed rounds per app, alternating (default 25)")
    args = parser.parse_args(argv)
    reads = answer(args.frames)
    apps = {"starlette": build(Starlette, reads), "proxy app": build(ProxyApp, reads)}
    outputs = {name: await written(app) for name, app in apps.items()}
    assert len(set(outputs.values())) == 1, "the two apps wrote different bytes"
    events = len(reads) * args.streams
    best = {name: float("inf") for name in apps}
    for _ in range(args.repeat):
        for name, app in apps.items():
            sizes: list[int] = []
            started = time.process_time()
            await serve(app, args.streams, sizes)
            best[name] = min(best[name], time.process_time() - started)
    print(f"{len(reads)} events per answer, {args.streams} answers per round, best of {args.repeat}")
    for name, seconds in best.items():
        print(f"{name:>10}: {seconds / events * 1e6:6.2f} µs CPU per event")
    print(f"proxy app / starlette: {best['proxy app'] / best['starlette']:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
