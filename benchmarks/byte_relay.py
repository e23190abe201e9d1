"""The floor of an SSE relay's CPU: a relay that forwards the upstream's bytes and does nothing else.

``proxy_overhead.py --byte-relay`` puts it in front of the same upstream as the proxy, so the
CPU per event of the many-streams run shows how much of the proxy's cost any relay pays (a
socket read from the upstream and a write to the client per event, the event loop's wake-ups)
and how much is the proxy's own work (HTTP parsing and framing, the ASGI and httpx layers, SSE
decoding, the pipeline). It is ``asyncio.start_server`` on uvloop (as uvicorn picks it): per
client connection, one keep-alive connection to the upstream; each request's head and
``Content-Length`` body go to the upstream as they came, and the answer's bytes come back as
each read brings them, until the chunked body's last chunk. ``GET`` answers ``ok`` (the
benchmark's health check). Only for the raw upstream's answers (``raw_upstream.py``:
chunked, keep-alive); not a proxy.

Run: ``python benchmarks/byte_relay.py --upstream http://127.0.0.1:8100/v1 --port 8200``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from urllib.parse import urlsplit

import uvloop

HEALTH = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
LAST_CHUNK = b"0\r\n\r\n"  # a chunk's data is an SSE event ending in a blank line, so no chunk ends like this


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, upstream_host: str, upstream_port: int) -> None:
    upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            body = await reader.readexactly(content_length(head))
            if head.startswith(b"GET"):
                writer.write(HEALTH)
                continue
            if upstream is None:
                upstream = await asyncio.open_connection(upstream_host, upstream_port)
            answer, asked = upstream
            asked.write(head + body)
            writer.write(await answer.readuntil(b"\r\n\r\n"))
            tail = b""
            while tail != LAST_CHUNK:
                data = await answer.read(65536)
                if not data:
                    return
                writer.write(data)
                await writer.drain()
                tail = (tail + data)[-len(LAST_CHUNK):]
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()
        if upstream is not None:
            upstream[1].close()


async def serve(host: str, port: int, upstream: str) -> None:
    parts = urlsplit(upstream)
    upstream_host, upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
    server = await asyncio.start_server(lambda r, w: relay(r, w, upstream_host, upstream_port), host, port)
    async with server:
        await server.serve_forever()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--upstream", required=True, help="the upstream's base URL (only its host and port count)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    uvloop.run(serve(args.host, args.port, args.upstream))


if __name__ == "__main__":
    main()
