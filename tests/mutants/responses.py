"""Responses mutants: the reference proxy serving ``/v1/responses`` in front of a Chat
Completions upstream, with one thing a Responses-to-Chat translator gets wrong; and a
proxy that differs from it only in ways Responses clients accept. Rewriters see the
Responses events one at a time (``ResponsesRewriter``), and a whole ``response`` body.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.core.dialects.clients import CLIENTS
from mutants.base import Mutant, Out, SSEEvent, WholeAnswerRewriter, rewritten

PARALLEL = "plain-native-parallel"  # text, then two native calls
SINGLE = "plain-native-single"  # one native call over several deltas
TEXT_AROUND = "hermes-hermes.text-around"  # text, a rescued call, more text
DROPPED = "faults-openai-drop-mid-event"  # the upstream hangs up mid-stream
CALL_EVENTS = ("response.function_call_arguments.delta", "response.function_call_arguments.done")


class ResponsesRewriter(WholeAnswerRewriter):
    """A rewriter of Responses streams, event by event; a payload returned as a dict is sent
    with an ``event:`` line naming its type. A whole answer (a ``response``) goes to ``on_answer``."""

    def on_event(self, event: SSEEvent) -> Iterable[SSEEvent]:
        payload = event.payload
        out: Out = (event,) if payload is None else self.on_payload(payload)
        return [SSEEvent.of(item, item.get("type")) if isinstance(item, dict) else item for item in out]

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return (payload,)

    def is_answer(self, status: int, answer: dict[str, Any]) -> bool:
        return answer.get("object") == "response"

    @staticmethod
    def is_call(payload: dict[str, Any]) -> bool:
        item = payload.get("item")
        return isinstance(item, dict) and item.get("type") == "function_call"

    @staticmethod
    def items(payload: dict[str, Any]) -> list[dict[str, Any]]:
        """Every item the event carries: its own, or its response's output."""
        response = payload.get("response")
        output = response.get("output") if isinstance(response, dict) else None
        found = [i for i in output if isinstance(i, dict)] if isinstance(output, list) else []
        return [payload["item"]] if isinstance(payload.get("item"), dict) else found


class CallsAtIndexZero(ResponsesRewriter):
    """Gives every function call ``output_index`` 0, as a translator does that copies the chat
    call's ``index`` (0 for the first call of each delta) into the Responses event."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if self.is_call(payload) or payload.get("type") in CALL_EVENTS:
            payload["output_index"] = 0
        return (payload,)


class NamesMerged(ResponsesRewriter):
    """Names every call after all the calls named so far, joined, as a translator does that
    appends every name delta to one string."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # call_id -> its merged name
        self.joined = ""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        for item in self.items(payload):
            if item.get("type") == "function_call":
                key = str(item.get("call_id"))
                if key not in self.names:
                    self.joined += str(item.get("name") or "")
                    self.names[key] = self.joined
                item["name"] = self.names[key]
        return (payload,)


class CallsNeverClosed(ResponsesRewriter):
    """Never sends ``response.output_item.done`` for a function call."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.output_item.done" and self.is_call(payload):
            return ()
        return (payload,)


class CompletedWithoutCalls(ResponsesRewriter):
    """Sends a ``response.completed`` whose ``output`` holds the messages only."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.completed":
            response = payload["response"]
            response["output"] = [i for i in response.get("output") or () if i.get("type") != "function_call"]
        return (payload,)


