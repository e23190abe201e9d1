"""Lockstep release: several streamed answers advance one event at a time, together.

Runs armed in one lockstep group write event k of every answer before event k+1 of
any, so the interleaving a proxy sees across its concurrent requests is the same on
every run: frame k of each exchange reaches the proxy, then frame k+1. A proxy whose
requests share state mixes them in that order each time, which makes the failure
reproducible instead of a matter of scheduling.

Every member of a group pauses ``pause`` seconds after each step is released, before
writing that step's event: time for the proxy to take in what the step sent, so that
its handling of the answers interleaves as their events do (without it, a proxy that
reads fast enough sees each answer's events already queued and may handle one answer
whole before the next).

A group waits for its members to arrive at each step. A member whose stream ends
(finished, dropped, or its client hung up) leaves the group, so the others never wait
for it again. A step nobody completes within ``patience`` seconds (a proxy that holds
back one request until another one is finished, say) releases the group for good:
the answers then flow freely, and ``broken`` says it happened.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PATIENCE = 2.0  # seconds one step may wait for the slowest member
MAX_GROUPS = 1_000  # beyond this the oldest group is forgotten (its runs keep their own reference)


@dataclass(eq=False)
class Lockstep:
    """One group of ``size`` streamed answers released event by event together."""

    name: str
    size: int
    patience: float = DEFAULT_PATIENCE
    pause: float = 0.0
    broken: bool = False
    _arrived: dict[int, int] = field(default_factory=dict)
    _left_before: list[int] = field(default_factory=list)  # for each member that left: the step it never reached
    _changed: asyncio.Event | None = None

    def _ready(self, step: int) -> bool:
        gone = sum(1 for s in self._left_before if s <= step)
        return self.broken or self._arrived.get(step, 0) + gone >= self.size

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    async def step(self, step: int) -> None:
        """Arrive at ``step`` and return once every member has arrived there (or left)."""
        self._arrived[step] = self._arrived.get(step, 0) + 1
        self._wake()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.patience
        try:
            await self._released(step, loop, deadline)
        finally:
            if self.pause > 0:
                await asyncio.sleep(self.pause)

    async def _released(self, step: int, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        while not self._ready(step):
            if self._changed is None:
                self._changed = asyncio.Event()
            changed = self._changed
            remaining = deadline - loop.time()
            if remaining <= 0:
                self.broken = True
                self._wake()
                return
            try:
                await asyncio.wait_for(changed.wait(), remaining)
            except TimeoutError:
                continue

    def leave(self, next_step: int) -> None:
        """A member's stream ended before arriving at ``next_step``."""
        self._left_before.append(next_step)
        self._wake()


class LockstepGroups:
    """The groups of a mock, by name; a group is made by the first run armed in it."""

    def __init__(self) -> None:
        self._groups: OrderedDict[str, Lockstep] = OrderedDict()
        self._lock = threading.Lock()

    def join_spec(self, spec: Any) -> tuple[Lockstep | None, str | None]:
        """The group ``{"group": NAME, "size": N[, "patience": S][, "pause": S]}`` asks a run to join,
        or what is wrong with the ask (the control API's words, whoever arms the run)."""
        if not isinstance(spec, dict) or not isinstance(spec.get("group"), str) or not spec["group"]:
            return None, ('"lockstep" must be {"group": <name>, "size": <members>} (optionally "patience" and '
                          '"pause", in seconds)')
        size, patience, pause = spec.get("size"), spec.get("patience", DEFAULT_PATIENCE), spec.get("pause", 0.0)
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 1024:
            return None, '"lockstep.size" must be an integer from 1 to 1024'
        if not isinstance(patience, (int, float)) or isinstance(patience, bool) or not 0 < patience <= 600:
            return None, '"lockstep.patience" must be a number of seconds above 0 and at most 600'
        if not isinstance(pause, (int, float)) or isinstance(pause, bool) or not 0 <= pause <= 10:
            return None, '"lockstep.pause" must be a number of seconds from 0 to 10'
        return self.join(spec["group"], size, float(patience), float(pause)), None

    def join(self, name: str, size: int, patience: float = DEFAULT_PATIENCE, pause: float = 0.0) -> Lockstep:
        with self._lock:
            group = self._groups.get(name)
            if group is None or (group.size, group.patience, group.pause) != (size, patience, pause):
                group = self._groups[name] = Lockstep(name, size, patience, pause)
                while len(self._groups) > MAX_GROUPS:
                    self._groups.popitem(last=False)
            return group
