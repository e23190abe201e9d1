"""The mock's torn writes reach the proxy as reads of their own: the next write of a torn event
waits until the proxy's socket has been read (asked of the kernel), at most the pause between
writes. With a pause far longer than any read takes, the tear is exact whatever the proxy's pace,
and the answer still comes at once: only the reads end the waits."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time

import pytest
from support.mock_chat import make_scenario
from support.mock_server import Mock, shared  # noqa: F401  (a fixture)

from harness.core.dialects.clients import DEFAULT_PROFILE
from harness.core.nonce import NONCE_HEADER
from harness.core.replay import wire
from harness.run.embedded import EmbeddedServers
from harness.run.proxy_client import run_exchange
from mock_backends.control import MockControl
from mock_backends.peer_reads import PeerSocket, Progress, ReadWait

linux = pytest.mark.skipif(sys.platform != "linux", reason="the kernel's socket diagnostics are Linux's")
LONG_PAUSE = 3600.0  # seconds: a wait this long would time the test out, so only a read ends one


@pytest.fixture
def long_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torn writes pause an hour unless the proxy has read (the mock serves in this process)."""
    monkeypatch.setattr(wire, "SPLIT_PAUSE", LONG_PAUSE)


def _until(check: PeerSocket, wanted: Progress) -> Progress | None:
    """The socket's progress once it is ``wanted`` (or the last seen after a generous limit)."""
    deadline, seen = time.monotonic() + 10, check.progress()
    while seen != wanted and time.monotonic() < deadline:
        seen = check.progress()
    return seen


@linux
def test_progress_counts_what_a_socket_received_and_what_it_has_not_read() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()) as reader:
            writer, _ = server.accept()
            with writer:
                peer = PeerSocket(reader.getsockname(), writer.getsockname())
                try:
                    assert peer.progress() == Progress(received=0, unread=0)
                    writer.sendall(b"hello")
                    assert _until(peer, Progress(5, 5)) == Progress(5, 5)
                    assert reader.recv(3) == b"hel"
                    assert peer.progress() == Progress(5, 2)
                    assert reader.recv(10) == b"lo"
                    assert peer.progress() == Progress(5, 0)
                finally:
                    peer.close()


@pytest.mark.parametrize("local, remote", [
    (("127.0.0.1", 1), ("127.0.0.1", 2)),  # no such connection
    (("localhost", 1), ("127.0.0.1", 2)),  # not an address
    (("::1", 1), ("127.0.0.1", 2)),  # not one family
])
def test_a_socket_the_kernel_does_not_show_has_no_progress(local: tuple[str, int], remote: tuple[str, int]) -> None:
    peer = PeerSocket(local, remote)
    assert peer.progress() is None
    peer.close()


@linux
def test_a_wait_ends_when_the_reader_has_read_what_was_written() -> None:
    async def play(writer: socket.socket, reader: socket.socket) -> None:
        waits = ReadWait(PeerSocket(reader.getsockname(), writer.getsockname()), LONG_PAUSE)
        try:
            assert waits.watching
            waits.start()
            writer.sendall(b"abc")
            waits.wrote(3)
            waiting = asyncio.ensure_future(waits.wait())
            for _ in range(10):  # the polls a turn apart are over: it waits a millisecond apart
                await asyncio.sleep(0)
            assert not waiting.done()
            assert reader.recv(10) == b"abc"
            await asyncio.wait_for(waiting, timeout=30)
        finally:
            waits.close()

    with socket.create_server(("127.0.0.1", 0)) as server:
        with socket.create_connection(server.getsockname()) as reader:
            writer, _ = server.accept()
            with writer:
                asyncio.run(play(writer, reader))


def test_without_the_proxys_socket_a_wait_is_the_pause() -> None:
    waits = ReadWait(PeerSocket(("127.0.0.1", 1), ("127.0.0.1", 2)), 0.0)
    waits.start()
    assert not waits.watching
    asyncio.run(waits.wait())
    waits.close()


