"""The cheapest upstream an SSE relay can face: a yardstick for the proxy's CPU per event.

The mock backend plays scenarios (routing, validation, replay plans, uvicorn and Starlette);
what a relay should be compared with is what it costs just to put an answer's events on the
wire. This server is ``asyncio.start_server`` on uvloop (as uvicorn picks it) with nothing
else: it reads a request head and its ``Content-Length`` body, and answers every ``POST``
with one answer whose chunked SSE frames were encoded once at start, the head and first
event at once, then one content frame per timer tick (``--delay-ms``), then the finish,
usage and ``[DONE]`` events with the last chunk. ``GET`` of any path answers ``ok`` (the
benchmark's health check). Connections are kept alive, as an inference server keeps them.

The answer comes from a JSON file (``--answer``): ``{"events": [data, ...], "paced": n}``,
the ``data:`` payloads in order, of which events ``1 .. n`` are the paced content frames.
``proxy_overhead.py`` writes it with the same chunks the mock sends for its ``text``
answer (vLLM's chunk shape: ``logprobs``, ``stop_reason``, a usage chunk before
``[DONE]``), so the proxy relays the same bytes from either upstream.

Run: ``python benchmarks/raw_upstream.py --port 8100 --answer answer.json --delay-ms 5``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

RESPONSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
HEALTH = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
LAST_CHUNK = b"0\r\n\r\n"


def chunk(data: str) -> bytes:
    """One SSE event as one HTTP chunk, as uvicorn frames each write of a streamed body."""
    payload = f"data: {data}\n\n".encode()
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


@dataclass(frozen=True)
class Answer:
    """The answer's bytes, cut where the timer ticks: ``opening`` with the head, one of
    ``paced`` per tick, ``closing`` with the last chunk."""

    opening: bytes
    paced: tuple[bytes, ...]
    closing: bytes

    @classmethod
    def of(cls, events: Sequence[str], paced: int) -> Answer:
        chunks = [chunk(data) for data in events]
        return cls(RESPONSE_HEAD + b"".join(chunks[:1]), tuple(chunks[1 : paced + 1]),
                   b"".join(chunks[paced + 1 :]) + LAST_CHUNK)


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: Answer,
                           delay: float) -> None:
    """Answer requests on one connection until the client closes it."""
    sleep, write = asyncio.sleep, writer.write
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = content_length(head)
            if length:
                await reader.readexactly(length)
            if not head.startswith(b"POST "):
                write(HEALTH)
                continue
            write(answer.opening)
            for frame in answer.paced:
                if delay:
                    await sleep(delay)
                write(frame)
            write(answer.closing)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(port: int, answer: Answer, delay: float) -> None:
    server = await asyncio.start_server(lambda r, w: serve_connection(r, w, answer, delay), "127.0.0.1", port,
                                        backlog=1024)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        await stop.wait()


def run(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--port", type=int, required=True, help="the 127.0.0.1 port to listen on")
    parser.add_argument("--answer", type=Path, required=True, help='JSON file: {"events": [...], "paced": n}')
    parser.add_argument("--delay-ms", type=float, default=5.0, help="pause before each paced frame (default 5)")
    args = parser.parse_args(argv)
    spec = json.loads(args.answer.read_text())
    answer = Answer.of(spec["events"], spec["paced"])
    try:
        import uvloop
    except ImportError:  # plain asyncio: still minimal, a little dearer per event
        asyncio.run(serve(args.port, answer, args.delay_ms / 1000))
    else:
        uvloop.run(serve(args.port, answer, args.delay_ms / 1000))


if __name__ == "__main__":
    run()
