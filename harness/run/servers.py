"""Run an ASGI app under uvicorn on a real loopback socket, in a background thread.

One mechanism for everything that needs a live server: the test fixtures, the
pytest plugin's embedded mock and reference proxy, the CLI and the benchmarks.
Binding the socket ourselves gives a free port with no race, and the context
manager always stops the server, also when the body raises.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn

from harness.core.errors import ConformanceError


# A safety net, not a margin: a server starts in milliseconds, and a loaded machine only delays it.
STARTUP_LIMIT = 60.0


@dataclass(frozen=True)
class RunningServer:
    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def bind_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.set_inheritable(True)
    return sock


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound, listening TCP socket for a command-line server (any address family ``host`` names),
    with the TCP protocol number given, because asyncio only sets TCP_NODELAY on such
    sockets: without it every response pays a ~40 ms delayed-ACK stall."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listening from here on: a client that connects once the address is printed waits in
        # the backlog until the server accepts, instead of being refused.
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@contextmanager
def serve(app: Any, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning") -> Iterator[RunningServer]:
    """Serve ``app`` until the block ends; yields where it listens."""
    sock = bind_socket(host, port)
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False, timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"uvicorn:{port}")
    thread.start()
    try:
        deadline = time.monotonic() + STARTUP_LIMIT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise ConformanceError(f"server on {host}:{sock.getsockname()[1]} did not start")
            time.sleep(0.005)
        yield RunningServer(host, sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=5)
        if thread.is_alive():
            server.force_exit = True
            thread.join(timeout=2)
        sock.close()
