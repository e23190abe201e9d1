"""An OpenAI Responses upstream: the neutral request said as a Responses request, its
events read as chat chunks, its ``response`` object as a ``chat.completion``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from reference_proxy.completion import StreamAccumulator
from reference_proxy.connection import is_event_stream, read_json
from reference_proxy.request_shaping import ChatRequest
from reference_proxy.responses_answers import response_to_completion
from reference_proxy.responses_requests import chat_to_responses_request
from reference_proxy.responses_streams import ResponsesAsChunks
from reference_proxy.translate.streams import UpstreamReader
from reference_proxy.upstreams.base import ClientBody, Headers, Outgoing, ReadAnswer, Upstream


class ResponsesSink:
    """Folds a Responses stream into one ``chat.completion`` (an ``EventSink``)."""

    def __init__(self, request_model: str) -> None:
        self.reader = ResponsesAsChunks(request_model)
        self.accumulator = StreamAccumulator(request_model)

    @property
    def done(self) -> bool:
        return self.accumulator.done

    def feed_event(self, event: str, data: str) -> None:
        for item in self.reader.read(data):
            if isinstance(item, str):
                self.accumulator.feed_event("", item)
            else:
                self.accumulator.feed(item)

    def result(self) -> dict[str, Any]:
        return self.accumulator.result()


class ResponsesUpstream(Upstream):
    name = "responses"
    path = "/responses"
    runs_hosted_tools = True

    def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
        return chat_to_responses_request(chat, stream)

    def responses_request(self, client: Headers, body: ClientBody, chat: ChatRequest) -> Outgoing:
        return Outgoing(self.url, self.headers(client), body.wire)  # its own API: as it came

    def chunk_reader(self, model: str) -> UpstreamReader | None:
        return ResponsesAsChunks(model)

    async def completion(self, response: httpx.Response, model: str, read: ReadAnswer) -> dict[str, Any]:
        if is_event_stream(response):
            return await read(response, ResponsesSink(model))
        try:
            return response_to_completion(await read_json(response), model)
        finally:
            await response.aclose()
