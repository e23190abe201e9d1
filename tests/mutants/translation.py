"""Translation mutants: the reference proxy translating between the two APIs (a Messages
client in front of an OpenAI upstream, a chat-completions client in front of a Messages
upstream), with one thing a translating proxy gets wrong. Each is played with its
scenarios' backends served in the other dialect (``Mutant.upstream``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from mutants.anthropic import NATIVE as MESSAGES_NATIVE
from mutants.anthropic import WHOLE as MESSAGES_WHOLE
from mutants.anthropic import EndTurnWithToolUse, EventRewriter, InputAsString
from mutants.base import ChunkRewriter, Mutant, Out, Rewriter, finish_reason, rewritten, tool_calls, with_parts
from mutants.openai import NATIVE as CHAT_NATIVE
from mutants.openai import StopWithToolCalls
from reference_proxy.anthropic_stream import AnthropicStreamPipeline, _NativeCall
from reference_proxy.errors import invalid_request
from reference_proxy.parts import Parts, parse_and_shape_messages
from reference_proxy.request_shaping import MessagesRequest, parse_messages_request
from reference_proxy.tool_choice import emulate_tool_choice
from reference_proxy.translate.answers import as_object


class BlockStoppedTwice(EventRewriter):
    """Closes every content block twice, as a translator does that closes a block both when the
    next one starts and when the upstream's call ends."""

    def on_payload(self, payload: dict[str, Any]) -> Out:
        if payload.get("type") == "content_block_stop":
            return (payload, dict(payload))
        return (payload,)


class SamplingRewritten(Rewriter):
    """Sends every request upstream with ``temperature: 1.0`` and without the client's seed, as a
    translator seen in the field did (it rebuilt the body from the fields it knew)."""

    def on_request(self, body: bytes) -> bytes:
        try:
            request = json.loads(body)
        except ValueError:
            return body
        if not isinstance(request, dict):
            return body
        request["temperature"] = 1.0
        request.pop("seed", None)
        return json.dumps(request).encode()


class BrokenInputAsEmpty(AnthropicStreamPipeline):
    """Delivers a native call whose input is no JSON object (a chat call's broken arguments) as a
    tool_use with `input: {}`, as a translator does that falls back to an empty object when the
    arguments do not parse: a call the model never made, which the client runs."""

    def _native(self, call: _NativeCall, out: list[str]) -> None:
        if call.name and "".join(call.parts).strip() and as_object("".join(call.parts)) is None:
            self._tool_use(call.id, call.name, (), out)
        else:
            super()._native(call, out)


def _or_empty(arguments: str) -> str:
    """The arguments when they are one JSON object (or empty), else ``{}``."""
    if not arguments.strip():
        return arguments
    try:
        return arguments if isinstance(json.loads(arguments), dict) else "{}"
    except ValueError:
        return "{}"


def _readable(call: dict[str, Any]) -> bool:
    """A call whose arguments are one JSON object, or empty."""
    arguments = call["function"].get("arguments") or ""
    return _or_empty(arguments) != "{}" or arguments.strip() == "{}"


