"""An OpenAI Chat Completions upstream: the neutral request is its own request."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from reference_proxy.completion import StreamAccumulator
from reference_proxy.translate.streams import UpstreamReader
from reference_proxy.upstreams.base import ClientBody, Headers, Outgoing, ReadAnswer, Upstream


class ChatUpstream(Upstream):
    name = "openai"

    @property
    def url(self) -> str:
        return self.config.chat_url

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return dict(chat)

    def chat_request(self, client: Headers, body: ClientBody, stream: bool) -> Outgoing:
        return Outgoing(self.url, self.headers(client), body.wire)  # its own API: as it came

    def chunk_reader(self, model: str) -> UpstreamReader | None:
        return None

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        return await read(response, StreamAccumulator(model))
