"""What the reference proxy costs a streaming client, measured against calling the mock directly.

Three OS processes: the mock backend (``toolcall-conformance mock``), the reference proxy
(``toolcall-conformance proxy``) in front of it, and this script as the load client, so
client and servers never share one interpreter lock. Both servers listen on free
127.0.0.1 ports and are terminated when the script ends, also on error or Ctrl-C.

Two realistic streamed answers are replayed, each built from a scenario of the library
(its request, tools and model) with a longer answer of token-sized frames (3-5
characters, as an inference server streams them):

* ``text``: a plain prose answer, ``--frames`` frames (default 300), to a request that
  declares tools, so the rescuer watches every frame and finds nothing;
* ``rescue``: prose, then a tool call the model wrote as text (a Qwen ``<tools>``
  block, cut into token frames), which the proxy turns into ``tool_calls``.

Printed figures:

* latency (one client, sequential requests, direct and proxied requests alternating):
  time to the first content byte and to the end of the stream, median and p95, and
  the proxy's added time (difference of the medians). With zero frame delay (the whole
  answer is a burst) and with a small per-frame delay (``--delay-ms``, each event
  arrives alone, as from a real model);
* throughput: streams per second with 1, 16 and 64 concurrent clients (each with its
  own keep-alive connection), direct vs through the proxy, the ratio, and the CPU
  each process spent per stream (from ``/proc``), so a saturated client or mock shows;
* many streams: ``--many`` clients (default 256) each streaming paced answers back to
  back (``--many-frames`` frames ``--many-delay-ms`` apart, as a model generates them),
  direct and then through the proxy: first-content p50/p99 and what the proxy adds, and
  the CPU-seconds the upstream and the proxy spend per 1,000 relayed events (a paced
  answer of F frames is F + 4 events: the role chunk, the frames, the finish chunk, the
  usage chunk, ``[DONE]``). Its upstream (``--upstream``) is by default the cheapest one
  an SSE relay can face, ``raw_upstream.py`` (asyncio streams writing pre-encoded frames
  on a timer), the yardstick of the proxy's CPU per event; ``--upstream mock`` plays the
  same answer from the mock instead; ``--byte-relay`` measures last, in front of the raw
  upstream, a relay that only forwards bytes (``byte_relay.py``): the floor of any relay's CPU.

The client is raw asyncio streams: it reads whatever the socket holds (up to 64 KB),
spots the first content delta and the end of the chunked body by byte search, and
never parses JSON while measuring. Every answer is checked once, before measuring, by
a full parse (content, calls, ``[DONE]``).

Run: ``.venv/bin/python benchmarks/proxy_overhead.py`` (about two minutes);
``--quick`` for a seconds-long smoke run; ``--help`` for the knobs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import socket
import statistics
import sys
import time
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from harness.run.processes import ServerProcess as Server  # noqa: E402
from harness.run.processes import free_port, running  # noqa: E402
from parser_throughput import cpu_model, plain_prose  # noqa: E402

NONCE_HEADER = "X-Conformance-Nonce"
REQUEST_TIMEOUT = 30.0


# --------------------------------------------------------------------------- scenarios


def token_frames(text: str, seed: int) -> list[str]:
    """``text`` cut into 3-5 character frames, about the size of a model's tokens."""
    import random

    rng = random.Random(seed)
    frames: list[str] = []
    i = 0
    while i < len(text):
        step = rng.randint(3, 5)
        frames.append(text[i : i + step])
        i += step
    return frames


def prose_frames(count: int, seed: int) -> list[str]:
    return token_frames(plain_prose(count * 5, seed), seed)[:count]


def text_scenario(frames: int, delay_ms: float) -> dict[str, Any]:
    """A plain answer to a request that declares tools (the rescuer runs, finds nothing)."""
    scenario: dict[str, Any] = yaml.safe_load((ROOT / "scenarios/plain/include-usage.yaml").read_text())
    scenario["id"] = "bench-text"
    scenario["backend"]["frames"] = prose_frames(frames, 1)
    scenario["backend"]["delay_ms"] = delay_ms
    return scenario


CALL = '<tools>{"name": "get_weather", "arguments": {"city": "Madrid"}}</tools>'


