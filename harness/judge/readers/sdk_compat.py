"""Feeding a captured stream through the official SDKs, without a network.

The SDK's own SSE decoder, event models and stream accumulator (``openai``:
``ChatCompletionStream``; ``anthropic``: ``MessageStream``) read the raw bytes from an
in-memory response, exactly as they would read a live one. Whatever the SDK raises is
what an application built on it would see; what it had accumulated until then is
kept, since the application has already shown it.

The SDKs are imported on first use: importing both costs seconds, which a process that
never reads a stream (the controller of a parallel run, a report) should not pay.
"""

from __future__ import annotations

import atexit
import gc
import json
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, TypeVar, cast

from harness.judge.readers.assemble import AssembledCall
from harness.judge.readers.responses_events import finish_of

if TYPE_CHECKING:
    import anthropic
    import httpx2
    from anthropic.lib.streaming import MessageStream
    from openai import OpenAI
    from openai.lib.streaming.chat import ChatCompletionStream
    from openai.types.chat.parsed_chat_completion import ParsedChatCompletion

_C = TypeVar("_C")

_URL = "http://proxy/v1/chat/completions"
_ANTHROPIC_URL = "http://proxy/v1/messages"


@dataclass(frozen=True, slots=True)
class SdkReading:
    """What the SDK's accumulated message holds, and the error it raised, if any
    (the message then holds what had been accumulated before the error)."""

    content: str
    tool_calls: tuple[AssembledCall, ...]
    finish_reason: str | None
    error: str | None  # "TypeError: ..." when the SDK raised
    # The SDK raised its own report of an error event in the stream (openai:
    # APIError; anthropic: APIStatusError), not a failure to read the stream.
    error_event: bool = False


def _client() -> OpenAI:
    from openai import OpenAI

    return _reading_client(OpenAI, "http://proxy/v1")


_CLIENTS: dict[Callable[..., object], object] = {}


def _release_clients() -> None:
    """Let the cached clients go while every module is still whole: left to the interpreter's
    final teardown, their ``__del__`` runs after ``httpx2``'s globals are cleared and prints
    "Exception ignored ... 'NoneType' object has no attribute 'CLOSED'". One of them is still held
    in a reference cycle once dropped from the cache, hence the collection."""
    _CLIENTS.clear()
    gc.collect()


def _reading_client(sdk: Callable[..., _C], base_url: str) -> _C:
    """One client per import of the SDK: a run in the same process that imports it afresh (pytest's
    ``pytester`` drops the modules a run imported) must not read with the classes of the last one.
    Only its response processing is used; it never sends a request."""
    if sdk not in _CLIENTS:
        if not _CLIENTS:
            atexit.register(_release_clients)
        _CLIENTS[sdk] = sdk(api_key="conformance", base_url=base_url, max_retries=0)
    return cast(_C, _CLIENTS[sdk])


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        if last.name == "current_completion_snapshot":
            text += " (the SDK received no chunk)"
        where = last.filename.rsplit("/site-packages/", 1)[-1] if "/site-packages/" in last.filename else (
            PurePath(last.filename).name
        )
        text += f" (raised at {where}:{last.lineno})"
    return text


def _response(raw: bytes, headers: Mapping[str, str] | None, url: str) -> httpx2.Response:
    import httpx2  # the HTTP layer the installed SDKs are built on

    return httpx2.Response(
        200,
        headers=dict(headers or {"content-type": "text/event-stream"}),
        content=raw,
        request=httpx2.Request("POST", url),
    )


def _openai_reading(completion: ParsedChatCompletion[object] | None, error: str | None, event: bool) -> SdkReading:
    if completion is None or not completion.choices:
        return SdkReading("", (), None, error, event)
    choice = completion.choices[0]
    message = choice.message
    calls = tuple(
        AssembledCall(i, call.id, call.function.name, call.function.arguments)
        for i, call in enumerate(message.tool_calls or ())
        if call.type == "function"
    )
    return SdkReading(message.content or "", calls, choice.finish_reason, error, event)


def read_stream(raw: bytes, headers: Mapping[str, str] | None = None) -> SdkReading:
    """Run ``raw`` through the openai SDK's streaming path (its SSE decoder, chunk model
    and ``ChatCompletionStream`` accumulator) and report the accumulated message."""
    from openai import APIError, Stream, omit
    from openai.lib.streaming.chat import ChatCompletionStream
    from openai.types.chat import ChatCompletionChunk

    stream: ChatCompletionStream[None] | None = None
    try:
        stream = ChatCompletionStream(
            raw_stream=Stream(cast_to=ChatCompletionChunk, response=_response(raw, headers, _URL), client=_client()),
            response_format=omit,
            input_tools=omit,
        )
        # The accumulated snapshot, not get_final_completion(): the latter adds the
        # structured-output parsing step, which rejects legitimate "length" answers.
        return _openai_reading(stream.until_done().current_completion_snapshot, None, False)
    except Exception as exc:  # any SDK failure is the finding
        partial: ParsedChatCompletion[object] | None = None
        if stream is not None:
            try:
                partial = stream.current_completion_snapshot
            except Exception:  # nothing was accumulated
                partial = None
        return _openai_reading(partial, _describe(exc), type(exc) is APIError)


