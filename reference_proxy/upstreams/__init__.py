"""The upstream APIs the proxy can call, one module each behind ``Upstream`` (``base``).

A new upstream dialect is one module here (an ``Upstream`` subclass: its path, headers,
translation of the neutral chat request, and readers of its stream and whole answer; a
``DecodedUpstream`` when its stream is not SSE, with a ``BodyDecoder`` of its own in
``decoded``'s terms) and one entry in ``REGISTRY``; its name goes in
``config.UPSTREAM_DIALECTS`` too (the tests hold the two equal), which is what the
configuration accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from reference_proxy.upstreams.base import ClientBody, EventSink, Outgoing, ReadAnswer, Upstream
from reference_proxy.upstreams.chat import ChatUpstream
from reference_proxy.upstreams.kiro import KiroUpstream
from reference_proxy.upstreams.messages import MessagesUpstream
from reference_proxy.upstreams.ollama import OllamaUpstream
from reference_proxy.upstreams.responses import ResponsesUpstream

if TYPE_CHECKING:
    from reference_proxy.config import ProxyConfig

__all__ = ["REGISTRY", "ClientBody", "EventSink", "Outgoing", "ReadAnswer", "Upstream", "upstream_for"]

#: Each upstream API by its name in the configuration (``upstream_dialect``).
REGISTRY: Mapping[str, type[Upstream]] = MappingProxyType(
    {cls.name: cls for cls in (ChatUpstream, MessagesUpstream, ResponsesUpstream, KiroUpstream, OllamaUpstream)})


def upstream_for(config: ProxyConfig, client_api: str, registry: Mapping[str, type[Upstream]] = REGISTRY) -> Upstream:
    """The upstream a client of ``client_api`` ("openai", "anthropic", "responses") is served by."""
    return registry[config.calls_upstream(client_api)](config)
