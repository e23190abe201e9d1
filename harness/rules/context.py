"""Everything the rules read about one exchange, each part computed once, on demand."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from harness.assemble import (
    Answer,
    Payload,
    ResponseKind,
    answer_from_body,
    assemble_stream,
    parse_body,
    response_kind,
    stream_payloads,
)
from harness.compare import CallView, render, shorten
from harness.exchange import Exchange
from harness.rules.registry import Options, Stage
from harness.scenario import Scenario
from harness.sdk_compat import SdkReading, read_stream
from harness.sse import SSEStream, parse_events
from harness.xml_calls import XmlParse, parse_xml_calls, tool_vocabulary


class Context:
    """One scenario run as the rules see it."""

    def __init__(self, scenario: Scenario, exchange: Exchange, options: Options) -> None:
        self.scenario = scenario
        self.exchange = exchange
        self.options = options
        self.expect = scenario.expect

    # ------------------------------------------------------------------ what arrived

    @cached_property
    def responded(self) -> bool:
        ex = self.exchange
        return ex.status is not None and ex.transport_error is None and not ex.timed_out

    @cached_property
    def kind(self) -> ResponseKind:
        return response_kind(self.exchange)

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
        return parse_events(self.exchange.raw)

    @cached_property
    def payloads(self) -> tuple[Payload, ...]:
        return stream_payloads(self.stream.events)

    @cached_property
    def chunks(self) -> tuple[tuple[Payload, dict[str, Any]], ...]:
        """Payloads that are chunks (JSON objects that are not error reports)."""
        return tuple((p, p.chunk) for p in self.payloads if p.chunk is not None)

    @cached_property
    def body(self) -> tuple[Any, str | None]:
        return parse_body(self.exchange.raw)

    @cached_property
    def answer(self) -> Answer:
        if self.kind == "sse":
            return assemble_stream(self.payloads)
        if self.kind == "json":
            return answer_from_body(self.body[0])
        return Answer("", (), None, None, None)

    # ------------------------------------------------------------------ profile-aware reading

    @cached_property
    def tools(self) -> dict[str, frozenset[str]]:
        return tool_vocabulary(self.scenario.client.request)

    @cached_property
    def xml(self) -> XmlParse:
        return parse_xml_calls(self.answer.content, self.tools)

    @cached_property
    def received_calls(self) -> tuple[CallView, ...]:
        """The calls the client acts on: structured calls, or XML calls for vtc."""
        if self.options.profile == "vtc":
            return tuple(CallView(c.name, dict(c.params), render(dict(c.params))) for c in self.xml.calls)
        return tuple(CallView.from_json_text(c.name, c.arguments) for c in self.answer.tool_calls)

    @cached_property
    def visible_text(self) -> str:
        """The text the user sees: the content, minus the XML calls for vtc."""
        return self.xml.outside if self.options.profile == "vtc" else self.answer.content

    @cached_property
    def expected_calls(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [(c.name, c.arguments) for c in self.expect.tool_calls]

    @cached_property
    def expected_finish(self) -> str | None:
        """The finish reason this profile must see (a vtc client always gets "stop",
        unless the case expects something other than a normal end)."""
        wanted = self.expect.finish_reason
        if self.options.profile == "vtc":
            return wanted if wanted not in (None, "stop", "tool_calls") else "stop"
        if wanted == "stop" and self.expect.tool_calls:
            return "tool_calls"  # a case written for vtc, run as a structured-call client
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
        content_type = self.exchange.response_headers.get("content-type", "text/event-stream")
        return read_stream(self.exchange.raw, {"content-type": content_type})

    # ------------------------------------------------------------------ evidence

    def at(self, payload: Payload, **extra: Any) -> dict[str, Any]:
        """Evidence locating one stream event."""
        event = payload.event
        return {
            "event_index": event.index,
            "byte_offset": event.byte_offset,
            "excerpt": shorten(event.data, 200),
            **extra,
        }
