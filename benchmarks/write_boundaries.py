"""Whether the mock's torn writes reach a peer as reads of their own, by the pause between them.

    python benchmarks/write_boundaries.py [--runs 3] [--writes 300]    (--quick: a smoke run)

The mock tears an event into writes of ``write_bytes`` and pauses ``write_delay_ms`` between
them (1 ms unless a scenario says otherwise), so that a proxy reads a character of three
bytes in three reads. A peer that has not read the last write when the next one arrives
reads both at once. This plays one event torn into 1-byte writes, with several pauses, to a
reader in another process that counts its ``recv`` calls (a read of the response head and
the last chunk included): only the pauses that keep one read per write keep the tear.
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import time
from multiprocessing.connection import Connection

from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.run.servers import serve
from mock_backends.app import create_app
from mock_backends.control import MockControl

PAUSES_MS = (1.0, 0.5, 0.2, 0.0)


def case(text_bytes: int, pause_ms: float) -> Scenario:
    text = "x" * text_bytes
    return parse_scenario({"id": "bench", "title": "bench", "family": "bench", "source": "benchmark",
                           "backend": {"dialect": "openai", "frames": [{"content": text}], "write_bytes": 1,
                                       "write_delay_ms": pause_ms},
                           "client": {"request": {"model": "m", "stream": True,
                                                  "messages": [{"role": "user", "content": "hi"}]}},
                           "expect": {"tool_calls": []}}, where="bench")


def reader(port: int, results: Connection) -> None:
    """In its own process, as a proxy is: one request, then ``recv`` until the stream ends."""
    body = b'{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        reads, data, start = 0, b"", time.perf_counter()
        while chunk := sock.recv(65536):
            reads += 1
            data += chunk
        results.send((reads, _writes(data), time.perf_counter() - start))


def _writes(response: bytes) -> int:
    """The body's chunks: one per write of the mock (the last, empty one left out)."""
    body, count = response.partition(b"\r\n\r\n")[2], 0
    while body:
        size, _, rest = body.partition(b"\r\n")
        length = int(size, 16)
        if length == 0:
            break
        count += 1
        body = rest[length + 2:]
    return count


def one(port: int) -> tuple[int, int, float]:
    ours, theirs = multiprocessing.Pipe()
    process = multiprocessing.get_context("fork").Process(target=reader, args=(port, theirs))
    process.start()
    got: tuple[int, int, float] = ours.recv()
    process.join()
    return got


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--text", type=int, default=100, help="characters of the answer's text")
    parser.add_argument("--quick", action="store_true", help="one run of 10 characters: a smoke run")
    args = parser.parse_args()
    runs, text = (1, 10) if args.quick else (args.runs, args.text)
    print(f"an answer of {text} characters, every event in 1-byte writes; what a peer in another process reads")
    with serve(create_app()) as mock, MockControl(mock.url) as control:
        for pause in PAUSES_MS:
            seen = []
            for _ in range(runs):
                control.arm(case(text, pause))
                seen.append(one(mock.port))
            print(f"  write_delay_ms {pause:3g}: " + "; ".join(f"{writes} writes in {reads} reads, {s:.3f} s"
                                                           for reads, writes, s in seen))


if __name__ == "__main__":
    main()
