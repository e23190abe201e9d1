"""The mock's route for each wire dialect, one object each: how it checks a request,
words an error of its own, lists models, and serves a prepared scenario's answer.

``app`` moves bytes between these and the socket without knowing which dialect it
serves; adding a dialect is one route here over its replay planner (``harness.core.replay``)
and its request checks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from typing import Any, Protocol, TypeVar

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.core.replay import anthropic as anthropic_replay
from harness.core.replay import kiro as kiro_replay
from harness.core.replay import ollama as ollama_replay
from harness.core.replay import openai as openai_replay
from harness.core.replay import responses as responses_replay
from harness.core.replay.wire import Delivery, Event
from mock_backends.registry import Prepared
from mock_backends.responses_validation import check_responses
from mock_backends.kiro_validation import check_kiro
from mock_backends.ollama_validation import check_ollama
from mock_backends.strict import check_chat_strict, check_none
from mock_backends.validation import RequestProblem, check_anthropic, check_openai


@dataclass(frozen=True)
class Served:
    """One planned answer: how it is delivered, whether it streams, and how to write it either way."""

    delivery: Delivery
    stream: bool
    events: Callable[[], list[Event]]
    whole: Callable[[], Any]
    media_type: str = "text/event-stream"  # of a streamed answer


class _Planned(Protocol):
    """A prepared replay: what every dialect's plan carries."""

    @property
    def delivery(self) -> Delivery: ...


R = TypeVar("R", bound=_Planned)
P = TypeVar("P")


def served(replay: R, reply: P, stream: bool, events: Callable[[R, P], list[Event]],
           whole: Callable[[R, P], Any] | None = None, media_type: str = "text/event-stream") -> Served:
    """``reply``, planned from ``replay``, as ``app`` serves it: the events, or the whole answer
    (none for a dialect that always streams), each written only when asked for."""
    return Served(replay.delivery, stream, partial(events, replay, reply),
                  (lambda: None) if whole is None else partial(whole, replay, reply), media_type)


class Route(Protocol):
    """One dialect's route of the mock."""

    wire: WireDialect

    def check(self, body: Mapping[str, Any]) -> RequestProblem | None:
        """The first reason the API refuses ``body``, or None."""
        ...

    def check_strict(self, body: Mapping[str, Any]) -> RequestProblem | None:
        """The first reason a strict server of the API refuses a valid ``body`` (``backend.strict``), or None."""
        ...

    def error(self, message: str, code: str, *, param: str | None = None, api_type: str | None = None,
              server: bool = False) -> dict[str, Any]:
        """An error body for a problem the mock found. ``code`` names it (OpenAI's ``code``);
        ``api_type`` is the API's own error type where it has one; ``server``: the mock's own failure."""
        ...

    def models(self, names: Sequence[str], created: int) -> dict[str, Any]:
        """The model list the API's ``GET /models`` answers."""
        ...

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        """The answer to ``body`` planned from the prepared scenario (whose backend speaks this dialect)."""
        ...


class ChatRoute:
    wire = OPENAI

    check = staticmethod(check_openai)
    check_strict = staticmethod(check_chat_strict)

    def error(self, message: str, code: str, *, param: str | None = None, api_type: str | None = None,
              server: bool = False) -> dict[str, Any]:
        return openai_replay.error_body(message, code=code, param=param,
                                        type="server_error" if server else "invalid_request_error")

    def models(self, names: Sequence[str], created: int) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": created, "owned_by": "toolcall-conformance"}
                     for name in names],
        }

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        replay = prepared.replay_as(openai_replay.OpenAIReplay)
        reply = openai_replay.plan_reply(replay, body, completion_id="chatcmpl-" + os.urandom(16).hex(),
                                         created=int(now))
        return served(replay, reply, reply.stream, openai_replay.stream_events, openai_replay.completion)


