"""Why a rule is checked: the real clients a broken rule breaks, and the public text that says so.

A rule is ``client`` severity only when a named real client breaks or silently misbehaves
on the defect; its catalogue entry (``<group>.yaml``, ``harness.judge.rules.catalogue``) then says
which clients, what they do (their own error text where there is one) and where that can be read
(``breaks``). ``spec`` and ``feature`` rules may name the specification page they come from (``source``). The registry refuses a
``client`` rule without a ``Breaks`` and a client name it does not know, so the claim
"a client breaks" is always one a proxy author can check.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# Every client a citation may name, with the project it is read from.
CLIENTS: Mapping[str, str] = MappingProxyType({
    "openai-python": "https://github.com/openai/openai-python",
    "openai-node": "https://github.com/openai/openai-node",
    "Vercel AI SDK": "https://github.com/vercel/ai",
    "anthropic-sdk-python": "https://github.com/anthropics/anthropic-sdk-python",
    "anthropic-sdk-typescript": "https://github.com/anthropics/anthropic-sdk-typescript",
    "Claude Code": "https://github.com/anthropics/claude-code",
    "Codex CLI": "https://github.com/openai/codex",
    "OpenAI Agents SDK": "https://github.com/openai/openai-agents-python",
    "Cline": "https://github.com/cline/cline",
    "Roo Code": "https://github.com/RooCodeInc/Roo-Code",
    "Kilo Code": "https://github.com/Kilo-Org/kilocode",
    "VS Code Copilot": "https://github.com/microsoft/vscode-copilot-chat",
    "OpenCode": "https://github.com/sst/opencode",
})

# The XML-era clients that read tool calls from the text (the xml-client profile).
XML_CLIENTS = ("Cline", "Roo Code", "Kilo Code")


@dataclass(frozen=True)
class Breaks:
    """Who breaks when a proxy breaks the rule, and how: the named real clients (keys of
    ``CLIENTS``), what they then do (the error they raise, quoted where it is known) and the
    public sources (an SDK's source file, an issue) a proxy author can read it in."""

    clients: tuple[str, ...]
    how: str
    source: tuple[str, ...] = ()
    # The releases that break, as checked against each client's current release (``CURRENT``):
    # a claim true only of old releases says so here, so a proxy author can weigh it. Empty where
    # the citation has not been re-checked against the current releases yet.
    versions: str = ""


# The release of each client the ``versions`` of the citations were checked against (2026-11); for the
# Python SDKs, tests/judge/test_client_breaks.py feeds each cited rule's breaking answer to the installed release.
CURRENT: Mapping[str, str] = MappingProxyType({
    "openai-python": "openai 3.57.0",
    "anthropic-sdk-python": "anthropic 2.14.0",
    "anthropic-sdk-typescript": "@anthropic-ai/sdk 1.14.0",
    "Vercel AI SDK": "ai 7.0.173 with @ai-sdk/openai-compatible 3.0.92 (AI SDK 6: 2.0.92, AI SDK 5: 1.0.61)",
    "OpenAI Agents SDK": "openai-agents 0.24.0",
    "Codex CLI": "@openai/codex 0.171.0",
    "OpenCode": "opencode-ai 1.18.33",
    "Cline": "cline 3.0.65 (the CLI)",
    "Kilo Code": "@kilocode/cli 7.8.1",
    "Roo Code": "@roo-code/types 1.115.0 (its settings)",
})


# Public sources, each written once.
_OPENAI_PY = "https://github.com/openai/openai-python/blob/main/src/openai/"
OPENAI_SSE = _OPENAI_PY + "_streaming.py"
OPENAI_DELTAS = _OPENAI_PY + "lib/streaming/_deltas.py"
OPENAI_ACCUMULATE = _OPENAI_PY + "lib/streaming/chat/_completions.py"
OPENAI_RESPONSES_STREAM = _OPENAI_PY + "lib/streaming/responses/_responses.py"
OPENAI_CLIENT = _OPENAI_PY + "_base_client.py"
OPENAI_ERRORS = _OPENAI_PY + "_exceptions.py"
_ANTHROPIC_PY = "https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/"
ANTHROPIC_SSE = _ANTHROPIC_PY + "_streaming.py"
ANTHROPIC_ACCUMULATE = _ANTHROPIC_PY + "lib/streaming/_messages.py"
_ANTHROPIC_TS = "https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/"
ANTHROPIC_TS_SSE = _ANTHROPIC_TS + "core/streaming.ts"
ANTHROPIC_TS_STREAM = _ANTHROPIC_TS + "lib/MessageStream.ts"
AI_SDK_CHAT = ("https://github.com/vercel/ai/blob/main/packages/openai-compatible/src/chat/"
               "openai-compatible-chat-language-model.ts")
AI_SDK_TRACKER = "https://github.com/vercel/ai/blob/main/packages/provider-utils/src/streaming-tool-call-tracker.ts"
# The change that stopped the AI SDK finishing a streamed call on arguments that merely parse as JSON
# (@ai-sdk/openai-compatible 2.0.58 and 1.0.57; its CHANGELOG: "prevent streaming tool calls from
# finalizing on parsable partial JSON").
AI_SDK_CHANGELOG = "https://github.com/vercel/ai/blob/main/packages/openai-compatible/CHANGELOG.md"
AI_SDK_EMPTY_ARGUMENTS = "https://github.com/vercel/ai/issues/5658"
OPENAI_PARSING = _OPENAI_PY + "lib/_parsing/_completions.py"
AI_SDK_EVENTS = "https://github.com/vercel/ai/blob/main/packages/provider-utils/src/parse-json-event-stream.ts"
# Pinned: the revisions the citations were read at.
COPILOT_SSE = ("https://github.com/microsoft/vscode-copilot-chat/blob/31acd00a86424e2ee6e980e54919cf31fbf88030/"
               "src/platform/networking/node/stream.ts")
CODEX_CHAT = ("https://github.com/openai/codex/blob/0775d1b1736b4204b56aba0efce7470bdd29b711/"
              "codex-rs/core/src/chat_completions.rs")
CODEX_RESPONSES = "https://github.com/openai/codex/blob/main/codex-rs/core/src/client.rs"
# Where the current Codex CLI reads a Responses stream (the path its 0.171.0 binary names).
CODEX_RESPONSES_SSE = "https://github.com/openai/codex/blob/main/codex-rs/codex-api/src/sse/responses.rs"
CLINE_OPENAI = ("https://github.com/cline/cline/blob/00566920b6f35409e79b4ae0be7e12311ab77a63/"
                "src/api/providers/openai.ts")

# Specification pages the spec rules come from.
SPEC_CHAT_STREAMING = "https://platform.openai.com/docs/api-reference/chat-streaming"
SPEC_CHAT = "https://platform.openai.com/docs/api-reference/chat/object"
SPEC_CHAT_CREATE = "https://platform.openai.com/docs/api-reference/chat/create"
SPEC_RESPONSES = "https://platform.openai.com/docs/api-reference/responses/create"
SPEC_OLLAMA_CHAT = "https://github.com/ollama/ollama/blob/main/docs/api.md#generate-a-chat-completion"
SPEC_MESSAGES_STREAMING = "https://docs.anthropic.com/en/docs/build-with-claude/streaming"
SPEC_MESSAGES = "https://docs.anthropic.com/en/api/messages"
SPEC_ANTHROPIC_ERRORS = "https://docs.anthropic.com/en/api/errors"
SPEC_RESPONSES_STREAMING = "https://platform.openai.com/docs/api-reference/responses-streaming"
SPEC_OPENAI_ERRORS = "https://platform.openai.com/docs/guides/error-codes"
SPEC_SSE = "https://html.spec.whatwg.org/multipage/server-sent-events.html"
SPEC_HTTP_RETRY_AFTER = "https://www.rfc-editor.org/rfc/rfc9110#name-retry-after"

# The sources above by name: a rule catalogue (``<group>.yaml``) cites a page written here by its name.
SOURCES: Mapping[str, str] = MappingProxyType({
    name: value for name, value in sorted(globals().items())
    if not name.startswith("_") and isinstance(value, str) and value.startswith("https://")
})