def rescue_scenario(frames: int, delay_ms: float) -> dict[str, Any]:
    """``frames`` frames of prose, then a Qwen ``<tools>`` call written as text, cut into token frames."""
    scenario: dict[str, Any] = yaml.safe_load((ROOT / "scenarios/qwen-tools/text-before-tags.yaml").read_text())
    scenario["id"] = "bench-rescue"
    call = token_frames(CALL, 3)
    prose = prose_frames(frames, 2)
    scenario["backend"]["frames"] = [*prose, "\n\n", *call]
    scenario["backend"]["delay_ms"] = delay_ms
    return scenario


def answer_events(scenario: dict[str, Any]) -> list[str]:
    """The ``data:`` payloads the mock streams for a plain ``openai`` scenario with usage, in its
    (vLLM's) chunk shape: a role chunk, one chunk per frame, the finish chunk, the usage chunk,
    ``[DONE]``; what ``raw_upstream.py`` replays, so both upstreams send the proxy the same answer."""
    model = scenario["client"]["request"]["model"]
    envelope = {"id": "chatcmpl-9f2c0c3be4a84b0e8e5d4bbf2a7c1d10", "object": "chat.completion.chunk",
                "created": 1795860306, "model": model}

    def chunk_of(delta: dict[str, Any], finish: str | None = None) -> str:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        if finish is not None:
            choice["stop_reason"] = None
        return json.dumps({**envelope, "choices": [choice]}, separators=(",", ":"), ensure_ascii=False)

    usage = scenario["backend"]["usage"]
    return [
        chunk_of({"role": "assistant", "content": ""}),
        *(chunk_of({"content": frame}) for frame in scenario["backend"]["frames"]),
        chunk_of({"content": ""}, scenario["backend"]["finish_reason"]),
        json.dumps({**envelope, "choices": [], "usage": usage}, separators=(",", ":")),
        "[DONE]",
    ]


def request_body(scenario: dict[str, Any]) -> bytes:
    body = dict(scenario["client"]["request"])
    body["stream"] = True
    return json.dumps(body).encode()


# --------------------------------------------------------------------------- servers


def arm(mock_port: int, scenario: dict[str, Any]) -> str:
    body = json.dumps({"scenario": scenario}).encode()
    with socket.create_connection(("127.0.0.1", mock_port), timeout=5) as sock:
        sock.sendall(
            b"POST /_mock/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 201"):
        raise RuntimeError(f"arming the mock failed: {answer[:500]!r}")
    nonce: str = json.loads(payload)["nonce"]
    return nonce


# --------------------------------------------------------------------------- client

CONTENT_MARK = b'{"content":"'
END_MARK = b"\r\n0\r\n\r\n"


class Target:
    """One endpoint (the mock or the proxy) and one armed answer; builds the raw request."""

    def __init__(self, label: str, port: int, path: str, nonce: str, body: bytes) -> None:
        self.label = label
        self.port = port
        self.request = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nAuthorization: Bearer bench\r\n{NONCE_HEADER}: {nonce}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode() + body


@dataclass
class Timing:
    first_content: float  # seconds from sending the request to the first content byte
    end: float  # seconds to the end of the body
    body: bytes = b""


