"""Kiro gateway mutants: the reference proxy calling a Kiro upstream (``Mutant.upstream``
``kiro``), with one thing the open Kiro gateways get wrong, each after a habit of Kiro's
event stream (the scenarios of ``scenarios/kiro`` cite where each was seen). Each is the
reference's Kiro upstream with one piece swapped (``Parts.upstreams``).
"""

from __future__ import annotations

import json
import struct
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import httpx
from httpx_sse import ServerSentEvent
from mutants.base import EventsReader, Mutant, closed_json, upstream_with, with_parts
from mutants.openai import NoDedup, with_rescuer, without_family
from reference_proxy.connection import body_reads
from reference_proxy.parts import Parts
from reference_proxy.upstreams.kiro import KiroUpstream
from reference_proxy.upstreams.decoded import decoded_events
from reference_proxy.upstreams.kiro_stream import FrameDecoder, FrameReader, KiroAsChunks, OpenCall, read_headers

LATE_ID = "kiro-late-tool-use-id"
TRUNCATED = "faults-kiro-truncated-large-input"
NO_METADATA = "faults-kiro-no-metadata"
REPEATED = "kiro-repeated-content"
EXCEPTION = "faults-kiro-exception-mid-stream"
BAD_CRC = "faults-kiro-bad-crc"
INVALID_STATE = "faults-kiro-invalid-state-before-output"
LEAKED_AND_NATIVE = "kiro-leaked-invoke-and-native"
REQUEST = "kiro-request-conversation"


def kiro_with(reader: type[KiroAsChunks] | None = None, events: EventsReader | None = None,
              request: Callable[[dict[str, Any]], None] | None = None) -> Parts:
    """The reference with its Kiro upstream changed (``upstream_with``)."""
    return upstream_with(KiroUpstream, reader, events, request)


class SplitsLateId(KiroAsChunks):
    """Opens a new call for every toolUseId it has not seen (a missing one included), and sends
    every call as it closes, as gateways that key calls by toolUseId do."""

    def _tool_use(self, payload: Mapping[str, Any], out: list[Any]) -> None:
        ident = payload.get("toolUseId")
        if self.call is not None and ident != self.call.id:
            self._close_call(out)
        if self.call is None:
            self.call = OpenCall(ident if isinstance(ident, str) else None, str(payload.get("name") or ""))
        if isinstance(payload.get("input"), str):
            self.call.parts.append(payload["input"])
        if payload.get("stop") is True:
            self._close_call(out)

    def _close_call(self, out: list[Any]) -> None:
        call, self.call = self.call, None
        if call is not None:
            out.append(self.chunk({"tool_calls": [{"index": self.calls, "id": call.id or f"tooluse_{self.calls}",
                                                    "type": "function",
                                                    "function": {"name": call.name, "arguments": "".join(call.parts)}}]}))
            self.calls += 1


class RepairsTruncated(KiroAsChunks):
    """Sends a call whose input was cut off with the JSON closed after the cut (the client
    writes a file with half its content, as it runs kiro-gateway's placeholder arguments)."""

    def _close_call(self, out: list[Any]) -> None:
        if self.call is not None:
            try:
                json.loads("".join(self.call.parts) or "{}")
            except ValueError:
                self.call.parts = [closed_json("".join(self.call.parts))]
        super()._close_call(out)


class WaitsForMetadata(KiroAsChunks):
    """Holds the calls until the metadataEvent, and ends the answer without them when none comes."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model)
        self.held: list[Any] = []

    def read(self, data: str) -> list[Any]:
        out = super().read(data)
        kept = [item for item in out if not (isinstance(item, dict) and "tool_calls" in item["choices"][0]["delta"])]
        self.held += [item for item in out if item not in kept]
        if '"metadataEvent"' in data:
            kept, self.held = kept + self.held, []
        return kept

    def finish(self) -> list[Any]:
        self._close_call([])
        self.calls = 0
        return super().finish()


class DropsRepeatedContent(KiroAsChunks):
    """Drops a content event equal to the one before it."""

    last: str | None = None

    def read(self, data: str) -> list[Any]:
        item = json.loads(data)
        if item.get("event") == "assistantResponseEvent":
            content = item["payload"].get("content")
            if content == self.last:
                return []
            self.last = content
        return super().read(data)


def _loose_events(skip: Callable[[dict[str, str]], bool], check_crc: bool = True) -> EventsReader:
    """The reference's event reading, with the messages ``skip`` says left out; without
    ``check_crc`` the frames are cut by their lengths and never checked."""

    async def read(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
        if check_crc:
            async for batch in decoded_events(response, FrameDecoder()):
                yield batch
            return
        buffer = b""
        async for piece in body_reads(response):
            buffer += piece
            batch: list[ServerSentEvent] = []
            while len(buffer) >= 12:
                total, head = struct.unpack_from(">II", buffer)
                if len(buffer) < total:
                    break
                headers, payload = read_headers(buffer[12: 12 + head]), buffer[12 + head: total - 4]
                buffer = buffer[total:]
                if not skip(headers):
                    batch.append(ServerSentEvent(event="message", data=json.dumps(
                        {"event": headers.get(":event-type"), "payload": json.loads(payload)})))
            if batch:
                yield batch

    return read


def _skipping(skip: Callable[[dict[str, str]], bool]) -> EventsReader:
    """Reads frames as the reference does (CRC checked), but leaves out the messages ``skip`` names."""

    async def read(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
        reader = FrameReader()
        async for piece in body_reads(response):
            batch = [ServerSentEvent(event="message", data=json.dumps(
                        {"event": h.get(":event-type"), "payload": json.loads(p)}))
                     for h, p in reader.feed(piece) if not skip(h)]
            if batch:
                yield batch

    return read


def _exceptions(headers: dict[str, str]) -> bool:
    return headers.get(":message-type") in ("exception", "error")


def _invalid_state(headers: dict[str, str]) -> bool:
    return headers.get(":event-type") == "invalidStateEvent"


def _narrated(body: dict[str, Any]) -> None:
    """The history's calls said as text and their results as plain user text."""
    state = body["conversationState"]
    for entry in state["history"]:
        said = entry.get("assistantResponseMessage")
        if said and said.get("toolUses"):
            said["content"] += "".join(f"\n[Called {u['name']} with args: {json.dumps(u['input'])}]"
                                       for u in said.pop("toolUses"))
    for entry in [*state["history"], state["currentMessage"]]:
        context = entry.get("userInputMessage", {}).get("userInputMessageContext", {})
        for result in context.pop("toolResults", []):
            entry["userInputMessage"]["content"] += f"\n[Tool result: {result['content'][0]['text']}]"


