"""Dialect-neutral pieces of a replayed stream: events, and how each is cut into network writes.

A proxy's stream parser must cope with an event arriving in several reads, or a
UTF-8 character split between two reads. The mock produces exactly those cuts on
demand, so the cut positions are computed once per scenario, never per write.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NON_ASCII = re.compile(rb"[\x80-\xff]")

SPLIT_PAUSE = 0.001  # default seconds between the writes of one cut event, so they leave separately


@dataclass(frozen=True, slots=True)
class Event:
    """One event's bytes as they go on the wire."""

    data: bytes
    delay: float = 0.0  # seconds to wait before sending it
    cut: int | None = None  # offset just past the lead byte of its first multi-byte character


def multibyte_cut(data: bytes) -> int | None:
    """Where to cut ``data`` so that its first multi-byte UTF-8 character is split in two."""
    if data.isascii():
        return None
    match = _NON_ASCII.search(data)
    return None if match is None else match.start() + 1


def writes(event: Event, *, write_bytes: int | None, split_multibyte: bool) -> list[bytes]:
    """The network writes that carry ``event``: cut inside its first multi-byte character
    (when asked and there is one), then every part in writes of at most ``write_bytes``."""
    data = event.data
    parts = [data[: event.cut], data[event.cut :]] if split_multibyte and event.cut is not None else [data]
    if write_bytes is None or write_bytes <= 0:
        return parts
    return [part[i : i + write_bytes] for part in parts for i in range(0, len(part), write_bytes)]
