"""``POST /v1/messages``: the Anthropic Messages API in front of whichever upstream the
configuration names, with tool_choice emulation and text-call rescue. Errors are
Messages-shaped."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from reference_proxy.anthropic_message import finish_message, message_as_events
from reference_proxy.errors import ProxyError
from reference_proxy.openai_stream import dumps, to_wire
from reference_proxy.request_shaping import anthropic_tools
from reference_proxy.routes.shared import AnswerPipeline, Proxy, anthropic_error_response
from reference_proxy.translate.streams import TranslatedPipeline
from reference_proxy.upstreams import ClientBody


async def messages(proxy: Proxy, request: Request) -> Response:
    received = await proxy.receive(request, "anthropic", proxy.parts.parse_messages, anthropic_error_response)
    if isinstance(received, Response):
        return received
    ctx, raw, (req, shaped) = received
    sent = ClientBody(req.body, raw)
    tools = req.tools
    if shaped is not None:
        sent = ClientBody(shaped, to_wire(dumps(shaped)))
        tools = anthropic_tools(shaped)  # tool_choice none: nothing may become a call
    try:
        upstream = await ctx.send(ctx.upstream.messages_request(ctx.headers, sent, req.stream))
    except ProxyError as exc:
        return ctx.failed(exc, stream=req.stream, model=req.model)
    if req.stream:
        pipeline = ctx.parts.messages_pipeline(tools=tools, request_model=req.model, buffer_cap=ctx.config.buffer_cap,
                                               **ctx.rescuers(req.model))
        if ctx.upstream.streams(upstream):
            reader = ctx.upstream.event_reader(req.model)
            relayed: AnswerPipeline = pipeline if reader is None else TranslatedPipeline(pipeline, reader)
            return ctx.relay(upstream, relayed)
    try:  # a whole answer (accumulated if the upstream streamed anyway), or one to rewrap for a streaming client
        body = await ctx.upstream.message(upstream, req.model, ctx.read_answer)
    except ProxyError as exc:
        return ctx.failed(exc, stream=req.stream, model=req.model)
    if req.stream:
        return ctx.rewrapped(pipeline, message_as_events(body))
    stats = finish_message(body, tools=tools, buffer_cap=ctx.config.buffer_cap, **ctx.rescuers(req.model))
    model = body.get("model")
    ctx.log(200, stream=False, model=model if isinstance(model, str) else "", stats=stats)
    return Response(to_wire(dumps(body)), media_type="application/json")