def _auto(body: dict[str, Any]) -> None:
    body["conversationState"]["chatTriggerType"] = "AUTO"


MUTANTS: tuple[Mutant, ...] = (
    Mutant("kiro-splits-late-id", "Opens a new call when a toolUseEvent's toolUseId differs from the open call's, a "
           "missing one included, so a call whose id comes with its second fragment is split in two.",
           ("CALLS-001",), (LATE_ID,), with_parts(kiro_with(SplitsLateId)), upstream="kiro"),
    Mutant("kiro-repairs-truncated-input", "Sends a call whose input Kiro cut off mid-JSON with the JSON closed "
           "after the cut, a Write of half the file.",
           ("CALLS-001",), (TRUNCATED,), with_parts(kiro_with(RepairsTruncated)), upstream="kiro"),
    Mutant("kiro-waits-for-metadata", "Holds the calls until the metadataEvent and, when none comes, ends the answer "
           "without them.",
           ("CALLS-001", "CALLS-003"), (NO_METADATA,), with_parts(kiro_with(WaitsForMetadata)), upstream="kiro",
           strict=True),
    Mutant("kiro-drops-repeated-content", "Drops an assistantResponseEvent whose text equals the one before it.",
           ("TEXT-001",), (REPEATED,), with_parts(kiro_with(DropsRepeatedContent)), upstream="kiro"),
    Mutant("kiro-ignores-exceptions", "Skips the stream's exception frames, so a throttled answer looks complete.",
           ("FAULT-001",), (EXCEPTION,), with_parts(kiro_with(events=_skipping(_exceptions))), upstream="kiro"),
    Mutant("kiro-ignores-invalid-state", "Skips an invalidStateEvent, so a refused request is an empty answer.",
           ("FAULT-001",), (INVALID_STATE,), with_parts(kiro_with(events=_skipping(_invalid_state))),
           upstream="kiro"),
    Mutant("kiro-trusts-damaged-frames", "Cuts frames by their lengths and never checks a CRC, so a damaged "
           "message's text reaches the client.",
           ("TEXT-001", "FAULT-001"), (BAD_CRC,),
           with_parts(kiro_with(events=_loose_events(_exceptions, check_crc=False))), upstream="kiro", strict=True),
    Mutant("kiro-shows-leaked-copy-when-streamed", "Knows no invoke XML in streamed text: the model's text copy of a "
           "call it also sent as a toolUseEvent stays text when streamed (which no client runs), but not in the "
           "whole answer, so the two answers differ.",
           ("EQ-001",), (LEAKED_AND_NATIVE,),
           with_parts(Parts(chat_pipeline=with_rescuer(without_family("invoke-xml")))), upstream="kiro"),
    Mutant("kiro-runs-leaked-call-twice", "Rescues the leaked invoke XML and also relays the same call's "
           "toolUseEvent, so the client runs it twice.",
           ("CALLS-001",), (LEAKED_AND_NATIVE,), with_parts(Parts(chat_pipeline=NoDedup)), upstream="kiro"),
    Mutant("kiro-narrates-history", "Says the history's calls to Kiro as `[Called NAME with args: …]` text and "
           "their results as user text, instead of toolUses and toolResults.",
           ("UP-001",), (REQUEST,), with_parts(kiro_with(request=_narrated)), upstream="kiro", strict=True),
    Mutant("kiro-auto-trigger", "Sends chatTriggerType AUTO with tools.",
           ("UP-001",), (REQUEST,), with_parts(kiro_with(request=_auto)), upstream="kiro", strict=True),
)
