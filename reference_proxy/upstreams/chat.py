"""An OpenAI Chat Completions upstream: the neutral request is its own request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

import json

from reference_proxy.completion import StreamAccumulator
from reference_proxy.translate.system_first import TEMPLATE_REFUSAL, late_system, system_first
from reference_proxy.translate.streams import UpstreamReader
from reference_proxy.upstreams.base import ClientBody, Headers, Outgoing, ReadAnswer, Upstream, as_wire


class ChatUpstream(Upstream):
    name = "openai"
    path = "/chat/completions"

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return dict(chat)

    def chat_request(self, client: Headers, body: ClientBody, stream: bool) -> Outgoing:
        return Outgoing(self.url, self.headers(client), body.wire)  # its own API: as it came

    def after_refusal(self, outgoing: Outgoing, refusal: str) -> Outgoing | None:
        """A chat template that takes system text only first (``translate.system_first``): the same
        request again with every system text in one leading system message."""
        if TEMPLATE_REFUSAL not in refusal:
            return None
        try:
            body = json.loads(outgoing.content)
        except ValueError:
            return None
        if not isinstance(body, dict) or not late_system(body.get("messages")):
            return None
        return Outgoing(outgoing.url, outgoing.headers, as_wire(system_first(body)))

    def chunk_reader(self, model: str) -> UpstreamReader | None:
        return None

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        return await read(response, StreamAccumulator(model))
