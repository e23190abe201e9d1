"""The CPU of the proxy's whole streamed route per event, in one process, against a real upstream.

``relay_cpu.py`` times the relay path alone (an in-memory body, no upstream request); the
end-to-end run (``proxy_overhead.py --only-many``) is CPU-bound on a shared host and its
figures move by tens of percent between windows. This script sits between them: the
proxy's ASGI app (``create_app``: routing, the client's body, the upstream request built and
sent by the proxy's transport over loopback, the head and every body read, the SSE
decoding, the chat pipeline with a tool declared, the relay's writes, the log line) is
called directly, without uvicorn, by ``--streams`` concurrent clients in the process that
is measured, in front of ``raw_upstream.py`` in its own process (the paced answer of the
many-streams run: a role chunk, ``--frames`` token frames ``--delay-ms`` apart, a finish
chunk, a usage chunk, ``[DONE]``). Its figure is ``time.process_time`` per relayed event
over ``--rounds`` rounds, so the upstream, uvicorn and the host's other work are outside it
(the load still slows the CPU itself a little).

``--before <checkout>`` runs the same measurement with that checkout's proxy, in its own
process, alternating with this tree's, ``--repeat`` times each, in front of the same upstream.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/route_cpu.py --before /tmp/before``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("The ", "quick", " brow", "n fo", "x jum", "ps ov", "er th", "e laz", "y dog", ". ")
REQUEST = {
    "model": "m", "stream": True, "stream_options": {"include_usage": True},
    "messages": [{"role": "user", "content": "Tell me about the weather."}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
}
HEADERS = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
           (b"authorization", b"Bearer k"), (b"user-agent", b"OpenAI/Python 1.109.1")]


def answer_events(frames: int) -> list[str]:
    """The ``data:`` payloads of the paced answer, vLLM's chunk shape."""
    def chunk(delta: dict[str, object], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, "stop_reason": None}
        return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [choice]}, separators=(",", ":"))

    usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [],
             "usage": {"prompt_tokens": 10, "completion_tokens": frames, "total_tokens": 10 + frames}}
    return ([chunk({"role": "assistant", "content": ""})] + [chunk({"content": WORDS[i % len(WORDS)]})
            for i in range(frames)] + [chunk({}, "stop"), json.dumps(usage, separators=(",", ":")), "[DONE]"])


async def one_stream(app: Any, body: bytes) -> bytes:
    sent = False
    out: list[bytes] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            out.append(message.get("body", b""))

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions", "root_path": "",
             "query_string": b"", "headers": HEADERS, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 8000)}
    await app(scope, receive, send)
    done.set()
    return b"".join(out)


async def child(upstream: str, streams: int, rounds: int, events: int) -> None:
    import logging

    from reference_proxy.app import create_app
    from reference_proxy.config import ProxyConfig

    logging.basicConfig(level=logging.INFO, stream=open(os.devnull, "w"))  # the log line is formatted, not shown
    app = create_app(ProxyConfig(upstream=upstream))
    body = json.dumps(REQUEST).encode()
    async with app.router.lifespan_context(app):
        first = await one_stream(app, body)  # warm: the pool's connections, the first request's imports
        assert first.endswith(b"data: [DONE]\n\n") and b"quick" in first, first[-200:]
        await asyncio.gather(*(one_stream(app, body) for _ in range(streams)))
        started = time.process_time()
        for _ in range(rounds):
            answers = await asyncio.gather(*(one_stream(app, body) for _ in range(streams)))
            assert all(answer.endswith(b"data: [DONE]\n\n") and len(answer) == len(first) for answer in answers)
        cpu = time.process_time() - started
    print(json.dumps({"us_per_event": cpu / (rounds * streams * events) * 1e6}))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def measure(tree: Path, upstream: str, args: argparse.Namespace, events: int) -> float:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", upstream, "--streams", str(args.streams),
               "--rounds", str(args.rounds), "--frames", str(args.frames)]
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=True)
    value: float = json.loads(done.stdout.strip().splitlines()[-1])["us_per_event"]
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--streams", type=int, default=64, help="concurrent streams (default 64)")
    parser.add_argument("--rounds", type=int, default=8, help="timed rounds of them per measurement (default 8)")
    parser.add_argument("--frames", type=int, default=40, help="token frames per answer (default 40)")
    parser.add_argument("--delay-ms", type=float, default=5.0, help="pause before each of them (default 5)")
    parser.add_argument("--repeat", type=int, default=5, help="measurements per tree, alternating (default 5)")
    parser.add_argument("--before", type=Path, default=None, help="a checkout whose proxy is measured too")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    events = args.frames + 4
    if args.child:
        import uvloop

        uvloop.run(child(args.child, args.streams, args.rounds, events))
        return
    port = free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="route-cpu-", delete=False) as answer:
        json.dump({"events": answer_events(args.frames), "paced": args.frames}, answer)
    upstream = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "raw_upstream.py"), "--port", str(port),
                                 "--answer", answer.name, "--delay-ms", f"{args.delay_ms:g}"])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        trees = {"this tree": ROOT} | ({f"{args.before}": args.before.resolve()} if args.before else {})
        results: dict[str, list[float]] = {name: [] for name in trees}
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for _ in range(args.repeat):
            for name, tree in trees.items():
                results[name].append(measure(tree, f"http://127.0.0.1:{port}/v1", args, events))
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{args.streams} streams x {args.rounds} rounds, {events} events an answer, {args.repeat} measurements each")
        for name, values in results.items():
            print(f"{name:>24}: µs CPU per event best {min(values):6.2f}, median {statistics.median(values):6.2f}"
                  f"  ({', '.join(f'{v:.2f}' for v in values)})")
        if args.before:
            this, before = results["this tree"], results[f"{args.before}"]
            print(f"this tree / before: best {min(this) / min(before):.3f}, "
                  f"median {statistics.median(this) / statistics.median(before):.3f}")
    finally:
        upstream.terminate()
        upstream.wait()
        os.unlink(answer.name)


if __name__ == "__main__":
    main()