class MessagesRoute:
    wire = ANTHROPIC

    check = staticmethod(check_anthropic)
    check_strict = staticmethod(check_none)

    def error(self, message: str, code: str, *, param: str | None = None, api_type: str | None = None,
              server: bool = False) -> dict[str, Any]:
        return anthropic_replay.error_body(message, api_type or code)

    def models(self, names: Sequence[str], created: int) -> dict[str, Any]:
        stamp = datetime.fromtimestamp(created, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "data": [{"type": "model", "id": name, "display_name": name, "created_at": stamp} for name in names],
            "has_more": False,
            "first_id": names[0],
            "last_id": names[-1],
        }

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        replay = prepared.replay_as(anthropic_replay.AnthropicReplay)
        reply = anthropic_replay.plan_reply(replay, body, message_id="msg_" + os.urandom(12).hex())
        return served(replay, reply, reply.stream, anthropic_replay.stream_events, anthropic_replay.message)


class ResponsesRoute(ChatRoute):
    """OpenAI's error and model-list shapes; its own checks and answers."""

    wire = RESPONSES

    check = staticmethod(check_responses)
    check_strict = staticmethod(check_none)

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        replay = prepared.replay_as(responses_replay.ResponsesReplay)
        reply = responses_replay.plan_reply(replay, body, response_id="resp_" + os.urandom(24).hex(),
                                            created_at=int(now))
        return served(replay, reply, reply.stream, responses_replay.stream_events, responses_replay.response)


class KiroRoute:
    """``POST .../generateAssistantResponse`` (or ``POST /`` with its ``X-Amz-Target``):
    AWS JSON errors, and every answer an event stream, whatever the request says."""

    wire = KIRO

    check = staticmethod(check_kiro)
    check_strict = staticmethod(check_none)  # the route refuses what Kiro refuses already (kiro_validation)

    def error(self, message: str, code: str, *, param: str | None = None, api_type: str | None = None,
              server: bool = False) -> dict[str, Any]:
        kind = KIRO.server_error_type if server else KIRO.client_error_type
        if not server and api_type is not None and api_type in KIRO.error_types.values():
            kind = api_type
        body = kiro_replay.error_body(message, kind)
        body["reason"] = code
        return body

    def models(self, names: Sequence[str], created: int) -> dict[str, Any]:
        return {"models": [{"modelId": name, "modelName": name} for name in names]}

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        replay = prepared.replay_as(kiro_replay.KiroReplay)
        reply = kiro_replay.plan_reply(replay, body)
        return served(replay, reply, True, kiro_replay.stream_events, media_type=KIRO.media_type)


class OllamaRoute:
    """``POST .../api/chat``: ``{"error": "..."}`` errors, NDJSON streams (the default) or one object."""

    wire = OLLAMA

    def check(self, body: Mapping[str, Any]) -> RequestProblem | None:
        return check_ollama(body)

    def check_strict(self, body: Mapping[str, Any]) -> RequestProblem | None:
        return check_none(body)

    def error(self, message: str, code: str, *, param: str | None = None, api_type: str | None = None,
              server: bool = False) -> dict[str, Any]:
        return ollama_replay.error_body(message)

    def models(self, names: Sequence[str], created: int) -> dict[str, Any]:
        stamp = datetime.fromtimestamp(created, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"models": [{"name": name, "model": name, "modified_at": stamp} for name in names]}

    def serve(self, prepared: Prepared, body: Mapping[str, Any], now: float) -> Served:
        replay = prepared.replay_as(ollama_replay.OllamaReplay)
        reply = ollama_replay.plan_reply(replay, body)
        return served(replay, reply, reply.stream, ollama_replay.stream_events, ollama_replay.chat_response,
                      OLLAMA.media_type)


ROUTES: Mapping[WireDialect, Route] = {r.wire: r for r in (ChatRoute(), MessagesRoute(), ResponsesRoute(), KiroRoute(),
                                                          OllamaRoute())}