class Connection:
    """A keep-alive HTTP/1.1 connection that sends one request at a time."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def stream(self, keep: bool = False) -> Timing:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.target.port)
        reader, writer = self.reader, self.writer
        assert reader is not None
        clock = time.perf_counter
        started = clock()
        writer.write(self.target.request)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
            raise RuntimeError(f"{self.target.label}: unexpected answer {head[:300]!r}")
        first = 0.0
        kept: list[bytes] = []
        tail = b""
        read = reader.read
        while True:
            piece = await read(65536)
            if not piece:
                raise RuntimeError(f"{self.target.label}: connection closed mid-stream")
            if keep:
                kept.append(piece)
            if not first:
                window = tail + piece
                at = window.find(CONTENT_MARK)
                while at >= 0 and at + len(CONTENT_MARK) < len(window):
                    if window[at + len(CONTENT_MARK)] != 34:  # not an empty string
                        first = clock()
                        break
                    at = window.find(CONTENT_MARK, at + 1)
            tail = (tail + piece)[-16:]
            if tail.endswith(END_MARK) or piece.startswith(b"0\r\n\r\n") and len(piece) == 5:
                break
        end = clock()
        return Timing((first or end) - started, end - started, b"".join(kept))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None


def dechunk(raw: bytes) -> bytes:
    out: list[bytes] = []
    i = 0
    while True:
        line_end = raw.index(b"\r\n", i)
        size = int(raw[i:line_end].split(b";")[0], 16)
        if size == 0:
            return b"".join(out)
        out.append(raw[line_end + 2 : line_end + 2 + size])
        i = line_end + 2 + size + 2


def summarize(body: bytes) -> tuple[str, list[str], bool]:
    """(content, tool call names, ended with [DONE]) of a streamed answer."""
    content: list[str] = []
    calls: list[str] = []
    events = [e for e in re.split(rb"\n\n", dechunk(body)) if e.startswith(b"data: ")]
    for event in events[:-1]:
        chunk = json.loads(event[6:])
        for choice in chunk.get("choices", []):
            delta = choice.get("delta", {})
            content.append(delta.get("content") or "")
            for call in delta.get("tool_calls") or []:
                name = call.get("function", {}).get("name")
                if name:
                    calls.append(name)
    return "".join(content), calls, bool(events) and events[-1] == b"data: [DONE]"


# --------------------------------------------------------------------------- measurements


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


async def latency(direct: Target, proxied: Target, count: int, budget: float) -> dict[str, list[Timing]]:
    """Sequential requests, alternating direct and proxied; bounded by count and time."""
    results: dict[str, list[Timing]] = {direct.label: [], proxied.label: []}
    connections = [Connection(direct), Connection(proxied)]
    try:
        for connection in connections:  # warm up: connections open, code paths hot
            for _ in range(5):
                await asyncio.wait_for(connection.stream(), REQUEST_TIMEOUT)
        deadline = time.monotonic() + budget
        for i in range(count):
            if time.monotonic() > deadline:
                break
            for connection in connections if i % 2 == 0 else connections[::-1]:
                timing = await asyncio.wait_for(connection.stream(), REQUEST_TIMEOUT)
                results[connection.target.label].append(timing)
    finally:
        for connection in connections:
            connection.close()
    return results


@dataclass
class Throughput:
    streams: int = 0
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.streams / self.seconds if self.seconds else 0.0


async def throughput(target: Target, clients: int, seconds: float, warmup: float, servers: Sequence[Server]) -> Throughput:
    """``clients`` workers, each streaming answers back to back on its own connection."""
    result = Throughput()
    measuring = False
    stop = False

    async def worker() -> None:
        connection = Connection(target)
        try:
            while not stop:
                await asyncio.wait_for(connection.stream(), REQUEST_TIMEOUT)
                if measuring and not stop:
                    result.streams += 1
        finally:
            connection.close()

    tasks = [asyncio.ensure_future(worker()) for _ in range(clients)]
    try:
        await asyncio.sleep(warmup)
        before = [s.cpu_seconds() for s in servers], time.process_time(), time.perf_counter()
        measuring = True
        done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
        measuring = False
        after = [s.cpu_seconds() for s in servers], time.process_time(), time.perf_counter()
        for task in done:
            task.result()  # a failed worker fails the benchmark
        result.seconds = after[2] - before[2]
        result.client_cpu = after[1] - before[1]
        result.server_cpu = {s.name: a - b for s, a, b in zip(servers, after[0], before[0])}
    finally:
        stop = True
        await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT)
        for task in tasks:
            task.cancel()
    return result


@dataclass
class Many:
    firsts: list[float] = field(default_factory=list)  # seconds to first content, streams that ended in the window
    streams: int = 0
    seconds: float = 0.0
    client_cpu: float = 0.0
    server_cpu: dict[str, float] = field(default_factory=dict)
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average at the window's start and end


async def many_streams(target: Target, clients: int, seconds: float, warmup: float,
                       servers: Sequence[Server]) -> Many:
    """``clients`` connections streaming paced answers back to back; a stream counts when
    it both starts and ends inside the measuring window."""
    result = Many()
    window: list[float] = [float("inf"), float("inf")]
    stop = False

    async def worker(delay: float) -> None:
        await asyncio.sleep(delay)  # spread the starts over the warm-up, as clients arrive
        connection = Connection(target)
        try:
            while not stop:
                started = time.perf_counter()
                timing = await asyncio.wait_for(connection.stream(), REQUEST_TIMEOUT)
                if window[0] <= started and time.perf_counter() <= window[1]:
                    result.firsts.append(timing.first_content)
                    result.streams += 1
        finally:
            connection.close()

    tasks = [asyncio.ensure_future(worker(warmup * i / clients)) for i in range(clients)]
    try:
        await asyncio.sleep(warmup * 1.5)
        before = [s.cpu_seconds() for s in servers], time.perf_counter(), time.process_time(), os.getloadavg()[0]
        window[0] = before[1]
        window[1] = before[1] + seconds
        done, _ = await asyncio.wait(tasks, timeout=seconds, return_when=asyncio.FIRST_EXCEPTION)
        after = [s.cpu_seconds() for s in servers], time.perf_counter(), time.process_time(), os.getloadavg()[0]
        for task in done:
            task.result()
        result.seconds = after[1] - before[1]
        result.client_cpu = after[2] - before[2]
        result.server_cpu = {s.name: a - b for s, a, b in zip(servers, after[0], before[0])}
        result.load = before[3], after[3]
    finally:
        stop = True
        await asyncio.wait(tasks, timeout=REQUEST_TIMEOUT)
        for task in tasks:
            task.cancel()
    return result


# --------------------------------------------------------------------------- report


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f}"


def print_latency(title: str, results: dict[str, list[Timing]], direct: str, proxied: str) -> None:
    print(f"{title} ({len(results[direct])} requests each)")
    print(f"  {'':<8}{'first content ms':>30}{'end of stream ms':>30}")
    print(f"  {'':<8}{'median':>15}{'p95':>15}{'median':>15}{'p95':>15}")
    medians: dict[str, tuple[float, float]] = {}
    for label in (direct, proxied):
        firsts = [t.first_content for t in results[label]]
        ends = [t.end for t in results[label]]
        medians[label] = statistics.median(firsts), statistics.median(ends)
        print(f"  {label:<8}{ms(medians[label][0]):>15}{ms(percentile(firsts, 95)):>15}"
              f"{ms(medians[label][1]):>15}{ms(percentile(ends, 95)):>15}")
    added = [medians[proxied][i] - medians[direct][i] for i in range(2)]
    print(f"  {'added':<8}{ms(added[0]):>15}{'':>15}{ms(added[1]):>15}")


def print_throughput(name: str, rows: list[tuple[int, Throughput, Throughput]]) -> None:
    print(f"throughput, '{name}' answer: streams/s (CPU ms per stream: client / mock / proxy)")
    print(f"  {'clients':>7}{'direct':>12}{'proxy':>12}{'ratio':>8}   {'direct CPU ms':>22}   {'proxy CPU ms':>22}")
    for clients, direct, proxied in rows:
        def cpu(t: Throughput) -> str:
            n = max(t.streams, 1)
            parts = [t.client_cpu / n * 1000, t.server_cpu.get("mock", 0) / n * 1000]
            if "proxy" in t.server_cpu:
                return " / ".join(f"{p:5.2f}" for p in parts) + f" / {t.server_cpu['proxy'] / n * 1000:5.2f}"
            return " / ".join(f"{p:5.2f}" for p in parts) + " /    - "
        ratio = proxied.rate / direct.rate if direct.rate else 0.0
        print(f"  {clients:>7}{direct.rate:>12.1f}{proxied.rate:>12.1f}{ratio:>7.0%}   {cpu(direct):>22}   {cpu(proxied):>22}")


def print_many(args: argparse.Namespace, direct: Many, proxied: Many, events: int, upstream: str) -> None:
    print(f"many streams: {args.many} clients, {args.many_frames} frames {args.many_delay_ms:g} ms apart "
          f"({events} events per answer), {args.many_seconds:g} s window, upstream: {upstream}, "
          f"proxy workers: {args.proxy_workers}")
    print(f"  {'':<8}{'streams':>9}{'events/s':>10}{'first content p50':>20}{'p99':>10}"
          f"   {'CPU s per 1,000 events':<28}{'cores busy':>11}{'load avg':>14}")
    for label, many in (("direct", direct), ("proxy", proxied)):
        frames = max(many.streams * events, 1)
        cpu = "  ".join(f"{name} {value / frames * 1000:.4f}" for name, value in many.server_cpu.items())
        busy = (sum(many.server_cpu.values()) + many.client_cpu) / many.seconds if many.seconds else 0.0
        print(f"  {label:<8}{many.streams:>9}{many.streams * events / max(many.seconds, 1e-9):>10.0f}"
              f"{ms(percentile(many.firsts, 50)):>20}{ms(percentile(many.firsts, 99)):>10}"
              f"   {cpu:<28}{busy:>11.2f}{many.load[0]:>7.2f}-{many.load[1]:.2f}")
    added = [percentile(proxied.firsts, p) - percentile(direct.firsts, p) for p in (50, 99)]
    events_direct, events_proxied = max(direct.streams * events, 1), max(proxied.streams * events, 1)
    upstream_cpu = direct.server_cpu.get(upstream, 0.0) / events_direct
    ratio = proxied.server_cpu.get("proxy", 0.0) / events_proxied / upstream_cpu if upstream_cpu else 0.0
    same_run = proxied.server_cpu.get(upstream, 0.0) / events_proxied
    ratio_same = proxied.server_cpu.get("proxy", 0.0) / events_proxied / same_run if same_run else 0.0
    print(f"  added first content: p50 {ms(added[0]).strip()} ms, p99 {ms(added[1]).strip()} ms; "
          f"proxy CPU per event = {ratio_same:.2f}x the {upstream} upstream's in the same window "
          f"({ratio:.2f}x its own serving the clients directly)")
    cores = os.cpu_count() or 1
    busy = max((sum(m.server_cpu.values()) + m.client_cpu) / m.seconds for m in (direct, proxied) if m.seconds) \
        if direct.seconds or proxied.seconds else 0.0
    if max(direct.load[1], proxied.load[1]) >= cores or busy >= 0.9 * cores:
        print(f"  (CPU-bound: the load average or the benchmark's own processes reach the {cores} cores, so "
              "first content waits in the run queue: these latencies measure queueing for CPU, not the proxy)")


@contextmanager
def many_servers(args: argparse.Namespace, scenario: dict[str, Any]) -> Iterator[tuple[Server, list[Server], str]]:
    """The many-streams run's upstream (``--upstream``) and a proxy in front of it (and one run
    from the ``--before`` checkout, in front of the same upstream), and the nonce that picks
    the answer (the mock's; any header for the raw upstream)."""
    port, proxy_port, before_port, relay_port = free_port(), free_port(), free_port(), free_port()
    if args.upstream == "mock":
        upstream_args = ["mock", "--host", "127.0.0.1", "--port", str(port), "--quiet"]
        health, script = "/_mock/health", None
    else:
        answer = tempfile.NamedTemporaryFile("w", suffix=".json", prefix="raw-upstream-", delete=False)
        with answer:
            json.dump({"events": answer_events(scenario), "paced": len(scenario["backend"]["frames"])}, answer)
        upstream_args = ["--port", str(port), "--answer", answer.name, "--delay-ms", f"{args.many_delay_ms:g}"]
        health, script = "/health", ROOT / "benchmarks" / "raw_upstream.py"
    proxy_args = proxy_command(args, port, proxy_port)
    print(f"upstream: {'toolcall-conformance' if script is None else 'python benchmarks/raw_upstream.py'} "
          f"{' '.join(upstream_args)}")
    print(f"proxy:    toolcall-conformance {' '.join(proxy_args)}")
    if args.before:
        print(f"before:   the same proxy command, run from {args.before}")
    try:
        with ExitStack() as stack:
            upstream = stack.enter_context(running(args.upstream, upstream_args, port, health, script=script))
            proxies = [stack.enter_context(running("proxy", proxy_args, proxy_port, "/health"))]
            if args.before:
                before_args = proxy_command(args, port, before_port)
                proxies.append(stack.enter_context(running("proxy", before_args, before_port, "/health",
                                                           cwd=args.before)))
            if args.byte_relay and script is not None:
                relay_args = ["--upstream", f"http://127.0.0.1:{port}/v1", "--port", str(relay_port)]
                proxies.append(stack.enter_context(running("proxy", relay_args, relay_port, "/health",
                                                           script=ROOT / "benchmarks" / "byte_relay.py")))
            yield upstream, proxies, arm(port, scenario) if script is None else "raw"
    finally:
        if script is not None:
            os.unlink(upstream_args[3])


async def read_whole(target: Target) -> tuple[str, list[str], bool]:
    """One untimed request: the answer's content, its calls' names, and whether it ended with ``[DONE]``."""
    connection = Connection(target)
    try:
        timing = await asyncio.wait_for(connection.stream(keep=True), REQUEST_TIMEOUT)
    finally:
        connection.close()
    return summarize(timing.body)


async def check_answer(target: Target, expected: str) -> None:
    """Before timing: the whole answer arrives, its content intact, ending with ``[DONE]``."""
    content, calls, done = await read_whole(target)
    if not done or calls or content != expected:
        raise RuntimeError(f"{target.label}: the many-streams answer came back changed: "
                           f"done={done}, calls={calls}, content={content[-80:]!r}")


async def measure_many(args: argparse.Namespace, upstream: Server, proxies: Sequence[Server], nonce: str,
                       scenario: dict[str, Any]) -> None:
    """Direct, then through the proxy; with ``--before``, then through the proxy of that checkout,
    and the proxy of this tree once more (so neither has the quieter end of the run to itself)."""
    body = request_body(scenario)
    direct = Target("direct", upstream.port, "/v1/chat/completions", nonce, body)
    proxied = [Target("proxy", proxy.port, "/v1/chat/completions", nonce, body) for proxy in proxies]
    for target in (direct, *proxied):
        await check_answer(target, "".join(scenario["backend"]["frames"]))
    events = len(answer_events(scenario))
    d = await many_streams(direct, args.many, args.many_seconds, args.warmup_many, [upstream])
    p = await many_streams(proxied[0], args.many, args.many_seconds, args.warmup_many, [upstream, proxies[0]])
    print_many(args, d, p, events, upstream.name)
    runs = [("before", 1), ("this tree, again", 0)] if args.before else []
    if len(proxies) > (2 if args.before else 1):
        runs.append(("byte relay (benchmarks/byte_relay.py)", len(proxies) - 1))
    for label, index in runs:
        again = await many_streams(proxied[index], args.many, args.many_seconds, args.warmup_many,
                                   [upstream, proxies[index]])
        print(f"  -- proxy: {label}")
        print_many(args, d, again, events, upstream.name)
    print()


async def measure(args: argparse.Namespace, mock: Server, proxy: Server) -> None:
    answers = {
        "text": (text_scenario(args.frames, 0.0), text_scenario(args.delay_frames, args.delay_ms)),
        "rescue": (rescue_scenario(args.frames, 0.0), rescue_scenario(args.delay_frames, args.delay_ms)),
    }
    for name, (burst, paced) in answers.items():
        pairs = []
        for scenario in (burst, paced):
            nonce = arm(mock.port, scenario)
            body = request_body(scenario)
            pairs.append((Target("direct", mock.port, "/v1/chat/completions", nonce, body),
                          Target("proxy", proxy.port, "/v1/chat/completions", nonce, body)))
        (direct, proxied), (direct_paced, proxied_paced) = pairs

        # Check once that both answer what they should, before timing anything.
        all_frames = burst["backend"]["frames"]
        expected = "".join(all_frames[: len(all_frames) - len(token_frames(CALL, 3))] if name == "rescue" else all_frames)
        for target in (direct, proxied):
            content, calls, done = await read_whole(target)
            if not done:
                raise RuntimeError(f"{target.label} answer to '{name}' does not end with [DONE]")
            if target is proxied and name == "rescue":
                if calls != ["get_weather"] or content.strip() != expected.strip():
                    raise RuntimeError(f"proxy did not rescue the call: calls={calls}, content={content[-80:]!r}")
            elif name == "text" and content != expected:
                raise RuntimeError(f"{target.label} answer to 'text' lost content")
        frames = len(burst["backend"]["frames"])
        chars = len("".join(burst["backend"]["frames"]))
        print(f"== '{name}' answer: {frames} frames, {chars} characters of content"
              + (", then a <tools> call rescued by the proxy" if name == "rescue" else ""))
        print()
        results = await latency(direct, proxied, args.requests, args.latency_seconds)
        print_latency("latency, frames with no delay (the answer comes as one burst)", results, "direct", "proxy")
        print()
        paced_frames = len(paced["backend"]["frames"])
        results = await latency(direct_paced, proxied_paced, max(5, args.requests // 4), args.latency_seconds)
        print_latency(f"latency, {paced_frames} frames {args.delay_ms:g} ms apart", results, "direct", "proxy")
        print()
        rows = []
        for clients in args.clients:
            d = await throughput(direct, clients, args.seconds, args.warmup, [mock])
            p = await throughput(proxied, clients, args.seconds, args.warmup, [mock, proxy])
            rows.append((clients, d, p))
        print_throughput(name, rows)
        print()


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a smoke run of a few seconds: tiny counts and windows")
    parser.add_argument("--frames", type=int, default=300, help="frames of the burst answers (default 300)")
    parser.add_argument("--delay-frames", type=int, default=20, help="frames of the paced answers (default 20)")
    parser.add_argument("--delay-ms", type=float, default=2.0, help="pause before each paced frame (default 2)")
    parser.add_argument("--requests", type=int, default=400, help="latency samples per target (default 400)")
    parser.add_argument("--latency-seconds", type=float, default=12.0, help="time cap of each latency run (default 12)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16, 64], help="concurrency levels (default 1 16 64)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measuring window per throughput cell (default 5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up before each window (default 1)")
    parser.add_argument("--proxy-log-level", default="info", help="the proxy's --log-level (default info)")
    parser.add_argument("--proxy-workers", type=int, default=1, help="the proxy's --workers (default 1)")
    parser.add_argument("--many", type=int, default=256, help="clients of the many-streams run (0: skip it; default 256)")
    parser.add_argument("--many-frames", type=int, default=40, help="frames of its paced answer (default 40)")
    parser.add_argument("--many-delay-ms", type=float, default=5.0, help="pause before each of them (default 5)")
    parser.add_argument("--many-seconds", type=float, default=10.0, help="its measuring window (default 10)")
    parser.add_argument("--warmup-many", type=float, default=2.0, help="time over which its clients start (default 2)")
    parser.add_argument("--only-many", action="store_true", help="run only the many-streams measurement")
    parser.add_argument("--before", type=Path, default=None,
                        help="a checkout whose proxy is measured too, in the many-streams run, in front of the same "
                             "upstream (after this tree's, then this tree's once more)")
    parser.add_argument("--upstream", choices=("raw", "mock"), default="raw",
                        help="the many-streams run's upstream: raw_upstream.py, the cheapest SSE server (default), "
                             "or the mock")
    parser.add_argument("--byte-relay", action="store_true",
                        help="also measure benchmarks/byte_relay.py (forwards bytes, parses nothing: the floor of "
                             "a relay's CPU) in front of the raw upstream, last")
    args = parser.parse_args(argv)
    if args.quick:
        args.frames, args.delay_frames, args.requests = min(args.frames, 60), min(args.delay_frames, 5), 10
        args.latency_seconds, args.seconds, args.warmup, args.clients = 2.0, 0.5, 0.2, [1, 4]
        args.many, args.many_frames, args.many_seconds, args.warmup_many = min(args.many, 8), 5, 0.5, 0.2
    return args


def proxy_command(args: argparse.Namespace, upstream_port: int, port: int) -> list[str]:
    """The proxy's arguments: listening on ``port``, in front of the upstream on ``upstream_port``."""
    return ["proxy", "--upstream", f"http://127.0.0.1:{upstream_port}/v1", "--host", "127.0.0.1",
            "--port", str(port), "--log-level", args.proxy_log_level, "--workers", str(args.proxy_workers)]


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"machine: {platform.platform()}, {cpu_model()}, {os.cpu_count()} cpus")
    print(f"python:  {platform.python_implementation()} {platform.python_version()}")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = time.perf_counter()
    if not (args.many and args.only_many):
        mock_port, proxy_port = free_port(), free_port()
        mock_args = ["mock", "--host", "127.0.0.1", "--port", str(mock_port), "--quiet"]
        proxy_args = proxy_command(args, mock_port, proxy_port)
        print(f"mock:    toolcall-conformance {' '.join(mock_args)}")
        print(f"proxy:   toolcall-conformance {' '.join(proxy_args)}")
        print()
        with running("mock", mock_args, mock_port, "/_mock/health") as mock, \
                running("proxy", proxy_args, proxy_port, "/health") as proxy:
            asyncio.run(measure(args, mock, proxy))
    if args.many:
        scenario = text_scenario(args.many_frames, args.many_delay_ms)
        with many_servers(args, scenario) as (upstream, proxies, nonce):
            print()
            asyncio.run(measure_many(args, upstream, proxies, nonce, scenario))
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
