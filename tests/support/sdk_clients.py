"""The installed official SDKs reading a recorded answer through their public API, as an application does.

Each reader builds the SDK's client over a transport that answers with the exchange's status, headers and
bytes (a refused connection or a time-out when the exchange had one), calls the method an application calls
(``chat.completions.create``, ``.stream()``, ``.parse()``, ``messages.create``, ``messages.stream()``,
``responses.stream()``) and takes what the application then holds, with what raised on the way, by the SDK
or by the application's first plain use of the result (``completion.choices[0]``, ``json.loads`` of a
call's arguments). The rules' citations of these SDKs are checked against what this returns.
"""

from __future__ import annotations

import importlib
import json
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import anthropic
import openai
import pydantic

from harness.core.exchange import Exchange


@dataclass(frozen=True)
class Call:
    id: Any
    name: Any
    arguments: Any  # openai: the arguments string as the SDK holds it; anthropic: the input as it holds it
    type: Any = "function"


@dataclass(frozen=True)
class Choice:
    content: str | None
    calls: tuple[Call, ...]
    finish: str | None
    role: Any = None


@dataclass(frozen=True)
class Reading:
    """What an application on the SDK holds after reading the answer, and what raised."""

    error: BaseException | None
    choices: tuple[Choice, ...] = ()
    # The SDK's own error class and message, "TypeError: 'NoneType' object is not iterable".
    raised: str = ""
    attributes: Mapping[str, Any] = field(default_factory=dict)  # an SDK error's code, type, status

    @property
    def first(self) -> Choice:
        return self.choices[0] if self.choices else Choice(None, (), None)


def _http(exchange: Exchange, sdk: ModuleType) -> Any:
    """An HTTP client of the library the SDK is built on (httpx2, or httpx before it) whose every request gets
    the exchange's answer."""
    base = importlib.import_module(f"{sdk.__name__}._base_client")
    http = getattr(base, "httpx2", None) or base.httpx

    def answer(request: Any) -> Any:
        if exchange.timed_out:
            raise http.ReadTimeout("the answer never completed", request=request)
        if exchange.status is None:
            raise http.ConnectError(exchange.transport_error or "connection refused", request=request)
        return http.Response(exchange.status, headers=dict(exchange.response_headers), content=exchange.raw,
                             request=request)

    return http.Client(transport=http.MockTransport(answer))


def openai_client(exchange: Exchange) -> openai.OpenAI:
    return openai.OpenAI(api_key="k", base_url="http://proxy/v1", max_retries=0, http_client=_http(exchange, openai))


def anthropic_client(exchange: Exchange) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="k", base_url="http://proxy", max_retries=0,
                               http_client=_http(exchange, anthropic))


def _raised(exc: BaseException) -> tuple[str, dict[str, Any]]:
    attributes = {name: getattr(exc, name) for name in ("code", "type", "status_code", "body") if hasattr(exc, name)}
    return f"{type(exc).__name__}: {exc}", attributes


def _reading(choices: Sequence[Choice], error: BaseException | None) -> Reading:
    if error is None:
        return Reading(None, tuple(choices))
    raised, attributes = _raised(error)
    return Reading(error, tuple(choices), raised, attributes)


def _typed_tool(tool: Mapping[str, Any]) -> Any:
    """The request's function tool as an application declares a typed one (``openai.pydantic_function_tool``):
    its arguments are then parsed into a pydantic model by ``.parse()`` and ``.stream()``."""
    function = tool["function"]
    properties = (function.get("parameters") or {}).get("properties") or {}
    fields: dict[str, Any] = {name: (Any, None) for name in properties}
    model = pydantic.create_model(function["name"].title().replace("_", ""), **fields)
    return openai.pydantic_function_tool(model, name=function["name"])


def _chat_request(exchange: Exchange, *, stream: bool, strict: bool = False) -> dict[str, Any]:
    request = exchange.request_body
    tools = [_typed_tool(t) if strict else t for t in request.get("tools") or ()]
    out: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "question"}]}
    if tools:
        out["tools"] = tools
    if not stream and request.get("n"):
        out["n"] = request["n"]
    return out


def _openai_choices(completion: Any) -> list[Choice]:
    """The application's plain reading: ``completion.choices[i].message`` (raises as it would)."""
    out = []
    for choice in completion.choices:
        message = choice.message
        calls = tuple(Call(c.id, c.function.name, c.function.arguments, c.type) for c in message.tool_calls or ())
        out.append(Choice(message.content, calls, choice.finish_reason, message.role))
    return out


def openai_body(exchange: Exchange) -> Reading:
    """``client.chat.completions.create(stream=False)``, then ``completion.choices[i].message``."""
    choices: list[Choice] = []
    try:
        completion = openai_client(exchange).chat.completions.create(**_chat_request(exchange, stream=False))
        choices = _openai_choices(completion)
    except Exception as exc:  # what the application sees is the finding
        return _reading(choices, exc)
    return _reading(choices, None)


