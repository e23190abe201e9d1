"""Which rules first written for chat completions judge every dialect.

These rules read only what is dialect-neutral: the HTTP exchange, the SSE framing
both dialects share, the shared ``Answer`` (calls, visible text, markup), what the
proxy sent upstream, and the streamed-versus-single comparison. Listed here, in one
place, so a new dialect's coverage can be read at a glance.
"""

from __future__ import annotations

from harness.rules.registry import ANTHROPIC, amend

NEUTRAL: tuple[str, ...] = (
    # transport
    "HTTP-001",
    "HTTP-002",
    "HTTP-003",
    "HTTP-004",
    "HTTP-005",
    "HTTP-006",
    # framing that is not about [DONE] or Copilot's line-by-line reading
    "SSE-001",
    "SSE-002",
    "SSE-008",
    "SSE-009",
    # the answer the client acts on
    "CALLS-001",
    "TEXT-001",
    "TEXT-002",
    "TEXT-003",
    # what reached the backend
    "UP-001",
    "UP-002",
    # streamed and single answers agree
    "EQ-001",
)

# Rules about how a complete chat-completion stream ends: a stream that ends with an
# error the scenario expects has neither a finish_reason nor a usage chunk. (The
# Anthropic rules tell an error-ended stream apart themselves.)
ENDINGS: tuple[str, ...] = ("CHUNK-007", "CALLS-002", "TOOL-009", "VTC-004", "USAGE-001")

for _rule_id in NEUTRAL:
    amend(_rule_id, also=ANTHROPIC)
for _rule_id in ENDINGS:
    amend(_rule_id, ending=True)
