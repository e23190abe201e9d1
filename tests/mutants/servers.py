"""Proxies that break on one real server's habit (``harness.core.dialects.servers``), each
correct against the ideal server the mock plays by default: each is caught only when its
scenario is played under that server's profile (``tests/core/test_upstream_profiles.py``).

Each is the reference proxy with its reader of upstream chunks or events changed
(``Parts``), the way proxies were seen to break on these servers in the field.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mutants.base import Mutant, with_parts

from reference_proxy.connection import events
from reference_proxy.parts import Parts
from reference_proxy.pipeline import StreamPipeline


def _choices(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    choices = chunk.get("choices")
    return [c for c in choices if isinstance(c, dict)] if isinstance(choices, list) else []


class CrashesOnNullContent(StreamPipeline):
    """Appends every delta's content to a string without looking: ``content: null`` raises."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            if isinstance(delta, dict) and "content" in delta:
                "" + delta["content"]  # TypeError on null
        return super().feed(chunk)


class LosesTextAfterBackslash(StreamPipeline):
    """Holds a delta ending in a lone backslash as an unfinished escape, then drops the delta after it."""

    after_backslash = False

    def _content(self, choice: Any, text: str) -> str:
        if self.after_backslash:
            self.after_backslash = text.endswith("\\")
            return ""
        self.after_backslash = text.endswith("\\")
        return super()._content(choice, text)


class CrashesOnEmptyChoices(StreamPipeline):
    """Reads ``choices[0]`` of every chunk that is not the usage chunk."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        if not isinstance(chunk.get("usage"), Mapping):
            chunk["choices"][0]  # IndexError on choices: []
        return super().feed(chunk)


class CrashesOnChoiceWithoutDelta(StreamPipeline):
    """Reads ``choice["delta"]`` of every choice."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            choice["delta"]  # KeyError on a filter annotation
        return super().feed(chunk)


class MergesUnnumberedCalls(StreamPipeline):
    """A call delta without an ``index`` is taken for call 0."""

    @staticmethod
    def _unnumbered(choice: Any, delta: Mapping[str, Any], function: Mapping[str, Any]) -> int:
        return 0


class IgnoresCallObject(StreamPipeline):
    """Reads ``tool_calls`` only when it is a list."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("tool_calls"), dict):
                del delta["tool_calls"]
        return super().feed(chunk)


class DropsObjectArguments(StreamPipeline):
    """Takes arguments only as a string: an object is lost (the call goes out with ``{}``)."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            for call in calls if isinstance(calls, list) else [calls] if isinstance(calls, dict) else []:
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and not isinstance(fn.get("arguments"), str):
                    fn.pop("arguments", None)
        return super().feed(chunk)


class EmptyIdStartsACall(StreamPipeline):
    """Takes any delta that has an ``id`` key (even ``""``) for the start of a new call."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            delta = choice.get("delta")
            calls = delta.get("tool_calls") if isinstance(delta, dict) else None
            for call in calls if isinstance(calls, list) else ():
                if isinstance(call, dict) and call.get("id") == "":
                    call["index"] = int(call.get("index") or 0) + 1
        return super().feed(chunk)


class FinishBeforeDelta(StreamPipeline):
    """Handles a chunk's finish reason before its delta: a chunk that carries both loses the delta."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            if choice.get("finish_reason"):
                choice.pop("delta", None)
        return super().feed(chunk)


