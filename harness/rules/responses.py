"""OpenAI Responses client rules, and which shared rules judge a Responses client too.

The shared rules listed in ``NEUTRAL`` read only the HTTP exchange, the SSE framing
every dialect shares and the shared ``Answer`` (calls, text, finish in Chat Completions
words, read by ``harness.responses_events``), so they judge a Responses answer as they
judge the others.
"""

from __future__ import annotations

from harness.rules.registry import RESPONSES, amend

NEUTRAL: tuple[str, ...] = (
    "HTTP-001", "HTTP-002", "HTTP-003", "HTTP-004", "HTTP-005", "HTTP-006",
    "SSE-001", "SSE-002", "SSE-008", "SSE-009",
    "CALLS-001", "CALLS-002", "TEXT-001", "TEXT-002", "TEXT-003",
    "UP-002", "EQ-001",
)

for _rule_id in NEUTRAL:
    amend(_rule_id, also=RESPONSES)