def _chunk_starts(response: bytes) -> list[int]:
    """Where each chunk of the response's chunked body begins (one per write of the mock)."""
    at = response.index(b"\r\n\r\n") + 4
    starts = []
    while True:
        starts.append(at)
        end = response.index(b"\r\n", at)
        size = int(response[at:end], 16)
        if size == 0:
            return starts
        at = end + 2 + size + 2


def _event_starts(response: bytes) -> set[int]:
    """The chunks that begin an event (the first after the head, and each after one ending a blank line)."""
    starts, firsts, data = _chunk_starts(response), set(), b""
    for at, nxt in zip(starts, starts[1:]):
        if not data or data.endswith(b"\n\n"):
            firsts.add(at)
        end = response.index(b"\r\n", at)
        data += response[end + 2:nxt - 2]
    return firsts


def _read_slowly(port: int, nonce: str, body: bytes, busy: float) -> list[bytes]:
    """A reader that, like a proxy parsing what it got, is busy for ``busy`` s after each read."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\n"
                     b"Connection: close\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s"
                     % (NONCE_HEADER.encode(), nonce.encode(), len(body), body))
        reads = []
        while chunk := sock.recv(65536):
            reads.append(chunk)
            until = time.perf_counter() + busy
            while time.perf_counter() < until:
                pass
    return reads


@linux
@pytest.mark.parametrize("how", [{"write_bytes": 2}, {"write_bytes": 5, "split_multibyte": True}])
def test_every_torn_write_is_a_read_of_its_own_for_a_slow_reader(
        shared: Mock, how: dict[str, object], long_pause: None) -> None:  # noqa: F811
    url, control, _ = shared
    scenario = make_scenario("torn", ["Grüße"], **how)
    nonce = control.arm(scenario)
    body = json.dumps(scenario.client.request).encode()
    reads = _read_slowly(int(url.rsplit(":", 1)[1]), nonce, body, busy=0.001)
    response = b"".join(reads)
    starts = _chunk_starts(response)
    boundaries, at = set(), 0
    for chunk in reads:
        boundaries.add(at)
        at += len(chunk)
    # Each event's first write follows the last of the one before without a wait; the rest are torn.
    torn = [s for s in starts[:-1] if s not in _event_starts(response)]
    assert len(torn) > 20
    assert [s for s in torn if s not in boundaries] == []
    control.finish(nonce)


@linux
def test_the_reference_proxy_reads_each_torn_write_alone(monkeypatch: pytest.MonkeyPatch, long_pause: None) -> None:
    """As ``fuzz`` plays a torn case: the mock, the reference proxy and the client in one process
    (under one interpreter lock). The proxy reads upstream through asyncio streams; every read
    it makes is kept, and each torn write of the mock must begin a read of its own."""
    reads: list[bytes] = []
    read = asyncio.StreamReader.read

    async def kept(self: asyncio.StreamReader, n: int = -1) -> bytes:
        data = await read(self, n)
        reads.append(data)
        return data

    monkeypatch.setattr(asyncio.StreamReader, "read", kept)
    scenario = make_scenario("torn-through-proxy", ["Grüße"], write_bytes=2)
    with EmbeddedServers() as urls, MockControl(urls.mock_url) as mock:
        assert urls.proxy_url is not None
        exchange = run_exchange(scenario, proxy_url=urls.proxy_url, mock=mock, stream=True, profile=DEFAULT_PROFILE,
                                model=None, proxy_headers={}, timeout=30)
    assert exchange.status == 200 and "Grüße".encode() in exchange.raw
    upstream = b"".join(reads)
    starts = _chunk_starts(upstream[upstream.index(b"HTTP/1.1 200"):])
    offset = upstream.index(b"HTTP/1.1 200")
    boundaries, at = set(), 0
    for chunk in reads:
        boundaries.add(at - offset)
        at += len(chunk)
    torn = [s for s in starts[:-1] if s not in _event_starts(upstream[offset:])]
    assert len(torn) > 20
    assert [s for s in torn if s not in boundaries] == []
