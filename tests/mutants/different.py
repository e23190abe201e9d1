"""A proxy that is correct but differs from the reference in every way clients accept.

Clients accept many variations of a correct answer, and the harness must not fail them
by default. This rewriter applies all of them at once to the reference proxy's
answers:

* tool-call arguments sent in the same delta as the name (calls whose name has an even
  length) or in many small deltas (the others);
* text and arguments cut into fragments of 1, 2 and 3 characters (then the rest);
* unknown fields on every chunk, choice and delta, on every ``tool_calls[]`` entry and
  its ``function``, and on whole answers;
* other id formats: ``gen-…`` chunk ids, ``fc_…`` call ids;
* ``data:`` without the space, CRLF line endings, ``: keep-alive`` comments, one of them
  before the first event;
* network writes cut at arbitrary bytes (inside events and UTF-8 characters).

Every one of them is legal by the specification too, so the proxy passes with
``--strict`` as well.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

from mutants.base import ChunkRewriter, Mutant, SSEEvent, rewritten, tool_calls, wire

EXTRA = {"system_fingerprint": "fp_gateway", "x_gateway": {"region": "test", "retries": 0}}
DELTA_EXTRA = {"x_reasoning": None}
CALL_EXTRA = {"x_call": {"source": "gateway"}}


def pieces(text: str) -> list[str]:
    """``text`` in fragments of 1, 2 and 3 characters, then the rest."""
    cuts = [0, 1, 3, 6, len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:]) if text[a:b]] or [text]


def call_id() -> str:
    return "fc_" + uuid.uuid4().hex


class Different(ChunkRewriter):
    def __init__(self) -> None:
        self.chunk_id = f"gen-{uuid.uuid4()}"
        self.start: dict[str, Any] | None = None  # a call start held to carry its arguments
        self.events = 0

    # ------------------------------------------------------------------ chunks

    def on_chunk(self, chunk: dict[str, Any]) -> Iterable[dict[str, Any]]:
        return [self._extras(c) for c in self._split(chunk)]

    def _extras(self, chunk: dict[str, Any]) -> dict[str, Any]:
        """Unknown fields at every level a client reads. Changed in
        place: the pieces ``_split`` makes of a chunk share nothing this changes but
        with the same values."""
        for choice in chunk.get("choices") or ():
            choice["x_choice_meta"] = {"seq": self.events}
            delta = choice.get("delta")
            if isinstance(delta, dict):
                delta.update(DELTA_EXTRA)
        for call in tool_calls(chunk):
            call.update(CALL_EXTRA)
            call.get("function", {}).update(CALL_EXTRA)
        return chunk

    def _split(self, chunk: dict[str, Any]) -> Iterable[dict[str, Any]]:
        chunk["id"] = self.chunk_id
        chunk.update(EXTRA)
        calls = tool_calls(chunk)
        if calls and "id" in calls[0]:
            calls[0]["id"] = call_id()
            if len(calls[0]["function"]["name"]) % 2 == 0:
                self.start = chunk  # its arguments come in the next chunk: sent together
                return ()
            return (chunk,)
        if calls and self.start is not None:
            start, self.start = self.start, None
            tool_calls(start)[0]["function"]["arguments"] = calls[0]["function"]["arguments"]
            return (start,)
        if calls:
            return [self._with(chunk, "tool_calls", [{**calls[0], "function": {"arguments": part}}])
                    for part in pieces(calls[0]["function"]["arguments"])]
        delta = _only_delta(chunk)
        if delta is not None and isinstance(delta.get("content"), str) and len(delta) == 1:
            return [self._with(chunk, "content", part) for part in pieces(delta["content"])]
        return (chunk,)

    @staticmethod
    def _with(chunk: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
        choice = chunk["choices"][0]
        return {**chunk, "choices": [{**choice, "delta": {key: value}}]}

    # ------------------------------------------------------------------ framing

    def encode(self, event: SSEEvent) -> bytes:
        self.events += 1
        comment = b": keep-alive\r\n\r\n" if self.events % 3 == 1 else b""
        lines = "".join(f"data:{line}\r\n" for line in event.data.split("\n"))
        return comment + wire(f"{lines}\r\n")

    def writes(self, body: bytes) -> Iterable[bytes]:
        cut = len(body) // 2 + 1  # anywhere: in an event, in a UTF-8 character
        return [part for part in (body[:cut], body[cut:]) if part]

    # ------------------------------------------------------------------ whole answers

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        try:
            answer = json.loads(body)
        except ValueError:
            return status, content_type, body
        if not (isinstance(answer, dict) and answer.get("object") == "chat.completion"):
            return status, content_type, body
        answer["id"] = f"gen-{uuid.uuid4()}"
        answer.update(EXTRA)
        for choice in answer.get("choices") or ():
            choice["x_choice_meta"] = {"seq": 0}
            message = choice.get("message") or {}
            message.update(DELTA_EXTRA)
            for call in message.get("tool_calls") or ():
                call["id"] = call_id()
                call.update(CALL_EXTRA)
                call.get("function", {}).update(CALL_EXTRA)
        return status, content_type, json.dumps(answer, ensure_ascii=False, indent=1).encode()


def _only_delta(chunk: dict[str, Any]) -> dict[str, Any] | None:
    choices: list[dict[str, Any]] = chunk.get("choices") or []
    if len(choices) != 1 or choices[0].get("finish_reason"):
        return None
    delta = choices[0].get("delta")
    return delta if isinstance(delta, dict) else None


CORRECT_BUT_DIFFERENT = Mutant(
    "correct-but-different",
    "Nothing: it differs from the reference only in ways clients accept.",
    (),
    (),
    rewritten(Different),
)