def _anthropic_client() -> anthropic.Anthropic:
    import anthropic

    return _reading_client(anthropic.Anthropic, "http://proxy")


def _anthropic_reading(stream: MessageStream[Any], error: str | None, event: bool,
                       closed: set[int] | None = None) -> SdkReading:
    """The SDK's accumulated message; when it raised, only the tool_use blocks it had seen
    closed (``closed``): one cut short by the error never reaches the caller whole."""
    try:
        message = stream.current_message_snapshot
    except Exception:  # no message_start reached the SDK
        return SdkReading("", (), None, error, event)
    texts: list[str] = []
    calls: list[AssembledCall] = []
    for index, block in enumerate(message.content):
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use" and (closed is None or index in closed):
            arguments = json.dumps(block.input, ensure_ascii=False, default=str)
            calls.append(AssembledCall(len(calls), block.id, block.name, arguments))
    return SdkReading("".join(texts), tuple(calls), message.stop_reason, error, event)


def read_anthropic_stream(raw: bytes, headers: Mapping[str, str] | None = None) -> SdkReading:
    """Run ``raw`` through the anthropic SDK's streaming path (its SSE decoder, event
    models and ``MessageStream`` accumulator) and report the accumulated message. A
    tool input is reported as the JSON text of what the SDK holds (a dict normally;
    a string input stays a JSON string)."""
    import anthropic
    from anthropic.lib.streaming import MessageStream
    from anthropic.types import RawMessageStreamEvent

    stream: MessageStream[Any] = MessageStream(
        anthropic.Stream(
            cast_to=RawMessageStreamEvent,  # type: ignore[arg-type]  # a union, as the SDK passes it
            response=_response(raw, headers, _ANTHROPIC_URL),
            client=_anthropic_client(),
        ),
        output_format=anthropic.NOT_GIVEN,
    )
    with warnings.catch_warnings():
        # The SDK's models warn (pydantic serialisation) about wrongly typed fields;
        # the rules report those fields themselves.
        warnings.simplefilter("ignore")
        closed: set[int] = set()
        try:
            for event in stream:
                if event.type == "content_block_stop":
                    closed.add(event.index)
        except Exception as exc:  # any SDK failure is the finding
            return _anthropic_reading(stream, _describe(exc), isinstance(exc, anthropic.APIStatusError), closed)
        return _anthropic_reading(stream, None, False)


_RESPONSES_URL = "http://proxy/v1/responses"


def _responses_reading(response: Any, error: str | None, event: bool) -> SdkReading:
    """The SDK's final (or last known) response, in Chat Completions words like every reading."""
    if response is None:
        return SdkReading("", (), None, error, event)
    texts: list[str] = []
    calls: list[AssembledCall] = []
    for item in response.output or ():
        if item.type == "message":
            texts.extend(part.text for part in item.content if part.type == "output_text")
        elif item.type == "function_call":
            calls.append(AssembledCall(len(calls), item.call_id, item.name, item.arguments))
    finish = finish_of({"status": response.status, "incomplete_details": (
        response.incomplete_details.model_dump() if response.incomplete_details is not None else None)}, bool(calls))
    return SdkReading("".join(texts), tuple(calls), finish, error, event)


def read_responses_stream(raw: bytes, headers: Mapping[str, str] | None = None) -> SdkReading:
    """Run ``raw`` through the openai SDK's ``responses.stream()`` path (its SSE decoder,
    event models and ``ResponseStreamState`` accumulator) and report the response it ends
    with: ``response.completed``'s (what ``get_final_response()`` returns), or the
    ``response.incomplete`` / ``response.failed`` event's, which applications read instead."""
    from openai import APIError, Stream, omit
    from openai.lib.streaming.responses import ResponseStream
    from openai.types.responses import ResponseStreamEvent

    final: Any = None
    try:
        stream: ResponseStream[Any] = ResponseStream(
            raw_stream=Stream(cast_to=ResponseStreamEvent,  # type: ignore[arg-type]
                              response=_response(raw, headers, _RESPONSES_URL), client=_client()),
            text_format=omit, input_tools=omit, starting_after=None,
        )
        for event in stream:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
        if final is None:
            final = stream.get_final_response()  # raises the SDK's own "no response.completed" error
        return _responses_reading(final, None, False)
    except Exception as exc:  # any SDK failure is the finding
        return _responses_reading(final, _describe(exc), type(exc) is APIError)
