"""``POST /v1/chat/completions``: the Chat Completions API in front of whichever upstream
the configuration names, with text-call rescue, the loop guard and the optional
system-to-user rewrite. Errors are OpenAI-shaped."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from reference_proxy.completion import completion_as_chunks, finish_completion
from reference_proxy.errors import ProxyError
from reference_proxy.loop_guard import stop_completion, stop_message, stop_stream
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.relay import SSE_HEADERS
from reference_proxy.request_shaping import ChatRequest, count_tool_messages, parse_chat_request, system_to_user
from reference_proxy.routes.shared import AnswerPipeline, Proxy, RequestContext, error_response
from reference_proxy.translate.streams import TranslatedPipeline
from reference_proxy.upstreams import ClientBody


async def chat(proxy: Proxy, request: Request) -> Response:
    received = await proxy.receive(request, "openai", parse_chat_request, error_response)
    if isinstance(received, Response):
        return received
    ctx, raw, req = received
    xml_client = ctx.parts.xml_client(request.headers.get("user-agent"), ctx.config.xml_client_patterns)
    said = {"stream": req.stream, "xml_client": xml_client, "model": req.model}

    limit = ctx.config.loop_guard_max_tool_messages
    if limit is not None:
        tool_messages = count_tool_messages(req.body)
        if tool_messages > limit:
            text = stop_message(tool_messages, limit)
            ctx.log(200, stream=req.stream, model=req.model, note="loop-guard")
            if req.stream:
                body = stop_stream(text, req.model, include_usage=req.include_usage)
                return Response(to_wire(body), media_type="text/event-stream", headers=SSE_HEADERS)
            return JSONResponse(stop_completion(text, req.model))

    sent = ClientBody(req.body, raw)
    if ctx.config.system_to_user:
        rewritten = system_to_user(req.body)
        if rewritten is not None:
            sent = ClientBody(rewritten, to_wire(dumps(rewritten)))
    try:
        upstream = await ctx.send(ctx.upstream.chat_request(ctx.headers, sent, req.stream))
    except ProxyError as exc:
        return ctx.failed(exc, **said)

    if req.stream:
        pipeline = ctx.parts.chat_pipeline(
            tools=req.tools,
            xml_client=xml_client,
            include_usage=req.include_usage,
            request_model=req.model,
            buffer_cap=ctx.config.buffer_cap,
            **ctx.rescuers(req.model),
        )
        if ctx.upstream.streams(upstream):
            reader = ctx.upstream.chunk_reader(req.model)
            relayed: AnswerPipeline = pipeline if reader is None else TranslatedPipeline(pipeline, reader)
            return ctx.relay(upstream, relayed, xml_client)
    try:  # a whole answer (accumulated if the upstream streamed anyway), or one to rewrap for a streaming client
        answer = await ctx.upstream.completion(upstream, req.model, ctx.read_answer)
    except ProxyError as exc:
        return ctx.failed(exc, **said)
    if req.stream:
        return ctx.rewrapped(pipeline, completion_as_chunks(answer), xml_client)
    return whole(ctx, answer, req, xml_client)


def whole(ctx: RequestContext, body: dict[str, Any], req: ChatRequest, xml_client: bool) -> Response:
    """A non-streaming client's answer: the completion with its text calls rescued."""
    stats = finish_completion(body, tools=req.tools, xml_client=xml_client, buffer_cap=ctx.config.buffer_cap,
                              **ctx.rescuers(req.model))
    model = body.get("model")
    ctx.log(200, stream=False, xml_client=xml_client, model=model if isinstance(model, str) else "", stats=stats)
    return Response(to_wire(dumps(body)), media_type="application/json")
