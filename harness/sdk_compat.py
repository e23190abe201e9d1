"""Feeding a captured stream through the official openai SDK, without a network.

The SDK's own SSE decoder, chunk model and ``ChatCompletionStream`` accumulator read
the raw bytes from an in-memory response, exactly as they would read a live one.
Whatever the SDK raises is what an application built on it would see.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath

import httpx2  # the HTTP layer the installed openai SDK is built on
from openai import OpenAI, Stream, omit
from openai.lib.streaming.chat import ChatCompletionStream
from openai.types.chat import ChatCompletionChunk

from harness.assemble import AssembledCall

_URL = "http://proxy/v1/chat/completions"


@dataclass(frozen=True, slots=True)
class SdkReading:
    """What the SDK's final accumulated message holds, or the error it raised."""

    content: str
    tool_calls: tuple[AssembledCall, ...]
    finish_reason: str | None
    error: str | None  # "TypeError: ..." when the SDK raised


@cache
def _client() -> OpenAI:
    # Only used for its response processing; it never sends a request.
    return OpenAI(api_key="conformance", base_url="http://proxy/v1", max_retries=0)


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


def read_stream(raw: bytes, headers: Mapping[str, str] | None = None) -> SdkReading:
    """Run ``raw`` through the SDK's streaming path (its SSE decoder, chunk model and
    ``ChatCompletionStreamState`` accumulator) and report the accumulated message."""
    response = httpx2.Response(
        200,
        headers=dict(headers or {"content-type": "text/event-stream"}),
        content=raw,
        request=httpx2.Request("POST", _URL),
    )
    try:
        stream: ChatCompletionStream[None] = ChatCompletionStream(
            raw_stream=Stream(cast_to=ChatCompletionChunk, response=response, client=_client()),
            response_format=omit,
            input_tools=omit,
        )
        # The accumulated snapshot, not get_final_completion(): the latter adds the
        # structured-output parsing step, which rejects legitimate "length" answers.
        completion = stream.until_done().current_completion_snapshot
        if not completion.choices:
            return SdkReading("", (), None, None)
        choice = completion.choices[0]
        message = choice.message
        calls = tuple(
            AssembledCall(i, call.id, call.function.name, call.function.arguments)
            for i, call in enumerate(message.tool_calls or ())
            if call.type == "function"
        )
        return SdkReading(message.content or "", calls, choice.finish_reason, None)
    except Exception as exc:  # any SDK failure is the finding
        return SdkReading("", (), None, _describe(exc))
