"""An Anthropic Messages upstream: the neutral request said as a Messages request, the
key in ``x-api-key``, and its events read as chat chunks (or relayed to a Messages client)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from reference_proxy.anthropic_message import MessageAccumulator
from reference_proxy.request_shaping import forward_headers
from reference_proxy.translate.answers import message_to_completion
from reference_proxy.translate.requests import chat_to_messages
from reference_proxy.translate.streams import EventsAsChunks, UpstreamReader
from reference_proxy.upstreams.base import ClientBody, Headers, Outgoing, ReadAnswer, Upstream

ANTHROPIC_VERSION = "2023-06-01"  # sent when the client (of another API) sent none


class MessagesUpstream(Upstream):
    name = "anthropic"
    path = "/messages"

    def headers(self, client: Headers) -> dict[str, str]:
        headers = forward_headers(client, self.config.api_key, key_header="x-api-key")
        headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
        return headers

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return chat_to_messages(chat)

    def messages_request(self, client: Headers, body: ClientBody, stream: bool) -> Outgoing:
        # Its own API: the body as it came (or as tool_choice emulation shaped it), the
        # client's headers as they came (the key aside).
        return Outgoing(self.url, forward_headers(client, self.config.api_key, key_header="x-api-key"), body.wire)

    def chunk_reader(self, model: str) -> UpstreamReader | None:
        return EventsAsChunks(model)

    def event_reader(self, model: str) -> UpstreamReader | None:
        return None

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        return message_to_completion(await self.message(response, model, read), model)

    async def message(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        return await read(response, MessageAccumulator(model))
