"""Translation mutants: the reference proxy translating between the two APIs (a Messages
client in front of an OpenAI upstream, a chat-completions client in front of a Messages
upstream), with one thing a translating proxy gets wrong. Each is played with its
scenarios' backends served in the other dialect (``Mutant.upstream``).
"""

from __future__ import annotations

import json
from typing import Any

from mutants.anthropic import NATIVE as MESSAGES_NATIVE
from mutants.anthropic import WHOLE as MESSAGES_WHOLE
from mutants.anthropic import EndTurnWithToolUse, EventRewriter, InputAsString
from mutants.base import Mutant, Out, Rewriter, rewritten
from mutants.openai import NATIVE as CHAT_NATIVE
from mutants.openai import StopWithToolCalls


class BlockStoppedTwice(EventRewriter):
    """Closes every content block twice, as a translator does that closes a block both when the
    next one starts and when the upstream's call ends."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "content_block_stop":
            return (payload, dict(payload))
        return (payload,)


class SamplingRewritten(Rewriter):
    """Sends every request upstream with ``temperature: 1.0`` and without the client's seed, as a
    translator seen in the field did (it rebuilt the body from the fields it knew)."""

    def on_request(self, body: bytes) -> bytes:
        try:
            request = json.loads(body)
        except ValueError:
            return body
        if not isinstance(request, dict):
            return body
        request["temperature"] = 1.0
        request.pop("seed", None)
        return json.dumps(request).encode()


MUTANTS: tuple[Mutant, ...] = (
    Mutant("request-sampling-rewritten", "Sends `temperature: 1.0` upstream whatever the client asked, and drops its seed.",
           ("UP-003",), ("plain-sampling-forwarded", CHAT_NATIVE), rewritten(SamplingRewritten), strict=True),
    Mutant("translated-input-as-string", "Translating a chat completion, gives a tool_use input as a string of JSON.",
           ("ABODY-003",), (MESSAGES_WHOLE,), rewritten(InputAsString), upstream="openai"),
    Mutant("translated-tool-turn-ends-end-turn",
           'Translating a chat stream, ends a turn of tool_use blocks with `stop_reason: "end_turn"`.',
           ("ATOOL-003", "ATOOL-004"), (MESSAGES_NATIVE,), rewritten(EndTurnWithToolUse), upstream="openai",
           strict=True),
    Mutant("translated-block-stopped-twice", "Translating a chat stream, sends two `content_block_stop` for one block.",
           ("AEV-006",), (MESSAGES_NATIVE,), rewritten(BlockStoppedTwice), upstream="openai"),
    Mutant("translated-stop-with-tool-calls",
           'Translating a Messages stream, sends `finish_reason: "stop"` after the tool calls.',
           ("TOOL-009", "CALLS-002", "EQ-001"), (CHAT_NATIVE,), rewritten(StopWithToolCalls), upstream="anthropic"),
)