class NoCallId(ResponsesRewriter):
    """Leaves ``call_id`` out of every function_call item, streamed or whole."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        for item in self.items(payload):
            item.pop("call_id", None)
        return (payload,)

    def on_answer(self, answer: dict[str, Any]) -> None:
        for item in answer.get("output") or ():
            item.pop("call_id", None)


class TextAfterCallLost(ResponsesRewriter):
    """Drops a message that follows a call (its events, and its place in ``response.completed``),
    as a translator does that stops forwarding content once it has seen a tool call."""

    def __init__(self) -> None:
        self.called = False
        self.dropped: set[Any] = set()  # output indices of the messages left out

    def on_payload(self, payload: dict[str, Any]) -> Out:
        kind = payload.get("type")
        if kind == "response.output_item.added" and self.is_call(payload):
            self.called = True
        elif kind == "response.output_item.added" and self.called:
            self.dropped.add(payload.get("output_index"))
        if payload.get("output_index") in self.dropped:
            return ()
        if kind == "response.completed" and self.called:
            response = payload["response"]
            output = response.get("output") or []
            first = next((n for n, i in enumerate(output) if i.get("type") == "function_call"), len(output))
            response["output"] = [*output[: first + 1], *(i for i in output[first + 1:] if i.get("type") != "message")]
        return (payload,)


class TextDeltasDropped(ResponsesRewriter):
    """Drops the text deltas of a message that follows a call, but says its whole text in the
    ``.done`` events."""

    def __init__(self) -> None:
        self.called = False

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.output_item.added" and self.is_call(payload):
            self.called = True
        if self.called and payload.get("type") == "response.output_text.delta":
            return ()
        return (payload,)


class SequenceRestarts(ResponsesRewriter):
    """Numbers the events of each output item from 0 again."""

    def __init__(self) -> None:
        self.number = 0

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.output_item.added":
            self.number = 0
        if "sequence_number" in payload:
            payload["sequence_number"] = self.number
            self.number += 1
        return (payload,)


class ArgumentsDoneEmpty(ResponsesRewriter):
    """Says ``{}`` in ``response.function_call_arguments.done`` whatever the deltas said."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.function_call_arguments.done":
            payload["arguments"] = "{}"
        return (payload,)


class DeltasNameAnotherItem(ResponsesRewriter):
    """Gives argument deltas an ``item_id`` of their own instead of their item's."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") in CALL_EVENTS:
            payload["item_id"] = "fc_" + str(payload.get("item_id"))[::-1]
        return (payload,)


class ArgumentDeltasOneIndexOn(ResponsesRewriter):
    """Sends argument deltas at the ``output_index`` after their item's, as a translator does that counts
    the items it has announced from 1."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.function_call_arguments.delta":
            payload["output_index"] = int(payload.get("output_index") or 0) + 1
        return (payload,)


class NoCompleted(ResponsesRewriter):
    """Ends the stream without ``response.completed``."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        return () if payload.get("type") == "response.completed" else (payload,)


class ErrorAsString(ResponsesRewriter):
    """Reports a failed response with ``error`` as a bare string."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "response.failed":
            error = payload["response"].get("error") or {}
            payload["response"]["error"] = str(error.get("message"))
        return (payload,)


class DifferentButCorrect(ResponsesRewriter):
    """Other item ids, extra event fields (the API's own ``obfuscation``, a vendor's), each
    call's arguments in one delta sent just before its ``.done``, and the events numbered anew
    as they are sent: all of it the API allows."""

    def __init__(self) -> None:
        self.held: dict[Any, list[str]] = {}  # output_index -> the call's deltas
        self.number = 0

    def on_payload(self, payload: dict[str, Any]) -> Out:
        out = self._rewritten(payload)
        for event in out:
            if "sequence_number" in event:
                event["sequence_number"] = self.number
                self.number += 1
        return out

    @staticmethod
    def renamed(value: Any) -> Any:
        return "item-" + value[::-1] if isinstance(value, str) and value.startswith(("msg_", "fc_")) else value

    def _rewritten(self, payload: dict[str, Any]) -> Out:
        kind = payload.get("type")
        if "item_id" in payload:
            payload["item_id"] = self.renamed(payload["item_id"])
        for item in self.items(payload):
            item["id"] = self.renamed(item.get("id"))
        payload["x_vendor"] = {"region": "test"}
        if kind == "response.output_text.delta":
            payload["obfuscation"] = "a1b2"
        if kind == "response.function_call_arguments.delta":
            self.held.setdefault(payload.get("output_index"), []).append(payload["delta"])
            return ()
        if kind == "response.function_call_arguments.done" and payload.get("output_index") in self.held:
            pieces = self.held.pop(payload.get("output_index"))
            one = {k: v for k, v in payload.items() if k not in ("arguments", "name")}
            return ({**one, "type": "response.function_call_arguments.delta", "delta": "".join(pieces)}, payload)
        return (payload,)

    def on_answer(self, answer: dict[str, Any]) -> None:
        for item in answer.get("output") or ():
            item["id"] = self.renamed(item.get("id"))
        answer["x_vendor"] = {"region": "test"}


