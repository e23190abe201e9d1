"""What serving the OpenAI Responses API costs the reference proxy, next to Chat Completions.

The same processes and answers as ``proxy_overhead.py`` (the mock and the proxy as OS
processes, the 'text' and 'rescue' answers of token-sized frames), played three ways:
calling the mock's ``/v1/chat/completions`` directly, through the proxy's
``/v1/chat/completions``, and through the proxy's ``/v1/responses`` (the same request said
in the Responses API's words; the proxy calls the mock's chat route, runs its pipeline
and writes each chunk as Responses events). Printed: streams per second at each
concurrency, and the Responses route's rate as a share of the chat route's and of the
direct one. Every answer is checked once first: the Responses stream ends with
``response.completed`` and, for 'rescue', carries the rescued call as a ``function_call``.

Run: ``.venv/bin/python benchmarks/responses_overhead.py`` (about a minute); ``--quick``
for a seconds-long smoke run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from collections.abc import Sequence
from typing import Any

from parser_throughput import cpu_model
from proxy_overhead import REQUEST_TIMEOUT, Connection, Target, arm, request_body, rescue_scenario, text_scenario, throughput

from harness.run.processes import ServerProcess as Server
from harness.run.processes import free_port, running
from harness.core.dialects.responses_request import chat_to_responses


def responses_body(scenario: dict[str, Any]) -> bytes:
    return json.dumps(chat_to_responses(json.loads(request_body(scenario)))).encode()


def _events(raw: bytes) -> list[dict[str, Any]]:
    """The Responses events of a chunked SSE body (a check, not part of the timing)."""
    out = []
    for line in raw.split(b"\n"):
        if line.startswith(b"data: {"):
            try:
                out.append(json.loads(line[6:]))
            except ValueError:
                continue  # a line cut by the chunked framing; the check below looks at whole events
    return out


async def check(target: Target, name: str) -> None:
    connection = Connection(target)
    try:
        timing = await asyncio.wait_for(connection.stream(keep=True), REQUEST_TIMEOUT)
    finally:
        connection.close()
    events = _events(timing.body)
    kinds = [e.get("type") for e in events]
    if "response.completed" not in kinds:
        raise RuntimeError(f"the Responses answer to '{name}' has no response.completed: {kinds[-5:]}")
    calls = [e["item"]["name"] for e in events if e.get("type") == "response.output_item.done"
             and e["item"].get("type") == "function_call"]
    if (name == "rescue") != (calls == ["get_weather"]):
        raise RuntimeError(f"the Responses answer to '{name}' has the calls {calls}")


async def measure(args: argparse.Namespace, mock: Server, proxy: Server) -> None:
    for name, scenario in (("text", text_scenario(args.frames, 0.0)), ("rescue", rescue_scenario(args.frames, 0.0))):
        nonce = arm(mock.port, scenario)
        chat = request_body(scenario)
        direct = Target("direct", mock.port, "/v1/chat/completions", nonce, chat)
        via_chat = Target("proxy chat", proxy.port, "/v1/chat/completions", nonce, chat)
        via_responses = Target("proxy responses", proxy.port, "/v1/responses", nonce, responses_body(scenario))
        await check(via_responses, name)
        print(f"== '{name}' answer: {len(scenario['backend']['frames'])} frames; streams per second")
        print(f"{'clients':>8} {'direct':>8} {'chat':>8} {'responses':>10} {'resp/chat':>10} {'resp/direct':>12}")
        for clients in args.clients:
            d = await throughput(direct, clients, args.seconds, args.warmup, [mock])
            c = await throughput(via_chat, clients, args.seconds, args.warmup, [mock, proxy])
            r = await throughput(via_responses, clients, args.seconds, args.warmup, [mock, proxy])
            print(f"{clients:>8} {d.rate:>8.1f} {c.rate:>8.1f} {r.rate:>10.1f} {r.rate / (c.rate or 1):>10.0%} "
                  f"{r.rate / (d.rate or 1):>12.0%}")
        print()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds")
    parser.add_argument("--frames", type=int, default=300, help="frames of the answers (default 300)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16], help="concurrency levels (default 1 16)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring window per cell (default 5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up before each window (default 1)")
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.seconds, args.warmup, args.clients = min(args.frames, 60), 0.3, 0.1, [2]
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"machine: {platform.platform()}, {cpu_model()}, {os.cpu_count()} cpus")
    mock_port, proxy_port = free_port(), free_port()
    mock_args = ["mock", "--host", "127.0.0.1", "--port", str(mock_port), "--quiet"]
    proxy_args = ["proxy", "--upstream", f"http://127.0.0.1:{mock_port}/v1", "--host", "127.0.0.1",
                  "--port", str(proxy_port), "--log-level", "warning", "--upstream-dialect", "openai"]
    print(f"mock:    toolcall-conformance {' '.join(mock_args)}")
    print(f"proxy:   toolcall-conformance {' '.join(proxy_args)}")
    print()
    started = time.perf_counter()
    with running("mock", mock_args, mock_port, "/_mock/health") as mock, \
            running("proxy", proxy_args, proxy_port, "/health") as proxy:
        asyncio.run(measure(args, mock, proxy))
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