def openai_stream(exchange: Exchange) -> Reading:
    """``client.chat.completions.stream()``, read to its end; the accumulated snapshot (what raised, with
    what had been accumulated before it)."""
    stream: Any = None
    try:
        with openai_client(exchange).chat.completions.stream(**_chat_request(exchange, stream=True)) as stream:
            for _ in stream:
                pass
            return _reading(_openai_choices(stream.current_completion_snapshot), None)
    except Exception as exc:
        try:
            choices = _openai_choices(stream.current_completion_snapshot) if stream is not None else []
        except Exception:  # nothing was accumulated
            choices = []
        return _reading(choices, exc)


def openai_chunks(exchange: Exchange) -> Reading:
    """``client.chat.completions.create(stream=True)``, each chunk's deltas joined by the application."""
    texts: dict[int, list[str]] = {}
    finishes: dict[int, str | None] = {}
    try:
        for chunk in openai_client(exchange).chat.completions.create(**_chat_request(exchange, stream=False),
                                                                      stream=True):
            for choice in chunk.choices or ():
                texts.setdefault(choice.index, []).append(choice.delta.content or "")
                finishes[choice.index] = choice.finish_reason or finishes.get(choice.index)
    except Exception as exc:
        return _reading(_joined(texts, finishes), exc)
    return _reading(_joined(texts, finishes), None)


def _joined(texts: Mapping[int, list[str]], finishes: Mapping[int, str | None]) -> list[Choice]:
    return [Choice("".join(texts[i]), (), finishes.get(i)) for i in sorted(texts)]


def openai_parse(exchange: Exchange) -> Reading:
    """``client.chat.completions.parse()`` (or ``.stream()`` and ``get_final_completion()`` for a streamed
    answer) with the request's tools declared typed (strict function tools), the way an application gets typed
    calls."""
    client = openai_client(exchange)
    try:
        if exchange.stream:
            with client.chat.completions.stream(**_chat_request(exchange, stream=True, strict=True)) as stream:
                completion: Any = stream.get_final_completion()
        else:
            completion = client.chat.completions.parse(**_chat_request(exchange, stream=False, strict=True))
        return _reading(_openai_choices(completion), None)
    except Exception as exc:
        return _reading([], exc)


def _anthropic_request(exchange: Exchange) -> dict[str, Any]:
    tools = exchange.request_body.get("tools")
    request: dict[str, Any] = {"model": "m", "max_tokens": 256, "messages": [{"role": "user", "content": "question"}]}
    if tools:
        request["tools"] = tools
    return request


def _anthropic_choices(message: Any) -> list[Choice]:
    """The application's plain reading: a loop over ``message.content`` (raises as it would)."""
    texts: list[str] = []
    calls: list[Call] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(Call(block.id, block.name, block.input, block.type))
    return [Choice("".join(texts), tuple(calls), message.stop_reason, message.role)]


def anthropic_body(exchange: Exchange) -> Reading:
    """``client.messages.create()``, then a loop over ``message.content``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            message = anthropic_client(exchange).messages.create(**_anthropic_request(exchange))
            return _reading(_anthropic_choices(message), None)
    except Exception as exc:
        return _reading([], exc)


def anthropic_stream(exchange: Exchange) -> Reading:
    """``client.messages.stream()``, read to its end; the accumulated message (``current_message_snapshot``,
    what ``get_final_message()`` returns), with what had been accumulated when something raised."""
    stream: Any = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with anthropic_client(exchange).messages.stream(**_anthropic_request(exchange)) as stream:
                for _ in stream:
                    pass
                return _reading(_anthropic_choices(stream.get_final_message()), None)
        except Exception as exc:
            try:
                choices = _anthropic_choices(stream.current_message_snapshot) if stream is not None else []
            except Exception:  # no message was started
                choices = []
            return _reading(choices, exc)


def _responses_choices(response: Any) -> list[Choice]:
    calls = tuple(Call(i.call_id, i.name, i.arguments, i.type) for i in response.output if i.type == "function_call")
    return [Choice(response.output_text, calls, response.status)]


def responses_stream(exchange: Exchange) -> Reading:
    """``client.responses.stream()``, read to its end; ``get_final_response()``."""
    try:
        with openai_client(exchange).responses.stream(model="m", input="question") as stream:
            for _ in stream:
                pass
            return _reading(_responses_choices(stream.get_final_response()), None)
    except Exception as exc:
        return _reading([], exc)


Reader = Callable[[Exchange], Reading]


def arguments_error(arguments: Any) -> str | None:
    """What an application's ``json.loads`` of a call's arguments raises (None: a JSON object)."""
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None if isinstance(value, dict) else f"not an object: {value!r}"
