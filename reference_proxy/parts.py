"""The pieces of the proxy another variant of it may replace (``Parts``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from reference_proxy.anthropic_stream import AnthropicStreamPipeline
from reference_proxy.connection import events
from reference_proxy.pipeline import StreamPipeline
from reference_proxy.request_shaping import MessagesRequest, parse_messages_request
from reference_proxy.tool_choice import emulate_tool_choice
from reference_proxy.upstreams import REGISTRY, Upstream
from reference_proxy.upstreams.base import Outgoing
from reference_proxy.xml_client import is_xml_client


def parse_and_shape_messages(raw: bytes) -> tuple[MessagesRequest, dict[str, Any] | None]:
    """A Messages request and the body to send upstream instead of the client's (tool_choice emulated)."""
    req = parse_messages_request(raw)
    return req, emulate_tool_choice(req.body)


def ask_upstream(upstream: Upstream, outgoing: Outgoing, refusal: str) -> Outgoing | None:
    """The request the upstream's refusal asks for instead (``Upstream.after_refusal``)."""
    return upstream.after_refusal(outgoing, refusal)


@dataclass(frozen=True)
class Parts:
    """The pieces of the proxy another variant of it may replace, each behind the interface
    the handlers use; the defaults are the reference proxy itself. The test suite's broken
    proxies are built this way (``create_app(config, parts=Parts(chat_pipeline=...))``), so
    one app instance can differ while the proxy served next to it stays correct."""

    # A streamed chat answer: called like ``StreamPipeline``, with keyword arguments.
    chat_pipeline: Callable[..., StreamPipeline] = StreamPipeline
    # A streamed Messages answer: called like ``AnthropicStreamPipeline``.
    messages_pipeline: Callable[..., AnthropicStreamPipeline] = AnthropicStreamPipeline
    # Whether a User-Agent names a client that reads tool calls as XML in the text.
    xml_client: Callable[[str | None, Sequence[str]], bool] = is_xml_client
    # A Messages request body: the parsed request, and the body to send instead (None: as it came).
    parse_messages: Callable[[bytes], tuple[MessagesRequest, dict[str, Any] | None]] = parse_and_shape_messages
    # What to send instead of a request the upstream refused with 400 (None: pass the refusal on).
    after_refusal: Callable[[Upstream, Outgoing, str], Outgoing | None] = ask_upstream
    # The upstream's SSE body as events, a list per network read.
    upstream_events: Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]] = events
    # Each upstream API's implementation by its configuration name (``upstreams.REGISTRY``).
    upstreams: Mapping[str, type[Upstream]] = field(default_factory=lambda: REGISTRY)
