"""Mutants that real clients' requests expose: played under a real client's profile
(``--client-profile copilot-chat``, ``claude-code``), some against a strict upstream."""

from __future__ import annotations

from harness.core.dialects.clients import CLIENTS
from mutants.anthropic import NATIVE as MESSAGES_NATIVE
from mutants.base import Mutant, with_parts
from mutants.translation import refuses_system_messages
from reference_proxy.parts import Parts
from reference_proxy.upstreams.base import Outgoing, Upstream

STRICT_TEMPLATE = "translation-copilot-second-system-strict-template"


def relays_refusal(upstream: Upstream, outgoing: Outgoing, refusal: str) -> Outgoing | None:
    """A proxy that passes a system message after a user message through unchanged and relays
    the strict template's refusal instead of putting the system text first."""
    return None


MUTANTS: tuple[Mutant, ...] = (
    Mutant("passes-second-system-through",
           "Relays Copilot Chat's second system message (after a user message) to a chat upstream unchanged, so a "
           "Qwen, Llama or Gemma chat template refuses the request with 400 and Copilot shows no answer.",
           ("HTTP-003",), (STRICT_TEMPLATE,), with_parts(Parts(after_refusal=relays_refusal)),
           profile=CLIENTS["copilot-chat"]),
    Mutant("refuses-claude-code-system-reminder",
           "Refuses Claude Code 2.1.197's requests, which always carry a `system` message inside `messages` (its "
           "<system-reminder> text), with 400.",
           ("HTTP-003",), (MESSAGES_NATIVE,), with_parts(Parts(parse_messages=refuses_system_messages)),
           profile=CLIENTS["claude-code"]),
)
