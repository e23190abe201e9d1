"""How much of what the mock wrote the proxy has read, asked of the kernel.

The mock tears an event into writes so that a proxy's reader gets each in a read of its
own. A write that arrives before the proxy has read the last one is read together with it,
so the next write must wait until the proxy has read. A fixed pause only makes that likely
(and is most of an answer's time when an event is torn into hundreds of writes); when the
proxy's end of the connection is a socket on this host, Linux says exactly how many bytes
that socket has received and how many of them still wait to be read (``sock_diag``, the
interface ``ss`` uses: https://man7.org/linux/man-pages/man7/sock_diag.7.html), so the mock
writes the next piece as soon as the last one was read (and at the latest after the pause, as
before). Elsewhere (another host, another network namespace, another system) the socket is not
found and the mock pauses as before.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import struct
import sys
import time
from dataclasses import dataclass

# linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h
_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NLMSG_ERROR = 2
_INET_DIAG_INFO = 2  # the extension carrying the socket's struct tcp_info
_NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBxI")  # inet_diag_req_v2: family, protocol, extensions, states
_PORTS = struct.Struct("!HH")  # inet_diag_sockid: source and destination port, network order
_TAIL = struct.Struct("=III")  # inet_diag_sockid: interface, cookie
_QUEUES = struct.Struct("=II")  # inet_diag_msg: receive queue, write queue (after family..sockid, expires)
_QUEUES_AT = 4 + 48 + 4
_MESSAGE_SIZE = 72  # inet_diag_msg
_ATTR = struct.Struct("=HH")  # rtattr: length, type
_BYTES_RECEIVED_AT = 128  # tcp_info.tcpi_bytes_received (Linux 4.1 and later)


@dataclass(frozen=True, slots=True)
class Progress:
    """What one TCP socket has received in all, and how much of it its reader has not read yet."""

    received: int
    unread: int


def _address(host: str) -> tuple[int, bytes] | None:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return None
    if ip.version == 4:
        return socket.AF_INET, ip.packed + bytes(12)
    return socket.AF_INET6, ip.packed


class PeerSocket:
    """The proxy's end of one connection to the mock, found by the connection's two addresses
    (``local``: the proxy's, ``remote``: the mock's), on Linux only."""

    def __init__(self, local: tuple[str, int], remote: tuple[str, int]) -> None:
        mine, theirs = _address(local[0]), _address(remote[0])
        self._request: bytes | None = None
        self._netlink: socket.socket | None = None
        if sys.platform != "linux" or mine is None or theirs is None or mine[0] != theirs[0]:
            return
        family = mine[0]
        body = (_REQUEST.pack(family, socket.IPPROTO_TCP, 1 << (_INET_DIAG_INFO - 1), 0xFFFFFFFF)
                + _PORTS.pack(local[1], remote[1]) + mine[1] + theirs[1] + _TAIL.pack(0, _NO_COOKIE, _NO_COOKIE))
        self._request = _HEADER.pack(_HEADER.size + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + body

    def progress(self) -> Progress | None:
        """The socket's progress now; None when it is not a socket of this host the kernel can tell of."""
        if self._request is None:
            return None
        try:
            if self._netlink is None:
                self._netlink = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)
            self._netlink.send(self._request)
            answer = self._netlink.recv(4096)
        except OSError:
            self.close()
            self._request = None
            return None
        return _parse(answer)

    def close(self) -> None:
        if self._netlink is not None:
            self._netlink.close()
            self._netlink = None


def _parse(answer: bytes) -> Progress | None:
    if len(answer) < _HEADER.size:
        return None
    length, kind = _HEADER.unpack_from(answer)[:2]
    if kind == _NLMSG_ERROR or kind != _SOCK_DIAG_BY_FAMILY or length < _HEADER.size + _MESSAGE_SIZE:
        return None
    unread = _QUEUES.unpack_from(answer, _HEADER.size + _QUEUES_AT)[0]
    at = _HEADER.size + _MESSAGE_SIZE
    while at + _ATTR.size <= length:
        size, attr = _ATTR.unpack_from(answer, at)
        if size < _ATTR.size:
            return None
        if attr == _INET_DIAG_INFO and size >= _ATTR.size + _BYTES_RECEIVED_AT + 8:
            (received,) = struct.unpack_from("=Q", answer, at + _ATTR.size + _BYTES_RECEIVED_AT)
            return Progress(received, unread)
        at += (size + 3) & ~3
    return None


class ReadWait:
    """Waits between the writes of one torn event until the proxy has read every byte written so
    far, or ``pause`` has passed, whichever comes first: never longer than the fixed pause, and
    as soon as the proxy keeps up. Polled on the event loop (each poll one system call), a few
    turns apart, then a millisecond apart. A proxy whose socket the kernel cannot show gets the
    fixed pause."""

    def __init__(self, peer: PeerSocket | None, pause: float) -> None:
        self._peer = peer
        self._pause = pause
        self._seen: Progress | None = None  # the proxy had read everything up to here
        self._pending = 0  # bytes written since (at least: the HTTP chunk framing is not counted)

    def close(self) -> None:
        if self._peer is not None:
            self._peer.close()

    @property
    def watching(self) -> bool:
        """Whether the proxy's reads are known (else the caller pauses as it did without this)."""
        return self._peer is not None

    def start(self) -> None:
        """Before the first write of a torn event: where the proxy's count stands."""
        if self._peer is not None:
            self._seen, self._pending = self._peer.progress(), 0
            if self._seen is None:
                self._give_up()

    def wrote(self, count: int) -> None:
        """``count`` bytes of the answer were just written."""
        self._pending += count

    async def wait(self) -> None:
        """Return once the proxy has read what was written since ``start``, or after the pause."""
        peer, seen = self._peer, self._seen
        if peer is None or seen is None:
            await asyncio.sleep(self._pause)
            return
        target, until = seen.received + self._pending, time.monotonic() + self._pause
        turn = 0
        while True:
            now = peer.progress()
            if now is None:
                self._give_up()
                return
            if now.received >= target and now.unread == 0:
                self._seen, self._pending = now, 0
                return
            left = until - time.monotonic()
            if left <= 0:
                break
            # A turn of the loop, then a whole timer tick (a shorter sleep is no timer at all on
            # uvloop: polls would spin through the rest of the pause).
            await asyncio.sleep(0 if turn < _TURNS else min(self._pause, _POLL))
            turn += 1
        # Written anyway, as the pause would have: counted from here.
        self._seen, self._pending = peer.progress(), 0
        if self._seen is None:
            self._give_up()

    def _give_up(self) -> None:
        self.close()
        self._peer, self._seen = None, None


_TURNS = 3  # polls a turn of the event loop apart, before polls a millisecond apart
_POLL = 0.001


__all__ = ["PeerSocket", "Progress", "ReadWait"]