def _mutant(id: str, breaks: str, rules: tuple[str, ...], scenarios: tuple[str, ...], rewriter: type[ResponsesRewriter],
            strict: bool = False) -> Mutant:
    return Mutant(id, breaks, rules, scenarios, rewritten(rewriter), strict=strict, profile=CLIENTS["responses"],
                  upstream="openai")


MUTANTS: tuple[Mutant, ...] = (
    _mutant("responses-calls-at-index-0", "Gives every function call `output_index` 0.",
            ("RESP-002", "RESP-009"), (PARALLEL,), CallsAtIndexZero),
    _mutant("responses-names-merged", "Names each call after every call named so far, joined.",
            ("CALLS-001",), (PARALLEL,), NamesMerged),
    _mutant("responses-calls-never-closed", "Never closes a function_call item with `response.output_item.done`.",
            ("RESP-002",), (SINGLE,), CallsNeverClosed),
    _mutant("responses-completed-without-calls", "Leaves the calls out of `response.completed`'s `output`.",
            ("RESP-007", "RESP-012"), (SINGLE,), CompletedWithoutCalls),
    _mutant("responses-no-call-id", "Leaves `call_id` out of function_call items.",
            ("RESP-005",), (SINGLE, PARALLEL), NoCallId),
    _mutant("responses-text-after-call-lost", "Drops the message that follows a call.",
            ("TEXT-001",), (TEXT_AROUND,), TextAfterCallLost),
    _mutant("responses-text-deltas-dropped", "Drops the text deltas after a call, but not the `.done` text.",
            ("RESP-006",), (TEXT_AROUND,), TextDeltasDropped, strict=True),
    _mutant("responses-sequence-restarts", "Numbers each item's events from 0 again.",
            ("RESP-001",), (SINGLE,), SequenceRestarts, strict=True),
    _mutant("responses-arguments-done-empty", "Says `{}` in `response.function_call_arguments.done`.",
            ("RESP-004",), (SINGLE,), ArgumentsDoneEmpty, strict=True),
    _mutant("responses-deltas-name-another-item", "Gives argument deltas an `item_id` that is not their item's.",
            ("RESP-013",), (SINGLE,), DeltasNameAnotherItem, strict=True),
    _mutant("responses-argument-deltas-one-index-on", "Sends argument deltas at the `output_index` after their item's.",
            ("RESP-003", "RESP-009"), (SINGLE,), ArgumentDeltasOneIndexOn),
    _mutant("responses-no-completed", "Ends the stream without `response.completed`.",
            ("RESP-008", "RESP-009"), (SINGLE,), NoCompleted),
    _mutant("responses-error-as-string", "Reports a failed response's `error` as a bare string.",
            ("RESP-010", "RESP-011"), (DROPPED,), ErrorAsString, strict=True),
)

CORRECT_BUT_DIFFERENT_RESPONSES = Mutant(
    "responses-correct-but-different", "Nothing: other item ids, extra event fields, one delta per call's arguments.",
    (), (), rewritten(DifferentButCorrect), profile=CLIENTS["responses"], upstream="openai")
