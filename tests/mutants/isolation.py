"""Proxies whose parser state outlives a request, or is shared by requests or choices.

Each passes every exchange played on its own and breaks only when exchanges are in
flight together, follow one another, or share one request: the failure modes of
vllm-mlx #649 (module-level parsers), vLLM #39214 (a call counter carried from one
request into the next), vLLM #38158 (one parser for the ``n`` choices of a request).
Each mutant's state lives in its app instance (made by ``build``), so the reference
proxy served in the same process is untouched.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import count
from typing import Any

from starlette.types import ASGIApp

from mutants.base import Mutant, with_parts
from reference_proxy.anthropic_stream import AnthropicStreamPipeline
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig
from reference_proxy.parts import Parts
from reference_proxy.pipeline import StreamPipeline, _Choice
from reference_proxy.rescue import Event, Rescuer, ToolSpec

IN_FLIGHT = "isolation-hermes-in-flight"
INVOKE_IN_FLIGHT = "isolation-anthropic-invoke-in-flight"
CODER_IN_FLIGHT = "isolation-qwen-coder-in-flight"
N_CHOICES = "isolation-n-choices"
NATIVE_IN_FLIGHT = "isolation-native-in-flight"


class SharedRescuer:
    """One rescuer for every stream of the process, started afresh whenever a stream ends:
    right for one client at a time, a mix of everyone's text with two in flight."""

    def __init__(self) -> None:
        self.inner: Rescuer | None = None
        self.fed = False  # text went in since the last reset
        self.tools: Sequence[ToolSpec] = ()
        self.buffer_cap = 65536

    def __call__(self, tools: Sequence[ToolSpec], buffer_cap: int) -> SharedRescuer:
        if not self.fed:  # idle: the next stream's tools are taken
            self.tools, self.buffer_cap = tools, buffer_cap
            self.inner = Rescuer(tools, buffer_cap=buffer_cap)
        return self

    @property
    def overflowed(self) -> bool:
        return self.inner is not None and self.inner.overflowed

    def feed(self, text: str) -> list[Event]:
        assert self.inner is not None
        self.fed = True
        return self.inner.feed(text)

    def finish(self) -> list[Event]:
        assert self.inner is not None
        events = self.inner.finish()
        self.inner = Rescuer(self.tools, buffer_cap=self.buffer_cap)
        self.fed = False
        return events


def module_level_parser(config: ProxyConfig) -> ASGIApp:
    shared = SharedRescuer()  # one for both APIs' streams, as a module-level parser would be
    return create_app(config, parts=Parts(chat_pipeline=partial(StreamPipeline, rescuer_factory=shared),
                                          messages_pipeline=partial(AnthropicStreamPipeline, rescuer_factory=shared)))


def call_counter_from_start_up(config: ProxyConfig) -> ASGIApp:
    """Numbers streamed calls from a counter set when the proxy starts, never per answer."""
    counter = count()

    class CountedPipeline(StreamPipeline):
        def _deliver(self, choice: _Choice, name: str, arguments: str, out: list[str]) -> int | None:
            choice.next_call = next(counter)  # the call's output index is next_call after the increment
            return super()._deliver(choice, name, arguments, out)

    return create_app(config, parts=Parts(chat_pipeline=CountedPipeline))


class ChoicesShareOneParser(StreamPipeline):
    """Every choice of an answer feeds the rescuer the first choice opened."""

    def _open_choice(self, index: int, emitter: Any, out: list[str]) -> _Choice:
        first = next(iter(self._choices.values()), None)
        choice = super()._open_choice(index, emitter, out)
        if first is not None:
            choice.rescuer = first.rescuer
        return choice


def buffer_by_model(config: ProxyConfig) -> ASGIApp:
    """Keeps each model's rescuer (what it holds back included) from one request to the next,
    as a proxy keeping its parse buffer under the model name instead of the request would."""
    by_model: dict[str, Rescuer] = {}

    class ByModel(StreamPipeline):
        def _open_choice(self, index: int, emitter: Any, out: list[str]) -> _Choice:
            choice = super()._open_choice(index, emitter, out)
            if choice.rescuer is not None:
                choice.rescuer = by_model.setdefault(self.request_model, Rescuer(self.tools, buffer_cap=self.buffer_cap))
            return choice

        def _end_choice(self, choice: _Choice, out: list[str], *, complete_natives: bool) -> None:
            choice.rescuer = None  # the buffer stays with the model for the next request
            super()._end_choice(choice, out, complete_natives=complete_natives)

    return create_app(config, parts=Parts(chat_pipeline=ByModel))


def native_calls_shared(config: ProxyConfig) -> ASGIApp:
    """Buffers native call fragments in one table for every stream, by call index, emptied
    when a stream finishes: one client at a time never notices."""
    table: dict[int, Any] = {}

    class SharedNatives(StreamPipeline):
        def _open_choice(self, index: int, emitter: Any, out: list[str]) -> _Choice:
            choice = super()._open_choice(index, emitter, out)
            choice.native = table
            return choice

        def _finish(self, choice: _Choice, upstream_reason: str | None, out: list[str]) -> None:
            super()._finish(choice, upstream_reason, out)
            table.clear()

    return create_app(config, parts=Parts(chat_pipeline=SharedNatives))


MUTANTS: tuple[Mutant, ...] = (
    Mutant("module-level-parser", "Keeps one rescuer for every stream of the process, reset when any stream ends.",
           ("ISO-001", "ISO-002"), (IN_FLIGHT,), module_level_parser),
    Mutant("module-level-parser-messages", "The same, played by Messages clients (leaked invoke XML in text deltas).",
           ("ISO-002", "ISO-004"), (INVOKE_IN_FLIGHT,), module_level_parser),
    Mutant("call-counter-from-start-up", "Numbers streamed calls from a counter set at start-up, not per answer.",
           ("ISO-003",), (CODER_IN_FLIGHT,), call_counter_from_start_up),
    Mutant("parser-shared-by-choices", "Feeds every choice of an `n` > 1 answer into one rescuer.",
           ("ISO-005",), (N_CHOICES,), with_parts(Parts(chat_pipeline=ChoicesShareOneParser))),
    Mutant("native-calls-shared", "Buffers native call fragments in one table for every stream, by call index.",
           ("ISO-001", "ISO-002", "ISO-004"), (NATIVE_IN_FLIGHT,), native_calls_shared),
    Mutant("buffer-by-model", "Keeps the rescue buffer under the model name, across requests.",
           ("ISO-001", "ISO-004"), (IN_FLIGHT,), buffer_by_model),
)
