"""Everything the rules read about one exchange, each part computed once, on demand.

The reading follows the client's dialect (``harness.judge.readers.reading``): an anthropic exchange
is read as Messages events or a Messages body, a responses one as Responses events or a
``response`` body, every other one as chat-completion chunks or a chat.completion body;
all end up as the shared ``Answer``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from functools import cached_property
from typing import Any, Literal, TypeVar

from harness.core.dialects import WireDialect
from harness.core.dialects.clients import default_profiles, reads_own_api
from harness.core.exchange import Exchange
from harness.core.scenario.model import Scenario
from harness.judge.compare import CallView, parse_object, render, shorten
from harness.judge.readers.anthropic_events import AnthropicEvent, Block, collect_blocks
from harness.judge.readers.assemble import Answer, Payload, ResponseKind
from harness.judge.readers.reading import Reading
from harness.judge.readers.responses_events import ResponsesEvent
from harness.judge.readers.sdk_compat import SdkReading
from harness.judge.readers.sse import SSEEvent, SSEStream
from harness.judge.readers.xml_calls import XmlParse, parse_xml_calls, tool_vocabulary
from harness.judge.rules.terms import Options, Stage

T = TypeVar("T")


def effective_options(options: Options, exchange: Exchange) -> Options:
    """The options an exchange is judged under: an exchange of a profile that alone reads
    its API (anthropic, responses) is always judged under that profile, whatever profile
    the options name (its body cannot be read as chat completions); options naming such
    a profile read any exchange in its API."""
    if reads_own_api(exchange.profile) and options.profile is not exchange.profile:
        return dataclasses.replace(options, profile=exchange.profile)
    return options


def broken_arguments(scenario: Scenario) -> frozenset[str]:
    """The arguments, joined, of each native call of the backend that are no JSON object
    (an empty text aside, which means no arguments): what a proxy may only pass on unchanged."""
    backend = scenario.backend
    joined = backend.dialect.calls.arguments(backend.frames)
    return frozenset(text for text in joined if text.strip() and parse_object(text) is None)


class Context:
    """One scenario run as the rules see it."""

    def __init__(self, scenario: Scenario, exchange: Exchange, options: Options) -> None:
        self.scenario = scenario
        self.exchange = exchange
        self.options = options
        self.expect = scenario.expect
        self._derived: dict[Callable[[Context], Any], Any] = {}

    def derived(self, compute: Callable[[Context], T]) -> T:
        """``compute(self)``, computed once for this exchange whichever rule asks first
        (for readings that several rules of one group share)."""
        if compute not in self._derived:
            self._derived[compute] = compute(self)
        result: T = self._derived[compute]
        return result

    @cached_property
    def dialect(self) -> WireDialect:
        """The API the client speaks, which decides how the answer is read."""
        return self.options.profile.answers

    @cached_property
    def reads_xml(self) -> bool:
        """Whether the client reads tool calls as XML in the text (the xml-client profile)."""
        return self.options.profile.reads_xml

    @cached_property
    def reading(self) -> Reading:
        return Reading(self.exchange, self.dialect)

    # ------------------------------------------------------------------ what arrived

    @cached_property
    def responded(self) -> bool:
        ex = self.exchange
        return ex.status is not None and ex.transport_error is None and not ex.timed_out

    @cached_property
    def kind(self) -> ResponseKind:
        return self.reading.kind

    def in_stage(self, stage: Stage) -> bool:
        if stage == "always":
            return True
        if not self.responded:
            return False
        if stage == "response":
            return True
        if self.exchange.status != 200:
            return False
        if stage == "stream":
            return self.kind == "sse"
        if stage == "single":
            return self.kind == "json"
        return True

    @cached_property
    def stream(self) -> SSEStream:
        return self.reading.stream

    @cached_property
    def payloads(self) -> tuple[Payload, ...]:
        return self.reading.payloads

    @cached_property
    def chunks(self) -> tuple[tuple[Payload, dict[str, Any]], ...]:
        """Payloads that are chunks (JSON objects that are not error reports)."""
        return tuple((p, p.chunk) for p in self.payloads if p.chunk is not None)

    @cached_property
    def body(self) -> tuple[Any, str | None]:
        return self.reading.body

    @cached_property
    def excerpt(self) -> str:
        """The start of the answer as received, as a message quotes it."""
        return self.exchange.raw[:200].decode("utf-8", "replace")

    @cached_property
    def events(self) -> tuple[AnthropicEvent, ...]:
        """An anthropic stream's events, every one of them (a Messages stream has no terminator)."""
        return self.reading.events

    @cached_property
    def blocks(self) -> list[Block]:
        """An anthropic stream's content blocks, as every event addressed them."""
        return collect_blocks(self.events)

    @cached_property
    def responses_events(self) -> tuple[ResponsesEvent, ...]:
        """A Responses stream's events, every one of them."""
        return self.reading.responses_events

    @cached_property
    def answer(self) -> Answer:
        return self.reading.answer

    # ------------------------------------------------------------------ errors and faults

    @cached_property
    def stream_errors(self) -> tuple[SSEEvent, ...]:
        """The events of a 200 stream that report an error, in whatever shape."""
        if not self.in_stage("stream"):
            return ()
        return self.reading.stream_errors

    @cached_property
    def in_stream_policy(self) -> Literal["allowed", "required", "forbidden"]:
        """Whether the scenario allows an error inside a started stream (never, unless it expects an error)."""
        return self.expect.error.in_stream if self.expect.error is not None else "forbidden"

    @cached_property
    def error_accepted(self) -> bool:
        """The stream carries an error and the scenario expects one there."""
        return bool(self.stream_errors) and self.in_stream_policy != "forbidden"

    @cached_property
    def cut_where_failure_expected(self) -> bool:
        """The proxy answered 200, then cut the connection, in a case whose upstream fails
        and whose scenario lets the failure be reported inside the stream."""
        ex = self.exchange
        return (ex.status == 200 and ex.transport_error is not None and not ex.timed_out
                and self.in_stream_policy != "forbidden")

    @cached_property
    def expected_content(self) -> str | None:
        """The visible text this answer must hold: ``expect.error.content`` when an error
        inside the stream, which the scenario accepts, ended it, else ``expect.content``."""
        error = self.expect.error
        if error is not None and error.content is not None and self.error_accepted:
            return error.content
        return self.expect.content

    @cached_property
    def expected_regex(self) -> str | None:
        """The pattern the content must match: ``expect.content_regex``, unless an error inside the
        stream, which the scenario accepts, ended the answer and ``expect.error.content`` says its text."""
        error = self.expect.error
        if error is not None and error.content is not None and self.error_accepted:
            return None
        return self.expect.content_regex

    def runs(self, arguments: str) -> bool:
        """Whether a client runs a call with these arguments. In a stream that ended with
        an error the scenario accepts, a call whose arguments are not one JSON object yet
        never runs: openai-python and openai-node raise at the error chunk, the AI SDK
        emits a call only once its arguments parse, and the Anthropic SDKs raise at
        ``event: error``. A call cut short like this is the error's doing, not a call.
        Nor is the backend's own broken call passed on with its arguments exactly as sent:
        no client can parse them into a call to run."""
        if parse_object(arguments) is not None:
            return True
        return not self.error_accepted and arguments not in self.broken_backend_arguments

    @cached_property
    def broken_backend_arguments(self) -> frozenset[str]:
        return broken_arguments(self.scenario)

    @cached_property
    def fault_case(self) -> bool:
        """A scenario about things going wrong: an upstream fault, a misbehaving client,
        or an expected error."""
        sent = self.scenario.client
        return (
            self.scenario.backend.fault is not None
            or self.expect.error is not None
            or sent.raw_body is not None
            or sent.truncate_body
            or sent.pad_bytes is not None
        )

    # ------------------------------------------------------------------ profile-aware reading

    @cached_property
    def tools(self) -> dict[str, frozenset[str]]:
        return tool_vocabulary(self.scenario.client.request)

    @cached_property
    def xml(self) -> XmlParse:
        return parse_xml_calls(self.answer.content, self.tools)

    @cached_property
    def received_calls(self) -> tuple[CallView, ...]:
        """The calls the client acts on: structured calls, or XML calls for xml-client."""
        if self.reads_xml:
            return tuple(CallView(c.name, dict(c.params), render(dict(c.params))) for c in self.xml.calls)
        return tuple(CallView.from_json_text(c.name, c.arguments) for c in self.answer.tool_calls
                     if self.runs(c.arguments))

    @cached_property
    def visible_text(self) -> str:
        """The text the user sees: the content, minus the XML calls for xml-client."""
        return self.xml.outside if self.reads_xml else self.answer.content

    @cached_property
    def expected_calls(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(c.name, c.arguments) for c in self.expect.tool_calls]

    @cached_property
    def expected_finish(self) -> str | None:
        """The finish reason this profile must see (an XML-reading client always gets "stop",
        unless the case expects something other than a normal end)."""
        wanted = self.expect.finish_reason
        if not any(p.reads_xml for p in default_profiles(self.options.profile)):
            return wanted  # a case no XML-reading client shares says its finish in the API's own words
        if self.reads_xml:
            return wanted if wanted not in (None, "stop", "tool_calls") else "stop"
        if wanted == "stop" and self.expect.tool_calls:
            return "tool_calls"  # a case written for xml-client, run as a structured-call client
        return wanted

    @cached_property
    def allowed_markup(self) -> str:
        """The part of the expected answer that may legitimately hold markup."""
        if self.expect.content is not None:
            return self.expect.content
        if self.expect.content_regex is not None:
            m = re.search(self.expect.content_regex, self.answer.content, re.DOTALL)
            return m.group(0) if m else ""
        return ""

    @cached_property
    def sdk(self) -> SdkReading:
        """The stream as the dialect's official SDK reads it. When the SDK raised its own
        report of an error event the scenario expects, that is the client doing its
        job: the reading then holds what the SDK had accumulated, without the error."""
        content_type = self.exchange.response_headers.get("content-type", "text/event-stream")
        reading = self.reading.reader.sdk(self.exchange.raw, {"content-type": content_type})
        if reading.error_event and self.error_accepted:
            return dataclasses.replace(reading, error=None)
        return reading

    # ------------------------------------------------------------------ evidence

    def at(self, payload: Payload, **extra: Any) -> dict[str, Any]:
        """Evidence locating one stream event."""
        return self.at_event(payload.event, **extra)

    def at_event(self, event: SSEEvent, **extra: Any) -> dict[str, Any]:
        """Evidence locating one dispatched SSE event, with an excerpt of its data."""
        return {**position(event), "excerpt": shorten(event.data, 200), **extra}


def position(event: SSEEvent) -> dict[str, Any]:
    """Where one dispatched SSE event sits, and nothing else: evidence a rule can add
    to its own without any key of its own being replaced."""
    return {"event_index": event.index, "byte_offset": event.byte_offset}