class EmptyReasonFinishes(StreamPipeline):
    """Takes any ``finish_reason`` that is not null, ``""`` included, for the end of the answer."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        for choice in _choices(chunk):
            if choice.get("finish_reason") == "":
                choice["finish_reason"] = "stop"
        return super().feed(chunk)


class UsageEndsTheAnswer(StreamPipeline):
    """Takes the first chunk carrying usage for the last one (usage comes at the end, doesn't it)."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        out = super().feed(chunk)
        if isinstance(chunk.get("usage"), Mapping) and _choices(chunk):
            return out + self.close()
        return out


class CrashesOnNullUsage(StreamPipeline):
    """Reads ``usage.total_tokens`` whenever a chunk has a ``usage`` key."""

    def feed(self, chunk: Mapping[str, Any]) -> str:
        if "usage" in chunk:
            chunk["usage"]["total_tokens"]  # TypeError on usage: null
        return super().feed(chunk)


async def ends_at_ping(response: Any) -> Any:
    """The upstream's events up to its first ``ping``, taken for the end of the stream."""
    async for batch in events(response):
        kept = list(itertools.takewhile(lambda e: e.event != "ping", batch))
        if kept:
            yield kept
        if len(kept) < len(batch):
            return


class CommentAsEmptyEvent(StreamPipeline):
    """Relays an event with empty data as an empty event (with ``comment_events``, a comment becomes one)."""

    def feed_data(self, data: str) -> str:
        if not data.strip():
            return "data: \n\n"
        return super().feed_data(data)


async def comment_events(response: Any) -> Any:
    """The upstream's SSE read line by line, a comment line taken for an event with empty data."""
    from httpx_sse import ServerSentEvent

    data: list[str] = []
    event = ""
    async for line in response.aiter_lines():
        if line.startswith(":"):
            yield [ServerSentEvent(data="")]
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif not line and data:
            yield [ServerSentEvent(event=event or "message", data="\n".join(data))]
            data, event = [], ""
    if data:
        yield [ServerSentEvent(event=event or "message", data="\n".join(data))]


@dataclass(frozen=True)
class ServerMutant:
    """A proxy that breaks on one habit of ``server``: its rules fail under that server only."""

    server: str
    habit: str
    mutant: Mutant


def _chat(cls: type[StreamPipeline]) -> Any:
    return with_parts(Parts(chat_pipeline=cls))


SERVER_MUTANTS: tuple[ServerMutant, ...] = (
    ServerMutant("llamacpp", "content-null-first", Mutant(
        "crashes-on-null-content", "crashes on a delta whose content is null", ("CALLS-001",),
        ("plain-native-single",), _chat(CrashesOnNullContent))),
    ServerMutant("llamacpp", "lone-backslash", Mutant(
        "loses-text-after-backslash", "drops the delta after one ending in a lone backslash", ("CALLS-001",),
        ("deepseek-deepseek-v3.long-argument",), _chat(LosesTextAfterBackslash))),
    ServerMutant("azure", "prompt-filter-first", Mutant(
        "crashes-on-empty-choices", "reads choices[0] of a chunk without choices", ("CALLS-001",),
        ("plain-native-single",), _chat(CrashesOnEmptyChoices))),
    ServerMutant("azure", "filter-offsets-chunk", Mutant(
        "crashes-on-choice-without-delta", "reads the delta of a choice that has none", ("CALLS-001",),
        ("plain-native-single",), _chat(CrashesOnChoiceWithoutDelta))),
    ServerMutant("ollama", "no-index", Mutant(
        "merges-unnumbered-calls", "takes every call without an index for call 0", ("CALLS-001",),
        ("plain-native-parallel",), _chat(MergesUnnumberedCalls))),
    ServerMutant("tgi", "tool-calls-object", Mutant(
        "ignores-call-object", "reads tool_calls only as a list", ("CALLS-001",),
        ("plain-native-single",), _chat(IgnoresCallObject))),
    ServerMutant("tgi", "arguments-object", Mutant(
        "drops-object-arguments", "reads arguments only as a string", ("CALLS-001",),
        ("plain-native-single",), _chat(DropsObjectArguments))),
    ServerMutant("lmstudio", "empty-identity", Mutant(
        "empty-id-starts-a-call", 'takes a continuation\'s id: "" for a new call', ("CALLS-001",),
        ("plain-native-single",), _chat(EmptyIdStartsACall))),
    ServerMutant("sglang", "two-finishes", Mutant(
        "finish-before-delta", "handles a chunk's finish reason before its delta", ("CALLS-001",),
        ("plain-native-single",), _chat(FinishBeforeDelta))),
    ServerMutant("gemini", "finish-in-last-delta", Mutant(
        "finish-before-delta", "handles a chunk's finish reason before its delta", ("CALLS-001",),
        ("plain-native-single",), _chat(FinishBeforeDelta))),
    ServerMutant("sglang", "empty-finish-reason", Mutant(
        "empty-reason-finishes", 'takes finish_reason "" for the end of the answer', ("CALLS-001",),
        ("plain-native-single",), _chat(EmptyReasonFinishes))),
    ServerMutant("vllm", "continuous-usage", Mutant(
        "usage-ends-the-answer", "takes the first chunk with usage for the last", ("TEXT-001",),
        ("plain-include-usage",), _chat(UsageEndsTheAnswer))),
    ServerMutant("openai", "usage-null", Mutant(
        "crashes-on-null-usage", "reads usage.total_tokens of a chunk whose usage is null", ("TEXT-001",),
        ("plain-include-usage",), _chat(CrashesOnNullUsage))),
    ServerMutant("anthropic-api", "pings", Mutant(
        "ping-ends-the-answer", "takes a ping for the end of the stream", ("CALLS-001",),
        ("anthropic-native-tool-use",), with_parts(Parts(upstream_events=ends_at_ping)))),
    ServerMutant("openrouter", "processing-comments", Mutant(
        "comment-as-empty-event", "relays an SSE comment as an event with empty data", ("CHUNK-001",),
        ("plain-native-single",), with_parts(Parts(chat_pipeline=CommentAsEmptyEvent,
                                                     upstream_events=comment_events)))),
)
