"""``POST /v1/responses``: the OpenAI Responses API in front of a Chat Completions, a
Messages or a Responses upstream, with text-call rescue.

The answer runs through the chat pipeline whatever the upstream speaks: a Responses
(Messages) upstream's events are read as chat chunks first (``ResponsesAsChunks``,
``EventsAsChunks``), and the
pipeline's chunks are written as Responses events for the client
(``ChunksAsResponses``). Errors are OpenAI-shaped, as the Responses API's are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx
from starlette.requests import Request
from starlette.responses import Response

from reference_proxy.anthropic_message import MessageAccumulator
from reference_proxy.completion import StreamAccumulator, completion_as_chunks, finish_completion
from reference_proxy.errors import INVALID_REQUEST, ProxyError, error_body
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.pipeline import ResponseStats, StreamPipeline
from reference_proxy.loop_guard import stop_completion, stop_message
from reference_proxy.request_shaping import ChatRequest, count_tool_messages, forward_headers, parse_chat_request
from reference_proxy.responses_answers import completion_to_response, response_to_completion
from reference_proxy.responses_requests import responses_to_chat
from reference_proxy.responses_streams import ChunksAsResponses, ResponsesAsChunks
from reference_proxy.translate.answers import message_to_completion
from reference_proxy.translate.requests import chat_to_messages
from reference_proxy.translate.streams import EventsAsChunks, TranslatedPipeline, UpstreamReader
from reference_proxy.upstream import is_event_stream, read_json

if TYPE_CHECKING:
    from reference_proxy.app import ProxyApp


class ResponsesOutput:
    """The chat pipeline with its output written as Responses events (what the relay drives)."""

    def __init__(self, inner: StreamPipeline, writer: ChunksAsResponses) -> None:
        self.inner = inner
        self.writer = writer

    @property
    def closed(self) -> bool:
        return self.inner.closed

    @property
    def stats(self) -> ResponseStats:
        return self.inner.stats

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def answered(self) -> bool:
        return self.inner.answered

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


class ResponsesSink:
    """Folds a Responses upstream's stream into one ``chat.completion`` (an ``EventSink``)."""

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


async def responses(proxy: ProxyApp, request: Request) -> Response:
    from reference_proxy.app import ANTHROPIC_VERSION, _log_request, error_response

    started = time.perf_counter()
    path = request.url.path
    received = await proxy._client_request(request, started, parse_responses_request, error_response)
    if isinstance(received, Response):
        return received
    raw, (body, chat) = received
    config = proxy.config
    limit = config.loop_guard_max_tool_messages
    tool_messages = count_tool_messages(chat.body)
    if limit is not None and tool_messages > limit:  # the loop guard answers without asking the upstream
        stop = stop_completion(stop_message(tool_messages, limit), chat.model)
        _log_request("POST", path, 200, started, stream=chat.stream, model=chat.model, note="loop-guard")
        if chat.stream:
            writer = ChunksAsResponses(body, chat.model)
            pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=True, request_model=chat.model)
            return proxy._rewrapped(ResponsesOutput(pipeline, writer), completion_as_chunks(stop), path, started,
                                    False)
        return Response(to_wire(dumps(completion_to_response(stop, body))), media_type="application/json")
    upstream_api = config.calls_upstream("responses")
    headers = forward_headers(request.headers.items(), config.api_key)
    try:
        if upstream_api == "responses":
            url, content = config.responses_url, raw
        elif upstream_api == "anthropic":  # the chat request, said as a Messages request
            url, content = config.messages_url, to_wire(dumps(chat_to_messages(chat.body)))
            headers = forward_headers(request.headers.items(), config.api_key, key_header="x-api-key")
            headers.setdefault("anthropic-version", ANTHROPIC_VERSION)
        else:
            url, content = config.chat_url, to_wire(dumps(chat.body))
        upstream = await proxy.upstream.open("POST", url, headers, content)
    except ProxyError as exc:
        _log_request("POST", path, exc.status, started, stream=chat.stream, model=chat.model, note=exc.message)
        return error_response(exc)
    if chat.stream:
        pipeline = proxy.parts.chat_pipeline(tools=chat.tools, xml_client=False, include_usage=True,
                                             request_model=chat.model, buffer_cap=config.buffer_cap,
                                             **proxy._rescuers(chat.model))
        output = ResponsesOutput(pipeline, ChunksAsResponses(body, chat.model))
        if is_event_stream(upstream):
            readers: dict[str, Callable[[str], UpstreamReader]] = {"responses": ResponsesAsChunks,
                                                                   "anthropic": EventsAsChunks}
            reader = readers.get(upstream_api)
            relayed: Any = output if reader is None else TranslatedPipeline(output, reader(chat.model))
            return proxy._relay(upstream, relayed, path, started, False)
    try:
        completion = await upstream_completion(proxy, upstream, chat.model, upstream_api)
    except ProxyError as exc:
        _log_request("POST", path, exc.status, started, stream=chat.stream, model=chat.model, note=exc.message)
        return error_response(exc)
    if chat.stream:  # a streaming client whose upstream answered with one JSON body
        return proxy._rewrapped(output, completion_as_chunks(completion), path, started, False)
    stats = finish_completion(completion, tools=chat.tools, xml_client=False, buffer_cap=config.buffer_cap,
                              **proxy._rescuers(chat.model))
    _log_request("POST", path, 200, started, stream=False, model=chat.model, stats=stats)
    return Response(to_wire(dumps(completion_to_response(completion, body))), media_type="application/json")


async def upstream_completion(proxy: ProxyApp, upstream: httpx.Response, model: str, api: str) -> dict[str, Any]:
    """The upstream's whole answer (in ``api``) as a ``chat.completion`` (before rescue)."""
    if api == "anthropic":
        return message_to_completion(await proxy._read_answer(upstream, MessageAccumulator(model)), model)
    if api != "responses":
        return await proxy._read_answer(upstream, StreamAccumulator(model))
    if is_event_stream(upstream):
        return await proxy._read_answer(upstream, ResponsesSink(model))
    try:
        return response_to_completion(await read_json(upstream), model)
    finally:
        await upstream.aclose()
