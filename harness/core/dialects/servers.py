"""Upstream server profiles: one ``ServerProfile`` per real server, the habits it streams with.

A profile plays a scenario's answer the way that server would (``ServerProfile.play``):
the mock writes the answer as the ideal server of its dialect, then the profile's habits
rewrite its events. Each habit says whether a proxy must tolerate it or normalise it, and
where it was seen (``habits``). ``SERVERS`` is the one list of profile names (option
choices, reports, the scenario schema's ``server`` field).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from harness.core.dialects import habits as h
from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.base import WireDialect
from harness.core.dialects.habits import Habit, Piece
from harness.core.dialects.openai import OPENAI

_OPENAI_PYTHON = "openai-python 1.x reads it (its stream types are not validated)"
_AI_SDK = "the AI SDK (@ai-sdk/openai-compatible 1.x) accepts it"
_HARMLESS = f"harmless: {_OPENAI_PYTHON}; {_AI_SDK}"
_SSE = "https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation"
_AI_SDK_SCHEMA = ("https://github.com/vercel/ai/blob/main/packages/openai-compatible/src/chat/"
                  "openai-compatible-chat-language-model.ts")


@dataclass(frozen=True, eq=False)
class ServerProfile:
    """One real server: the habits it streams with, per dialect it serves (one object per server, compared and
    hashed as itself: a set or a table of profiles is keyed by the objects)."""

    name: str  # the option's and reports' word for it
    label: str  # as people call it
    habits: Mapping[WireDialect, tuple[Habit, ...]]

    @property
    def dialects(self) -> tuple[WireDialect, ...]:
        return tuple(self.habits)

    def serves(self, dialect: WireDialect) -> bool:
        return dialect in self.habits

    def play(self, pieces: Sequence[Piece], dialect: WireDialect) -> list[Piece]:
        """``pieces``, a streamed answer in ``dialect``, as this server streams it."""
        out = list(pieces)
        for habit in self.habits.get(dialect, ()):
            out = habit.apply(out)
        return out

    def play_bytes(self, events: Sequence[tuple[bytes, float]], dialect: WireDialect) -> list[tuple[bytes, float]]:
        """The same over raw events (bytes and the delay before each)."""
        played = self.play([h.parse(data, delay) for data, delay in events], dialect)
        return [(p.encode(), p.delay) for p in played]


# --------------------------------------------------------------------------- the habits

USAGE_NULL = Habit("usage-null", "with include_usage, every chunk but the last says usage: null",
                   ("https://platform.openai.com/docs/api-reference/chat-streaming/streaming",),
                   "tolerate", _HARMLESS, h.usage_null)
OBFUSCATION = Habit("obfuscation", "every delta chunk carries an obfuscation string of random padding",
                    ("https://platform.openai.com/docs/api-reference/chat/create#chat_create-stream_options",),
                    "tolerate", _HARMLESS, h.obfuscation)
OPENAI_ENVELOPE = Habit("service-tier", "every chunk says service_tier and system_fingerprint",
                        ("https://github.com/ollama/ollama/pull/7963",), "tolerate", _HARMLESS,
                        h.top_fields({"service_tier": "default", "system_fingerprint": "fp_b376dfbbd5"}))
OPENAI_FINISH = Habit("empty-finish-delta", "the role chunk says refusal: null, the finish chunk's delta is {}",
                      ("https://github.com/pydantic/pydantic-ai/issues/797",), "tolerate", _HARMLESS,
                      h.openai_finish)
PROMPT_FILTER = Habit("prompt-filter-first", 'a first chunk with id "", model "", object "", choices [] and '
                      "prompt_filter_results",
                      ("https://github.com/Azure/azure-sdk-for-go/issues/21086",
                       "https://github.com/microsoft/semantic-kernel/issues/3650",
                       "https://github.com/AbanteAI/archive-old-cli-mentat/issues/429"),
                      "tolerate", "spec-legal (choices may be empty, as in the usage chunk); openai-python 1.x "
                      "and the AI SDK read it", h.prompt_filter_first)
FILTER_RESULTS = Habit("content-filter-results", "each text choice carries content_filter_results",
                       ("https://github.com/rksm/org-ai/issues/90",), "tolerate", _HARMLESS,
                       h.content_filter_results)
FILTER_OFFSETS = Habit("filter-offsets-chunk", "a chunk whose choice has no delta, only content_filter_results "
                       "and content_filter_offsets",
                       ("https://github.com/microsoft/autogen/issues/6465",
                        "https://github.com/langchain-ai/langchain/issues/18977"),
                       "normalise", "a choice without delta and a chunk whose object is \"\" (CHUNK-002): "
                       "autogen-ext 0.5 raises AttributeError on it (microsoft/autogen#6465), CopilotKit breaks "
                       "(CopilotKit/CopilotKit#2468); a proxy must not crash on it nor lose text around it",
                       h.filter_offsets_chunk)
CONTINUOUS_USAGE = Habit("continuous-usage", "with stream_options.continuous_usage_stats, every chunk carries "
                         "the usage so far", ("https://github.com/vllm-project/vllm/pull/5135",),
                         "tolerate", _HARMLESS, h.continuous_usage)
NULL_FIELDS = Habit("null-fields", "every delta names role, content, reasoning_content and tool_calls, null when "
                    "unused; every choice says matched_stop",
                    ("https://github.com/sgl-project/sglang/issues/4550",
                     "https://github.com/sgl-project/sglang/pull/9657"),
                    "tolerate", _HARMLESS + " (tool_calls: null is read as no calls)", h.null_fields)
EMPTY_FINISH = Habit("empty-finish-reason", 'chunks that do not finish say finish_reason: "" instead of null',
                     ("https://github.com/sgl-project/sglang/issues/3912",
                      "https://github.com/ollama/ollama/issues/4357",
                      "https://github.com/openai/openai-dotnet/pull/389",
                      "https://github.com/aaif-goose/goose/pull/10258"),
                     "normalise", "not a finish reason of the spec (null or stop, length, tool_calls, "
                     "content_filter): openai-dotnet 2.x throws 'Unknown ChatFinishReason value.' on it (the fix was "
                     "declined, openai/openai-dotnet#389); goose took it for the end and lost the call's later "
                     "argument deltas until aaif-goose/goose#10258; typed clients fail to deserialise it "
                     "(sglang#3912); CHUNK-011 reads it as a first finish reason; a proxy must not end the answer at it",
                     h.empty_finish)
TWO_FINISHES = Habit("two-finishes", "the last content chunk carries the finish reason, then the finish chunk "
                     "sends it again", ("https://github.com/sgl-project/sglang/pull/8417",),
                     "normalise", "VS Code Copilot and Codex CLI act on a choice's first finish and drop what "
                     "follows (CHUNK-008, CHUNK-011); a proxy must not stop reading there and lose the delta it "
                     "came with", h.two_finishes)
CONTENT_NULL = Habit("content-null-first", "the first chunk announces the role with content: null",
                     ("https://github.com/kyutai-labs/unmute/issues/80",
                      "https://github.com/darshi1337/apogee/pull/139"),
                     "tolerate", "spec-legal (content is nullable); openai-python and the AI SDK read it",
                     h.content_null_first)
DONE_NO_BLANK = Habit("done-without-blank-line", "data: [DONE] ends with one newline, not a blank line",
                      ("https://github.com/darshi1337/apogee/pull/139", _SSE),
                      "tolerate", "the proxy must end the answer at the end of the stream as if [DONE] came (a "
                      "relay of it breaks only the spec rules SSE-004/SSE-009 of --strict)",
                      h.done_without_blank_line)
BACKSLASH = Habit("lone-backslash", "a text or argument delta ends in a lone backslash, the escaped character "
                  "comes in the next", ("https://github.com/ggml-org/llama.cpp/pull/16526",),
                  "tolerate", "the proxy must lose no text after the backslash", h.backslash_cut)
GLUED = Habit("glued-events", "two chunks leave in one network write",
              ("https://github.com/ggml-org/llama.cpp/issues/14268",),
              "tolerate", "the proxy must read both events of one read", h.glued)
LLAMACPP_ENVELOPE = Habit("timings", "every chunk says system_fingerprint (the build) and its timings",
                          ("https://github.com/openai-php/client/issues/780",), "tolerate", _HARMLESS,
                          h.top_fields({"system_fingerprint": "b5827-bac8bed2",
                                        "timings": {"prompt_n": 1, "predicted_n": 1}}, after="object"))
NO_INDEX = Habit("no-index", "tool-call deltas carry no index",
                 ("https://github.com/ollama/ollama/issues/7881",
                  "https://discuss.ai.google.dev/t/openai-compatibilioty-with-jnodejs-error/50746?page=2",
                  "https://discuss.ai.google.dev/t/gemini-openai-compatibility-issue-with-tool-call-streaming/59886"),
                 "normalise", "openai-python 1.x's chat.completions.stream() helper and pydantic logfire read "
                 "tool_calls[].index (ollama/ollama#7881); the AI SDK's schema requires it (index: z.number())",
                 h.no_index)
WHOLE_CALLS = Habit("whole-calls", "every call arrives whole (id, name and all its arguments) in one chunk",
                    ("https://github.com/ollama/ollama/issues/7881",), "tolerate", _HARMLESS, h.whole_calls)
STOP_FOR_CALLS = Habit("stop-for-calls", "an answer with tool calls finishes with stop",
                       ("https://github.com/ollama/ollama/pull/7963",
                        "https://github.com/BerriAI/litellm/issues/35663"),
                       "normalise", "the Chat Completions reference gives finish_reason tool_calls when the model called a "
                       "tool (rule TOOL-009, spec: current clients read calls at stop too, Codex CLI's chat path, "
                       "removed before 0.171.0, ran them only at tool_calls); a proxy must not drop the calls either "
                       "(OpenAI's gpt-4o has done it too, ollama/ollama#7963)",
                       h.stop_for_calls)
_ROLE_TWICE = ("openai-python 1.x's stream helper (chat.completions.stream(), lib/streaming/_deltas.py) "
               "concatenates string fields: the message's role becomes \"assistantassistant…\", which no API accepts "
               "when the application sends the message back (CHUNK-006; BerriAI/litellm#9986, pydantic/logfire#545, "
               "ollama/ollama#7626); a proxy sends the role once")
ROLE_EVERY_CHUNK = Habit("role-every-chunk", "no role-only first chunk; every delta says role: assistant",
                         ("https://github.com/ollama/ollama/issues/4357", "https://github.com/ollama/ollama/issues/7626"),
                         "normalise", _ROLE_TWICE, h.role_every_chunk)
OLLAMA_ENVELOPE = Habit("fp-ollama", "every chunk says system_fingerprint: fp_ollama",
                        ("https://github.com/ollama/ollama/issues/4357",), "tolerate", _HARMLESS,
                        h.top_fields({"system_fingerprint": "fp_ollama"}))
ROLE_ON_EVERY_DELTA = Habit("role-on-every-delta", "every delta with text or a call says role: assistant again",
                            ("https://github.com/openai/openai-go/issues/227",
                             "https://github.com/huggingface/text-generation-inference/issues/2794",
                             "https://discuss.ai.google.dev/t/openai-compatibilioty-with-jnodejs-error/50746?page=2"),
                            "normalise", _ROLE_TWICE, h.role_on_every_delta)
USAGE_ON_FINISH = Habit("usage-on-finish", "the finish chunk (delta {}) carries the usage, asked for or not",
                        ("https://github.com/ggml-org/llama.cpp/issues/12137",
                         "https://github.com/g0t4/ask-openai.nvim/blob/main/lua/ask-openai/rewrites/harmony/NOTES.md"),
                        "tolerate", _HARMLESS + " (a usage object on a chunk with choices is not the usage chunk "
                        "of include_usage: USAGE-002 does not count it)", h.usage_on_finish)
EMPTY_IDENTITY = Habit("empty-identity", 'continuation deltas repeat the call\'s id and name as ""',
                       ("https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/830",
                        "https://github.com/anomalyco/opencode/issues/37841"),
                       "tolerate", "openai-python concatenates the pieces (an empty string adds nothing); clients "
                       "that took \"\" for a new call were fixed (anomalyco/opencode#37841)", h.empty_identity)
ROLE_WITH_FIRST = Habit("role-with-first-delta", "no role-only first chunk: the first text or call delta says "
                        "role: assistant", ("https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/723",),
                        "tolerate", _HARMLESS, h.role_with_first_delta)
LMSTUDIO_ENVELOPE = Habit("fingerprint-model", "every chunk says system_fingerprint: the model's name",
                          ("https://github.com/lmstudio-ai/lmstudio-bug-tracker/issues/723",), "tolerate", _HARMLESS,
                          h.top_fields({"system_fingerprint": "toolcall-conformance-mock"}))
CALLS_AS_OBJECT = Habit("tool-calls-object", "a delta's tool_calls is one call object, not a list",
                        ("https://github.com/huggingface/text-generation-inference/pull/2954",
                         "https://github.com/huggingface/text-generation-inference/issues/2136"),
                        "normalise", "the AI SDK's schema requires an array (tool_calls: z.array(...)), "
                        "openai-python's stream helper iterates it as a list", h.calls_as_object)
NULL_NAME = Habit("null-name-continuations", 'continuation deltas say id: "" and name: null',
                  ("https://github.com/huggingface/text-generation-inference/issues/2794",),
                  "tolerate", "openai-python skips null pieces; the AI SDK reads name only on a call's first delta",
                  h.null_name_continuations)
TGI_ENVELOPE = Habit("tgi-envelope", 'every chunk says id: "" first after object, system_fingerprint (the '
                     "version) and usage: null", ("https://github.com/huggingface/text-generation-inference/issues/2794",),
                     "tolerate", _HARMLESS + " (CHUNK-004 asks only that the id stay the same)",
                     lambda pieces: h.usage_key_null(h.top_fields({"system_fingerprint": "2.4.1-sha-d2ed52f"})(
                         h.top_fields({"id": ""}, after="object")(pieces))))
ARGUMENTS_OBJECT = Habit("arguments-object", "a call's arguments are a JSON object, not a string",
                         ("https://github.com/huggingface/text-generation-inference/pull/2954",
                          "https://github.com/BerriAI/litellm/pull/37792"),
                         "normalise", "the AI SDK's schema requires a string (arguments: z.string()); openai-python "
                         "1.x's stream helper concatenates strings and json-parses them", h.arguments_object)
PROCESSING = Habit("processing-comments", ": OPENROUTER PROCESSING comment lines before the first chunk",
                   ("https://openrouter.ai/docs/api-reference/streaming",
                    "https://github.com/openai/openai-python/issues/2722", _SSE),
                   "tolerate", "comments are ignored by every SSE reader (WHATWG); a proxy must not turn one into "
                   "an event", h.comments_first(b": OPENROUTER PROCESSING", b": OPENROUTER PROCESSING"))
PROVIDER_FIELDS = Habit("native-finish-reason", "every chunk says provider and native_finish_reason",
                        ("https://openrouter.ai/docs/api-reference/streaming",), "tolerate", _HARMLESS,
                        h.native_finish)
OPENROUTER_ENVELOPE = Habit("provider", "every chunk says the provider that served it (and passes on its "
                            "system_fingerprint)", ("https://openrouter.ai/docs/api-reference/streaming",
                                                    "https://github.com/openai/openai-go/issues/227"),
                            "tolerate", _HARMLESS,
                            h.top_fields({"provider": "OpenAI", "system_fingerprint": "fp_72ed7ab54c"}))
FINISH_IN_LAST = Habit("finish-in-last-delta", "no separate finish chunk: the last chunk with text or a call "
                       "carries the finish reason and the usage",
                       ("https://ai.google.dev/gemini-api/docs/openai",
                        "https://github.com/BerriAI/litellm/issues/12481"),
                       "tolerate", "spec-legal; openai-python and the AI SDK read a delta and a finish reason in "
                       "one chunk", h.finish_in_last_delta)
PINGS = Habit("pings", "a ping event after the first content_block_start",
              ("https://docs.anthropic.com/en/docs/build-with-claude/streaming#event-types",),
              "tolerate", "the Messages streaming docs tell clients to expect pings; anthropic-sdk-python and "
              "-typescript skip them", h.pings)


# --------------------------------------------------------------------------- the servers

OPENAI_SERVER = ServerProfile("openai", "OpenAI", {OPENAI: (OPENAI_ENVELOPE, OPENAI_FINISH, USAGE_NULL, OBFUSCATION)})
AZURE = ServerProfile("azure", "Azure OpenAI",
                      {OPENAI: (PROMPT_FILTER, FILTER_RESULTS, FILTER_OFFSETS, OPENAI_FINISH, USAGE_NULL)})
VLLM = ServerProfile("vllm", "vLLM", {OPENAI: (CONTINUOUS_USAGE,)})
SGLANG = ServerProfile("sglang", "SGLang", {OPENAI: (NULL_FIELDS, EMPTY_FINISH, TWO_FINISHES)})
LLAMACPP = ServerProfile("llamacpp", "llama.cpp server",
                         {OPENAI: (LLAMACPP_ENVELOPE, CONTENT_NULL, USAGE_ON_FINISH, BACKSLASH, GLUED, DONE_NO_BLANK)})
OLLAMA = ServerProfile("ollama", "Ollama (OpenAI route)",
                       {OPENAI: (OLLAMA_ENVELOPE, ROLE_EVERY_CHUNK, WHOLE_CALLS, NO_INDEX, STOP_FOR_CALLS)})
LMSTUDIO = ServerProfile("lmstudio", "LM Studio", {OPENAI: (LMSTUDIO_ENVELOPE, ROLE_WITH_FIRST, EMPTY_IDENTITY)})
TGI = ServerProfile("tgi", "Text Generation Inference",
                    {OPENAI: (TGI_ENVELOPE, ROLE_ON_EVERY_DELTA, NULL_NAME, WHOLE_CALLS, ARGUMENTS_OBJECT, CALLS_AS_OBJECT)})
OPENROUTER = ServerProfile("openrouter", "OpenRouter", {OPENAI: (PROCESSING, OPENROUTER_ENVELOPE, PROVIDER_FIELDS, ROLE_ON_EVERY_DELTA)})
GEMINI = ServerProfile("gemini", "Gemini (OpenAI compatibility)",
                       {OPENAI: (ROLE_ON_EVERY_DELTA, WHOLE_CALLS, NO_INDEX, STOP_FOR_CALLS, FINISH_IN_LAST)})
ANTHROPIC_API = ServerProfile("anthropic-api", "Anthropic API", {ANTHROPIC: (PINGS,)})

#: Every upstream server profile by name: the one list of their names.
SERVERS: Mapping[str, ServerProfile] = MappingProxyType({s.name: s for s in (
    OPENAI_SERVER, AZURE, VLLM, SGLANG, LLAMACPP, OLLAMA, LMSTUDIO, TGI, OPENROUTER, GEMINI, ANTHROPIC_API)})


def server(name: str) -> ServerProfile:
    """The profile called ``name``; ``ValueError`` naming the choices."""
    try:
        return SERVERS[name]
    except KeyError:
        raise ValueError(f"unknown upstream profile {name!r} (choose from {', '.join(SERVERS)})") from None


def serving(dialect: WireDialect) -> tuple[ServerProfile, ...]:
    """The profiles of servers that speak ``dialect``."""
    return tuple(s for s in SERVERS.values() if s.serves(dialect))


def rank(server_: ServerProfile, key: str) -> bytes:
    """A stable order of ``key``s for one profile (not the process's hash seed): the default run's sample."""
    return hashlib.sha256(f"{server_.name}:{key}".encode()).digest()