def _whole_calls_changed(body: bytes, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> bytes:
    """A whole chat completion with each message's tool calls passed through ``change``."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    for choice in answer.get("choices") or () if isinstance(answer, dict) else ():
        message = choice.get("message") or {}
        if message.get("tool_calls"):
            message["tool_calls"] = change(message["tool_calls"]) or None
    return json.dumps(answer).encode()


class BrokenArgumentsAsEmpty(ChunkRewriter):
    """Hands a chat client every call's arguments at the finish, replaced by ``{}`` where they
    are no JSON object: a translator that falls back to an empty object when they do not parse."""

    def __init__(self) -> None:
        self.held: dict[int, list[str]] = {}

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for call in tool_calls(chunk):
            function = call.get("function")
            fragment = function.pop("arguments", None) if isinstance(function, dict) else None
            if isinstance(fragment, str):
                self.held.setdefault(int(call.get("index", 0)), []).append(fragment)
        if finish_reason(chunk) is None or not self.held:
            return (chunk,)
        head = {k: v for k, v in chunk.items() if k != "choices"}
        calls = [{"index": i, "function": {"arguments": _or_empty("".join(parts))}} for i, parts in self.held.items()]
        self.held.clear()
        return ({**head, "choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]}, chunk)

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        def as_empty(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
            for call in calls:
                call["function"]["arguments"] = _or_empty(call["function"].get("arguments") or "")
            return calls

        return status, content_type, _whole_calls_changed(body, as_empty)


class DropsBrokenCalls(ChunkRewriter):
    """Hands a chat client, at the finish, only the calls whose arguments are one JSON object
    (or empty): a translator that drops a call it cannot read, without a word."""

    def __init__(self) -> None:
        self.held: dict[int, dict[str, Any]] = {}

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        for delta in (c["delta"] for c in chunk.get("choices") or () if isinstance(c.get("delta"), dict)):
            for call in delta.pop("tool_calls", None) or ():
                whole = self.held.setdefault(int(call.get("index", 0)), {"function": {"arguments": ""}})
                function = call.get("function") or {}
                whole.update({k: v for k, v in call.items() if k != "function"})
                whole["function"].update({k: v for k, v in function.items() if k != "arguments"})
                whole["function"]["arguments"] += function.get("arguments") or ""
        if finish_reason(chunk) is None or not self.held:
            return (chunk,)
        kept = [call for call in self.held.values() if _readable(call)]
        self.held.clear()
        if not kept:
            return (chunk,)
        head = {k: v for k, v in chunk.items() if k != "choices"}
        return ({**head, "choices": [{"index": 0, "delta": {"tool_calls": kept}, "finish_reason": None}]}, chunk)

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        return status, content_type, _whole_calls_changed(body, lambda calls: [c for c in calls if _readable(c)])


# --------------------------------------------------------------------------- the request upstream
# A Messages request as a broken translator reads it: the reference proxy then translates
# what ``Parts.parse_messages`` hands it, so the defect shows in the request upstream.

Change = Callable[[dict[str, Any]], None]


def messages_read(change: Change, *, emulate: bool = True) -> Parts:
    """The reference proxy, reading a Messages request as the reference does (``tool_choice``
    emulated unless ``emulate`` is off), then changed by ``change`` before it is translated."""

    def parse(raw: bytes) -> tuple[MessagesRequest, dict[str, Any] | None]:
        req = parse_messages_request(raw)
        shaped = emulate_tool_choice(req.body) if emulate else None
        body = copy.deepcopy(shaped if shaped is not None else req.body)
        change(body)
        return req, body

    return Parts(parse_messages=parse)


def _blocks(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for m in body.get("messages") or () if isinstance(m.get("content"), list)
            for b in m["content"] if isinstance(b, dict) and b.get("type") == kind]


def schema_dropped(body: dict[str, Any]) -> None:
    """Each tool offered with an empty object schema, as a translator that reads the
    parameters from a field the client never sends (``parameters`` in a Messages tool)."""
    for tool in body.get("tools") or ():
        tool["input_schema"] = {"type": "object", "properties": {}}


def results_renumbered(body: dict[str, Any]) -> None:
    """Every tool_result given a fresh id of its own, the tool_use blocks keeping theirs:
    a translator that mints ids for one side of the link only."""
    for n, block in enumerate(_blocks(body, "tool_result")):
        block["tool_use_id"] = f"call_{n:024d}"


def any_as_auto(body: dict[str, Any]) -> None:
    """``tool_choice: {type: any}`` said as ``auto``: the demand for a call is lost."""
    if isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "any":
        body["tool_choice"] = {"type": "auto"}


def refuses_system_messages(raw: bytes) -> tuple[MessagesRequest, dict[str, Any] | None]:
    """A Messages request read as a proxy reads it that knows only user and assistant turns:
    a ``system`` message inside ``messages`` (Claude Code's <system-reminder>) is refused with 400."""
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    messages = body.get("messages") if isinstance(body, dict) else None
    for i, message in enumerate(messages if isinstance(messages, list) else ()):
        if isinstance(message, dict) and message.get("role") == "system":
            raise invalid_request(f'messages.{i}.role is "system": expected \'user\' or \'assistant\'.',
                                  param="messages", code="invalid_value")
    return parse_and_shape_messages(raw)


class ChatRequestChanged(Rewriter):
    """A chat request as a broken translator reads it before saying it in the Messages API."""

    def change(self, request: dict[str, Any]) -> None:
        raise NotImplementedError

    def on_request(self, body: bytes) -> bytes:
        try:
            request = json.loads(body)
        except ValueError:
            return body
        if isinstance(request, dict):
            self.change(request)
        return json.dumps(request).encode()


class ArgumentsEncodedTwice(ChatRequestChanged):
    """Each earlier call's arguments encoded once more, so the Messages upstream reads a
    tool_use input holding the JSON text instead of the object."""

    def change(self, request: dict[str, Any]) -> None:
        for message in request.get("messages") or ():
            for call in message.get("tool_calls") or ():
                call["function"]["arguments"] = json.dumps(call["function"]["arguments"])


class RequiredAsAuto(ChatRequestChanged):
    """``tool_choice: "required"`` read as ``"auto"``, so the Messages upstream is told ``auto``."""

    def change(self, request: dict[str, Any]) -> None:
        if request.get("tool_choice") == "required":
            request["tool_choice"] = "auto"


class SystemDropped(ChatRequestChanged):
    """The system messages left out of the translated request."""

    def change(self, request: dict[str, Any]) -> None:
        request["messages"] = [m for m in request.get("messages") or () if m.get("role") not in ("system", "developer")]


MUTANTS: tuple[Mutant, ...] = (
    Mutant("translated-tool-schema-dropped",
           "Translating a Messages request for an OpenAI upstream, offers every tool with an empty parameter schema.",
           ("UP-004",), ("translation-anthropic-conversation",), with_parts(messages_read(schema_dropped)),
           upstream="openai"),
    Mutant("translated-results-renumbered",
           "Translating a Messages request for an OpenAI upstream, gives each tool result a fresh id and leaves "
           "the calls theirs, so no result answers its call.",
           ("UP-005",), ("translation-anthropic-conversation", "translation-anthropic-none"),
           with_parts(messages_read(results_renumbered)), upstream="openai"),
    Mutant("translated-any-as-auto",
           'Translating a Messages request for an OpenAI upstream, says `tool_choice: {type: "any"}` as `"auto"`.',
           ("UP-007",), ("translation-anthropic-any",), with_parts(messages_read(any_as_auto, emulate=False)),
           strict=True, upstream="openai"),
    Mutant("translated-arguments-encoded-twice",
           "Translating a chat request for a Messages upstream, encodes the earlier calls' arguments twice, so "
           "each tool_use input holds JSON text.",
           ("UP-006", "UP-005"), ("translation-openai-conversation",), rewritten(ArgumentsEncodedTwice),
           strict=True, upstream="anthropic"),
    Mutant("translated-required-as-auto",
           'Translating a chat request for a Messages upstream, says `tool_choice: "required"` as `{type: "auto"}`.',
           ("UP-007",), ("translation-openai-required",), rewritten(RequiredAsAuto), strict=True,
           upstream="anthropic"),
    Mutant("translated-system-dropped", "Translating a chat request for a Messages upstream, leaves out its system text.",
           ("UP-008",), ("translation-openai-conversation",), rewritten(SystemDropped), strict=True,
           upstream="anthropic"),

    Mutant("refuses-mid-conversation-system-message",
           "Refuses a Messages request with a `system` message inside `messages` (Claude Code's "
           "<system-reminder>) with 400, as if only user and assistant turns existed.",
           ("HTTP-003",), ("translation-anthropic-mid-conversation-system",),
           with_parts(Parts(parse_messages=refuses_system_messages))),
    Mutant("request-sampling-rewritten", "Sends `temperature: 1.0` upstream whatever the client asked, and drops its seed.",
           ("UP-003",), ("plain-sampling-forwarded", CHAT_NATIVE), rewritten(SamplingRewritten), strict=True),
    Mutant("translated-input-as-string", "Translating a chat completion, gives a tool_use input as a string of JSON.",
           ("ABODY-003",), (MESSAGES_WHOLE,), rewritten(InputAsString), upstream="openai"),
    Mutant("translated-tool-turn-ends-end-turn",
           'Translating a chat stream, ends a turn of tool_use blocks with `stop_reason: "end_turn"`.',
           ("ATOOL-003", "ATOOL-004"), (MESSAGES_NATIVE,), rewritten(EndTurnWithToolUse), upstream="openai",
           strict=True),
    Mutant("translated-block-stopped-twice", "Translating a chat stream, sends two `content_block_stop` for one block.",
           ("AEV-006",), (MESSAGES_NATIVE,), rewritten(BlockStoppedTwice), upstream="openai"),
    Mutant("replaces-broken-arguments-with-empty-object",
           "Translating a chat stream for a Messages client, turns a native call whose arguments are no JSON "
           "into a tool_use with `input: {}`.",
           ("CALLS-001", "ASDK-002", "EQ-001"), ("faults-anthropic-broken-native-arguments",),
           with_parts(Parts(messages_pipeline=BrokenInputAsEmpty)), upstream="openai"),
    Mutant("normalises-broken-arguments-to-empty-object",
           "Translating a Responses stream for a chat client, hands a call whose arguments are no JSON the "
           "arguments `{}`.",
           ("CALLS-001", "SDK-002"), ("faults-openai-broken-native-arguments",), rewritten(BrokenArgumentsAsEmpty),
           upstream="responses"),
    Mutant("drops-broken-native-calls",
           "Translating a Responses stream for a chat client, drops a call whose arguments are no JSON, "
           "without a word.",
           ("TEXT-004",), ("faults-openai-broken-native-arguments",), rewritten(DropsBrokenCalls),
           upstream="responses"),
    Mutant("translated-stop-with-tool-calls",
           'Translating a Messages stream, sends `finish_reason: "stop"` after the tool calls.',
           ("TOOL-009", "EQ-001"), (CHAT_NATIVE,), rewritten(StopWithToolCalls), upstream="anthropic",
           strict=True),
)


# --------------------------------------------------------------------------- translating otherwise, and right

CAREFUL_SCHEMA = "http://json-schema.org/draft-07/schema#"


def _careful_schema(schema: Any) -> None:
    if isinstance(schema, dict):
        schema["additionalProperties"] = False
        schema["$schema"] = CAREFUL_SCHEMA


def said_otherwise(body: dict[str, Any]) -> None:
    """What a careful translator may do that no backend can tell from the client's request:
    every call id renamed on both sides of the link, strict-mode markers added to each
    schema and descriptions dropped, string content and system text written as blocks."""
    renamed: dict[str, str] = {}
    for block in _blocks(body, "tool_use"):
        renamed[block["id"]] = block["id"] = f"toolu_gw{len(renamed):018d}"
    for block in _blocks(body, "tool_result"):
        block["tool_use_id"] = renamed.get(block["tool_use_id"], block["tool_use_id"])
    for tool in body.get("tools") or ():
        tool.pop("description", None)
        _careful_schema(tool.get("input_schema"))
    for message in body.get("messages") or ():
        if isinstance(message.get("content"), str):
            message["content"] = [{"type": "text", "text": message["content"]}]
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"]}]


class ChatSaidOtherwise(ChatRequestChanged):
    """The same for a chat request: ids renamed on the calls and their tool messages alike,
    strict-mode markers in each schema, descriptions dropped, content written as parts."""

    def change(self, request: dict[str, Any]) -> None:
        renamed: dict[str, str] = {}
        for message in request.get("messages") or ():
            for call in message.get("tool_calls") or ():
                renamed[call["id"]] = call["id"] = f"call_gw{len(renamed):017d}"
            if message.get("role") == "tool":
                message["tool_call_id"] = renamed.get(message["tool_call_id"], message["tool_call_id"])
            if isinstance(message.get("content"), str) and message.get("role") != "tool":
                message["content"] = [{"type": "text", "text": message["content"]}]
        for tool in request.get("tools") or ():
            tool["function"].pop("description", None)
            _careful_schema(tool["function"].get("parameters"))


MESSAGES_TRANSLATION = tuple(f"translation-anthropic-{c}" for c in ("conversation", "any", "named", "none"))
CHAT_TRANSLATION = tuple(f"translation-openai-{c}" for c in ("conversation", "required", "named", "none"))
TRANSLATES_OTHERWISE_FOR_OPENAI = Mutant(
    "translates-messages-otherwise",
    "Nothing: translating a Messages request for an OpenAI upstream, it renames every call id on both sides, "
    "adds strict-mode markers to the schemas, drops descriptions and writes text as blocks.",
    (), MESSAGES_TRANSLATION, with_parts(messages_read(said_otherwise)), upstream="openai",
)
TRANSLATES_OTHERWISE_FOR_MESSAGES = Mutant(
    "translates-chat-otherwise",
    "Nothing: translating a chat request for a Messages upstream, it renames every call id on both sides, adds "
    "strict-mode markers to the schemas, drops descriptions and writes content as parts.",
    (), CHAT_TRANSLATION, rewritten(ChatSaidOtherwise), upstream="anthropic",
)
