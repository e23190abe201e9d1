"""SSE framing rules: how the bytes of a stream are cut into events."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from harness.judge.rules.citations import (
    AI_SDK_EVENTS, ANTHROPIC_SSE, COPILOT_SSE, OPENAI_SSE, SPEC_CHAT_STREAMING, SPEC_SSE, Breaks,
)
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group
from harness.judge.readers.sse import AnomalyKind

rule = rule_group("framing", "SSE", stage="stream")


# The rule each framing flaw the SSE reader finds breaks.
_RULE_OF: Mapping[AnomalyKind, str] = {
    "stray-payload": "SSE-001", "glued-events": "SSE-002", "split-payload": "SSE-003", "done-missing": "SSE-004",
    "done-not-exact": "SSE-005", "event-after-done": "SSE-006", "done-repeated": "SSE-007",
    "bytes-after-done": "SSE-007", "invalid-utf8": "SSE-008", "unterminated-event": "SSE-009",
}


def _anomalies(ctx: Context) -> Mapping[str, list[Violation]]:
    """The stream's framing flaws, in stream order, each filed under the rule it breaks."""
    found: dict[str, list[Violation]] = defaultdict(list)
    for a in ctx.stream.anomalies:
        evidence: dict[str, Any] = {"byte_offset": a.byte_offset, "excerpt": a.excerpt}
        if a.event_index is not None:
            evidence["event_index"] = a.event_index
        found[_RULE_OF[a.kind]].append(Violation(a.message, evidence))
    return found


# Each rule judged by the flaws filed under its id.
framing = rule.found_by(_anomalies)


framing(
    "SSE-001",
    "Every payload is carried on `data:` lines.",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "a line without the `data:` field carries no payload: "
                  "openai-python's SSE decoder ignores the unknown field, and Copilot, which cuts `data:` off the "
                  "front of every line, fails to parse the rest (`Error parsing JSON stream data for request id "
                  "…`) and drops it; what the line held never reaches the application", (OPENAI_SSE, COPILOT_SSE),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); VS Code Copilot: "
                  "src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
    profiles=EVERY_PROFILE,
)


framing(
    "SSE-002",
    "Events are separated by a blank line: two payloads never share one event.",
    severity="client",
    breaks=Breaks(("openai-python", "anthropic-sdk-python"), "two payloads without a blank line between them are "
                  "one event, whose data lines the SDKs join with a newline and fail to parse: `JSONDecodeError: "
                  "Extra data: line 2 column 1`, and the stream ends there", (OPENAI_SSE, ANTHROPIC_SSE),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current) and anthropic-sdk-python 0.75.0, "
                  "1.17.0 and 2.14.0 (current)"),
    profiles=EVERY_PROFILE,
)


framing(
    "SSE-003",
    "Each JSON payload sits on a single `data:` line.",
    severity="client",
    breaks=Breaks(("VS Code Copilot",), "Copilot reads the stream line by line and parses each `data:` line as one "
                  "JSON payload: both halves of a payload split over two lines fail (`Error parsing JSON stream "
                  "data for request id …`) and are dropped, with the text or call they carried", (COPILOT_SSE,),
                  versions="VS Code Copilot: src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
)


framing(
    "SSE-004",
    "The stream is terminated by `data: [DONE]`.",
    severity="spec",
    source=SPEC_CHAT_STREAMING,
)


framing(
    "SSE-005",
    "The terminator's data is exactly `[DONE]`.",
    severity="client",
    breaks=Breaks(("Vercel AI SDK",), "the AI SDK skips the terminator only when the data is exactly `[DONE]`; "
                  "anything else (`[DONE] `, `[done]`) goes to its JSON parser and the stream ends with an "
                  "`AI_JSONParseError`", (AI_SDK_EVENTS,),
                  versions="@ai-sdk/provider-utils 5.0.81 (current) and earlier"),
)


framing(
    "SSE-006",
    "No chunk follows `[DONE]`.",
    severity="client",
    breaks=Breaks(("openai-python", "VS Code Copilot"), "both stop reading at the terminator (openai-python leaves "
                  "its loop at `[DONE]`, Copilot returns), so whatever a later chunk carries, text, a call or a "
                  "finish reason, never reaches the application", (OPENAI_SSE, COPILOT_SSE),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current); VS Code Copilot: "
                  "src/platform/networking/node/stream.ts at 31acd00 (2026-03-29), read"),
)


framing(
    "SSE-007",
    "`[DONE]` is sent once, ends with its blank line, and nothing but blank lines and comments follows it.",
    severity="spec",
    source=(SPEC_CHAT_STREAMING, SPEC_SSE),
)


framing(
    "SSE-008",
    "The stream is valid UTF-8.",
    severity="client",
    breaks=Breaks(("openai-python",), "openai-python decodes every line as UTF-8 and raises `UnicodeDecodeError: "
                  "'utf-8' codec can't decode byte …`, ending the stream", (OPENAI_SSE,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
    profiles=EVERY_PROFILE,
)


framing(
    "SSE-009",
    "Every chunk event ends with a blank line.",
    severity="client",
    breaks=Breaks(("openai-python",), "an SSE event is dispatched only at its blank line: openai-python's decoder "
                  "drops an unterminated last event, so a finish chunk sent without it leaves the message without "
                  "a `finish_reason`", (OPENAI_SSE,),
                  versions="openai-python 1.109.1, 2.54.0 and 3.57.0 (current)"),
    profiles=EVERY_PROFILE,
)
