"""``POST /v1/responses``: the OpenAI Responses API in front of a Chat Completions, a
Messages or a Responses upstream, with text-call rescue.

The answer runs through the chat pipeline whatever the upstream speaks: the upstream's
events are read as chat chunks first (its ``chunk_reader``), and the pipeline's chunks are
written as Responses events for the client (``ChunksAsResponses``). Errors are
OpenAI-shaped, as the Responses API's are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from reference_proxy.completion import completion_as_chunks, finish_completion
from reference_proxy.errors import INVALID_REQUEST, ProxyError, error_body
from reference_proxy.loop_guard import stop_completion, stop_message
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.pipeline import StreamPipeline
from reference_proxy.request_shaping import ChatRequest, count_tool_messages, parse_chat_request
from reference_proxy.responses_answers import completion_to_response
from reference_proxy.responses_requests import responses_to_chat, unoffered_note
from reference_proxy.responses_streams import ChunksAsResponses
from reference_proxy.routes.shared import AnswerPipeline, Proxy, error_response, log
from reference_proxy.translate.streams import TranslatedPipeline, WrappedPipeline
from reference_proxy.upstreams import ClientBody


class ResponsesOutput(WrappedPipeline):
    """The chat pipeline with its output written as Responses events (what the relay drives)."""

    inner: StreamPipeline

    def __init__(self, inner: StreamPipeline, writer: ChunksAsResponses) -> None:
        super().__init__(inner)
        self.writer = writer

    def _written(self, text: str) -> str:
        out = []
        for block in text.split("\n\n"):
            for line in block.split("\n"):
                if line.startswith("data: "):
                    out.append(self.writer.read(line[6:]))
        return "".join(out)

    def feed_data(self, data: str) -> str:
        return self._written(self.inner.feed_data(data))

    def feed(self, payload: Mapping[str, Any]) -> str:
        return self._written(self.inner.feed(payload))

    def fail(self, error: Mapping[str, Any]) -> str:
        return self._written(self.inner.fail(error)) + self.writer.finish()

    def close(self) -> str:
        return self._written(self.inner.close()) + self.writer.finish()


def parse_responses_request(raw: bytes) -> tuple[dict[str, Any], ChatRequest]:
    """The client's Responses body, and the chat request it amounts to; ``ProxyError`` 400 when it is not one."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise ProxyError(400, error_body("We could not parse the JSON body of your request: it is not valid JSON.",
                                         type=INVALID_REQUEST, code="invalid_json")) from None
    if not isinstance(body, dict):
        raise ProxyError(400, error_body(f"The request body must be a JSON object, got {type(body).__name__}.",
                                         type=INVALID_REQUEST, code="invalid_body"))
    if "input" not in body:
        raise ProxyError(400, error_body("Missing required parameter: 'input'.", type=INVALID_REQUEST,
                                         param="input", code="missing_required_parameter"))
    return body, parse_chat_request(to_wire(dumps(responses_to_chat(body))))


async def responses(proxy: Proxy, request: Request) -> Response:
    received = await proxy.receive(request, "responses", parse_responses_request, error_response)
    if isinstance(received, Response):
        return received
    ctx, raw, (body, chat) = received
    config = ctx.config
    unoffered = unoffered_note(body, ctx.upstream.name, ctx.upstream.runs_hosted_tools)
    if unoffered is not None:  # reported, not lost without a word: no function the model could call stands for them
        log.warning("%s", unoffered)
    limit = config.loop_guard_max_tool_messages
    tool_messages = count_tool_messages(chat.body)
    if limit is not None and tool_messages > limit:  # the loop guard answers without asking the upstream
        stop = stop_completion(stop_message(tool_messages, limit), chat.model)
        ctx.log(200, stream=chat.stream, model=chat.model, note="loop-guard")
        if chat.stream:
            writer = ChunksAsResponses(body, chat.model)
            pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=True, request_model=chat.model)
            return ctx.rewrapped(ResponsesOutput(pipeline, writer), completion_as_chunks(stop))
        return Response(to_wire(dumps(completion_to_response(stop, body))), media_type="application/json")
    try:
        upstream = await ctx.send(ctx.upstream.responses_request(ctx.headers, ClientBody(body, raw), chat))
    except ProxyError as exc:
        return ctx.failed(exc, stream=chat.stream, model=chat.model)
    if chat.stream:
        pipeline = ctx.parts.chat_pipeline(tools=chat.tools, xml_client=False, include_usage=True,
                                           request_model=chat.model, buffer_cap=config.buffer_cap,
                                           **ctx.rescuers(chat.model))
        output = ResponsesOutput(pipeline, ChunksAsResponses(body, chat.model))
        if ctx.upstream.streams(upstream):
            reader = ctx.upstream.chunk_reader(chat.model)
            relayed: AnswerPipeline = output if reader is None else TranslatedPipeline(output, reader)
            return ctx.relay(upstream, relayed)
    try:
        completion = await ctx.upstream.completion(upstream, chat.model, ctx.read_answer)
    except ProxyError as exc:
        return ctx.failed(exc, stream=chat.stream, model=chat.model)
    if chat.stream:  # a streaming client whose upstream answered with one JSON body
        return ctx.rewrapped(output, completion_as_chunks(completion))
    stats = finish_completion(completion, tools=chat.tools, xml_client=False, buffer_cap=config.buffer_cap,
                              **ctx.rescuers(chat.model))
    ctx.log(200, stream=False, model=chat.model, stats=stats)
    return Response(to_wire(dumps(completion_to_response(completion, body))), media_type="application/json")
