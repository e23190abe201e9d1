"""Broken proxies that pass every hand-written scenario and that only generated cases
catch (``tests/generate/test_fuzz.py`` proves both halves).

Each breaks on a combination the library's authors did not write and the re-chunking
strategies do not reach: a frame ending at one particular offset inside an opener, a
UTF-8 character torn across three network reads (re-chunking tears one in two), an
integer-looking string inside a nested object.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from mutants.base import Mutant, parse_event, with_parts
from mutants.openai import with_rescuer
from reference_proxy.parts import Parts
from reference_proxy.rescue import ArgumentsDelta, Event, Rescuer, ToolCallEnd, ToolSpec


class LosesSplitOpener:
    """A rescuer whose opener matcher forgets a partial ``<tool_call>`` when a frame ends
    right after ``<tool_cal``: the nine characters are lost and the rest leaks as text."""

    PREFIX = "<tool_cal"

    def __init__(self, tools: Sequence[ToolSpec], buffer_cap: int) -> None:
        self.inner = Rescuer(tools, buffer_cap=buffer_cap)

    @property
    def overflowed(self) -> bool:
        return self.inner.overflowed

    def feed(self, text: str) -> list[Event]:
        if text.endswith(self.PREFIX):
            text = text[: -len(self.PREFIX)]
        return self.inner.feed(text)

    def finish(self) -> list[Event]:
        return self.inner.finish()


_INTEGER = re.compile(r"-?[0-9]+")


def _retype_nested(value: Any, depth: int) -> Any:
    """Integer-looking strings become integers, below the top level only."""
    if isinstance(value, dict):
        return {k: _retype_nested(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_retype_nested(v, depth + 1) for v in value]
    if depth > 1 and isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    return value


class RetypesNestedIntegers:
    """A rescuer that 'types' arguments once more and turns an integer-looking string
    into a number when it sits inside a nested object or array (top-level strings are
    left alone, as every hand-written typing case checks them there)."""

    def __init__(self, tools: Sequence[ToolSpec], buffer_cap: int) -> None:
        self.inner = Rescuer(tools, buffer_cap=buffer_cap)
        self.held: dict[int, list[str]] = {}

    @property
    def overflowed(self) -> bool:
        return self.inner.overflowed

    def _events(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if isinstance(event, ArgumentsDelta):
                self.held.setdefault(event.index, []).append(event.fragment)
                continue
            if isinstance(event, ToolCallEnd):
                joined = "".join(self.held.pop(event.index, []))
                try:
                    joined = json.dumps(_retype_nested(json.loads(joined), 0), ensure_ascii=False)
                except ValueError:
                    pass
                out.append(ArgumentsDelta(event.index, joined))
            out.append(event)
        return out

    def feed(self, text: str) -> list[Event]:
        return self._events(self.inner.feed(text))

    def finish(self) -> list[Event]:
        return self._events(self.inner.finish())


async def events_losing_three_way_tears(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
    """The upstream's SSE events (a list per read), decoded read by read with a decoder that waits one
    read for the rest of a character cut between reads, and drops the character when
    it is still incomplete after that read (it spans three or more)."""
    pending = b""
    skip = False  # the next read starts with the rest of a dropped character
    buffer = ""
    async for piece in response.aiter_bytes():
        if skip:
            piece = piece.lstrip(_CONTINUATION)
            skip = not piece  # a read holding only the dropped character's bytes
        data = pending + piece
        try:
            text, pending = data.decode("utf-8"), b""
        except UnicodeDecodeError as exc:
            if exc.reason != "unexpected end of data":
                raise
            text = data[: exc.start].decode("utf-8")
            if pending and exc.start == 0:
                pending, skip = b"", True
            else:
                pending = data[exc.start :]
        buffer += text
        batch: list[ServerSentEvent] = []
        while "\n\n" in buffer:
            block, buffer = buffer.split("\n\n", 1)
            event = _parse(block)
            if event is not None:
                batch.append(event)
        if batch:
            yield batch
    event = _parse(buffer)
    if event is not None:
        yield [event]


_CONTINUATION = bytes(range(0x80, 0xC0))


def _parse(block: str) -> ServerSentEvent | None:
    event = parse_event(block.replace("\r\n", "\n").strip("\n"))
    return None if event is None or not event.data else ServerSentEvent(event=event.event or "message", data=event.data)


class EveryFuzzOnlyRescue(RetypesNestedIntegers):
    """Both rescuer breakages at once."""

    def feed(self, text: str) -> list[Event]:
        return super().feed(text[: -len(LosesSplitOpener.PREFIX)] if text.endswith(LosesSplitOpener.PREFIX) else text)


FUZZ_ONLY: tuple[Mutant, ...] = (
    Mutant("loses-split-opener", "loses a <tool_call> opener whose frame ends right after '<tool_cal'",
           ("TEXT-001",), (), with_parts(Parts(chat_pipeline=with_rescuer(LosesSplitOpener)))),
    Mutant("loses-three-way-torn-character", "drops a UTF-8 character whose bytes arrive in three reads",
           ("TEXT-001",), (), with_parts(Parts(upstream_events=events_losing_three_way_tears))),
    Mutant("retypes-nested-integers", "turns integer-looking strings inside nested arguments into numbers",
           ("CALLS-001",), (), with_parts(Parts(chat_pipeline=with_rescuer(RetypesNestedIntegers)))),
)

# How each is caught: the formats played and the example budget (with the seed of the tests
# of generated cases, ``tests/generate/test_fuzz.py``). Hypothesis spreads a run's cases by its
# budget, so another budget draws other cases: with these, each is caught within its first dozen
# examples (at the 11th, 9th and 9th), where budgets of 150-200 caught them at the 45th, 14th and 101st.
# The torn character's budget holds two cases that tear one across three writes (the 9th and the
# 23rd; a budget of 30 holds one): a busy host may deliver the three writes of one in two reads.
BUDGET: dict[str, tuple[tuple[str, ...], int]] = {
    "loses-split-opener": (("hermes",), 40),
    "loses-three-way-torn-character": (("hermes",), 60),
    "retypes-nested-integers": (("hermes",), 60),
}

# Every breakage above at once: it passing the hand-written library shows that no case of
# the library sets off any of them (each fires on its own condition), at a third of the cost.
ALL_AT_ONCE = Mutant(
    "every-fuzz-only-breakage", "all the fuzz-only breakages above together", ("TEXT-001", "CALLS-001"), (),
    with_parts(Parts(chat_pipeline=with_rescuer(EveryFuzzOnlyRescue), upstream_events=events_losing_three_way_tears)),
)
