"""One text stream run through the rescuer, folded into what a response writer needs:
visible text and whole calls, in the order they occurred; and the record of the calls
an answer delivered.

The rescuer speaks in events (text, call start, argument fragments, call end); a
writer that delivers each call as one piece (the Messages paths) wants the call
only once it is whole. ``TextRescue`` does that folding, and without declared tools
it lets the text through untouched. ``Deliveries`` decides whether a call is new or a
copy of one from the other source, and counts both for the request's log line.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from reference_proxy.dedup import CallLedger
from reference_proxy.pipeline import ResponseStats, RescuerLike
from reference_proxy.rescue import ArgumentsDelta, Event, ToolCallEnd, ToolCallStart

log = logging.getLogger("reference_proxy.rescue")


@dataclass(frozen=True, slots=True)
class WholeCall:
    """A rescued call, complete."""

    name: str
    arguments: str  # JSON object text; "{}" for a call without arguments


Piece = str | WholeCall


class TextRescue:
    """Feed text as it arrives; get back text and whole calls (text that could still
    start a marker is held by the rescuer until it can tell)."""

    __slots__ = ("_rescuer", "_name", "_parts", "overflow_reported")

    def __init__(self, rescuer: RescuerLike | None) -> None:
        self._rescuer = rescuer
        self._name: str | None = None
        self._parts: list[str] = []
        self.overflow_reported = False  # set by the owner once it has logged the overflow

    @property
    def overflowed(self) -> bool:
        return self._rescuer is not None and self._rescuer.overflowed

    def feed(self, text: str) -> list[Piece]:
        if self._rescuer is None:
            return [text] if text else []
        return self._fold(self._rescuer.feed(text))

    def finish(self) -> list[Piece]:
        """The end of the text: held text is released; a call whose end never came is dropped."""
        if self._rescuer is None:
            return []
        out = self._fold(self._rescuer.finish())
        if self._name is not None:
            log.warning("dropped rescued call %s: its end never came", self._name)
            self._name, self._parts = None, []
        return out

    def _fold(self, events: Sequence[Event]) -> list[Piece]:
        out: list[Piece] = []
        for event in events:
            if isinstance(event, str):
                if not event:
                    continue
                if out and isinstance(out[-1], str):
                    out[-1] += event
                else:
                    out.append(event)
            elif isinstance(event, ToolCallStart):
                self._name, self._parts = event.name, []
            elif isinstance(event, ArgumentsDelta):
                self._parts.append(event.fragment)
            elif isinstance(event, ToolCallEnd) and self._name is not None:
                arguments = "".join(self._parts)
                out.append(WholeCall(self._name, arguments if arguments.strip() else "{}"))
                self._name, self._parts = None, []
        return out


class Deliveries:
    """The calls of one answer, rescued and native, each copy from one source cancelling
    one copy from the other (``dedup.CallLedger``)."""

    __slots__ = ("_ledger", "stats", "count")

    def __init__(self, stats: ResponseStats) -> None:
        self._ledger = CallLedger()
        self.stats = stats
        self.count = 0  # calls delivered

    def rescued(self, name: str, arguments: str) -> bool:
        """Whether a rescued call is delivered (False: the same call already came natively)."""
        return self._counted(self._ledger.admit_rescued(name, arguments), "rescued", name,
                             "dropped rescued call %s: the same call already came natively")

    def native(self, name: str, arguments: str) -> bool:
        """Whether a native call is delivered (False: the same call was already rescued)."""
        return self._counted(self._ledger.admit_native(name, arguments if arguments.strip() else "{}"), "native",
                             name, "dropped native call %s: the same call was already rescued from the text")

    def _counted(self, admitted: bool, kind: str, name: str, dropped: str) -> bool:
        """Count a call the ledger admitted (as ``kind``) or dropped as a duplicate."""
        if admitted:
            setattr(self.stats, kind, getattr(self.stats, kind) + 1)
            self.count += 1
        else:
            self.stats.duplicates += 1
            log.info(dropped, name)
        return admitted
