"""Non-streaming answers: rescue calls from a whole ``chat.completion``, and convert between
the streamed and the whole form when the upstream answers in the other one.

The same rescuer, ledger and finish-reason rule as the streaming pipeline, so both
paths always agree on what was a call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from reference_proxy.cleaning import clean_completion
from reference_proxy.dedup import CallLedger
from reference_proxy.errors import ProxyError, as_openai_error
from reference_proxy.openai_stream import dumps, new_call_id, new_completion_id
from reference_proxy.pipeline import RescuerFactory, ResponseStats, default_rescuer, final_finish_reason
from reference_proxy.rescue import ArgumentsDelta, Event, ToolCallEnd, ToolCallStart, ToolSpec
from reference_proxy.translate.answers import json_object
from reference_proxy.xml_client import call_to_xml

log = logging.getLogger("reference_proxy.completion")


def content_text(content: Any) -> str | None:
    """A message's content as text: strings as they are, text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"] for p in content if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return None


def _rescue(
    text: str, tools: Sequence[ToolSpec], buffer_cap: int, stats: ResponseStats, factory: RescuerFactory
) -> list[Event]:
    if not tools or not text:
        return [text] if text else []
    rescuer = factory(tools, buffer_cap)
    events = [*rescuer.feed(text), *rescuer.finish()]
    if rescuer.overflowed:
        stats.overflowed = True
        log.warning("rescue buffer cap (%d characters) reached: held text was kept as text", buffer_cap)
    return events


def _native_calls(message: Mapping[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str) or not function["name"]:
            log.warning("dropped a native tool call without a name: %.200r", call)
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):
            arguments = dumps(arguments)
        if not isinstance(arguments, str) or not arguments.strip():
            arguments = "{}"
        out.append((function["name"], arguments))
    return out


def _finish_message(
    choice: MutableMapping[str, Any],
    message: MutableMapping[str, Any],
    *,
    tools: Sequence[ToolSpec],
    xml_client: bool,
    buffer_cap: int,
    stats: ResponseStats,
    factory: RescuerFactory,
) -> None:
    original = message.get("content")
    text = content_text(original) or ""
    events = _rescue(text, tools, buffer_cap, stats, factory)
    ledger = CallLedger()
    parts: list[str] = []  # visible content, XML included for XML-reading clients
    calls: list[tuple[str, str]] = []
    name: str | None = None
    arguments: list[str] = []
    rescued = False  # whether the text held markup that was taken out

    def deliver(call_name: str, call_arguments: str) -> None:
        calls.append((call_name, call_arguments))
        if xml_client:
            tail = parts[-1][-1:] if parts else ""
            xml = call_to_xml(call_name, call_arguments)
            parts.append(xml if tail in ("", "\n") else "\n" + xml)

    for event in events:
        if isinstance(event, str):
            if event:
                parts.append(event)
        elif isinstance(event, ToolCallStart):
            name, arguments = event.name, []
        elif isinstance(event, ArgumentsDelta):
            arguments.append(event.fragment)
        elif isinstance(event, ToolCallEnd) and name is not None:
            rescued = True
            joined = "".join(arguments)
            joined = joined if joined.strip() else "{}"
            if ledger.admit_rescued(name, joined):
                stats.rescued += 1
                deliver(name, joined)
            else:
                stats.duplicates += 1
            name, arguments = None, []
    for call_name, call_arguments in _native_calls(message):
        if ledger.admit_native(call_name, call_arguments):
            stats.native += 1
            deliver(call_name, call_arguments)
        else:
            stats.duplicates += 1
            log.info("dropped native call %s: the same call was already rescued from the text", call_name)

    visible = "".join(parts)
    content: Any
    if calls or rescued or visible != text:  # markup was taken out: the rest, trimmed
        content = visible.strip() or None
    elif isinstance(original, list):
        content = original
    else:
        content = original if isinstance(original, str) and original.strip() else None
    message["content"] = content
    message.setdefault("role", "assistant")
    message.pop("tool_calls", None)
    if calls and not xml_client:
        message["tool_calls"] = [
            {"id": new_call_id(), "type": "function", "function": {"name": n, "arguments": a}} for n, a in calls
        ]
    upstream_reason = choice.get("finish_reason")
    choice["finish_reason"] = final_finish_reason(
        upstream_reason if isinstance(upstream_reason, str) else None, len(calls), xml_client=xml_client
    )


def finish_completion(
    body: MutableMapping[str, Any],
    *,
    tools: Sequence[ToolSpec],
    xml_client: bool,
    buffer_cap: int = 65536,
    rescuer_factory: RescuerFactory = default_rescuer,
) -> ResponseStats:
    """Turn an upstream ``chat.completion`` into the client's answer, in place."""
    stats = ResponseStats()
    clean_completion(body)
    for choice in body.get("choices") or ():
        if not isinstance(choice, MutableMapping):
            continue
        message = choice.get("message")
        if not isinstance(message, MutableMapping):
            message = choice["message"] = {"role": "assistant", "content": None}
        _finish_message(
            choice, message, tools=tools, xml_client=xml_client, buffer_cap=buffer_cap, stats=stats, factory=rescuer_factory
        )
        if choice.get("index", 0) == 0:
            stats.finish_reason = choice["finish_reason"]
    return stats


# --------------------------------------------------------------------------- form conversion


class StreamAccumulator:
    """Folds an upstream SSE answer into one ``chat.completion`` (for a client that did not stream)."""

    def __init__(self, request_model: str) -> None:
        self.request_model = request_model
        self.done = False
        self._head: dict[str, Any] = {}
        self._content: dict[int, list[str]] = {}
        self._calls: dict[int, dict[int, dict[str, Any]]] = {}
        self._finish: dict[int, str | None] = {}
        self._usage: Mapping[str, Any] | None = None

    def feed_event(self, event: str, data: str) -> None:
        """One SSE event: ``[DONE]`` ends, ``event: error`` raises, broken JSON is skipped."""
        if self.done:
            return
        if event == "error":
            try:
                payload: Any = json.loads(data)
            except ValueError:
                payload = data
            raise ProxyError(502, as_openai_error(payload, fallback_message="upstream reported an error", fallback_code=None))
        if data.strip() == "[DONE]":
            self.done = True
            return
        chunk = json_object(data)
        if chunk is None:
            log.warning("skipped an upstream event that is not a JSON object: %.200r", data)
        else:
            self.feed(chunk)

    def feed(self, chunk: Mapping[str, Any]) -> None:
        choices = chunk.get("choices")
        if ("error" in chunk and not choices) or chunk.get("object") == "error":
            body = as_openai_error(chunk, fallback_message="upstream reported an error", fallback_code=None)
            raise ProxyError(502, body)
        if not self._head:
            for key in ("id", "created", "model"):
                if key in chunk:
                    self._head[key] = chunk[key]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = usage
        for data in choices if isinstance(choices, list) else ():
            if not isinstance(data, Mapping):
                continue
            ci = data.get("index", 0)
            ci = ci if isinstance(ci, int) and not isinstance(ci, bool) else 0
            self._content.setdefault(ci, [])
            self._finish.setdefault(ci, None)
            delta = data.get("delta")
            if isinstance(delta, Mapping):
                if isinstance(delta.get("content"), str):
                    self._content[ci].append(delta["content"])
                for tc in delta.get("tool_calls") or ():
                    if not isinstance(tc, Mapping):
                        continue
                    ti = tc.get("index", 0)
                    call = self._calls.setdefault(ci, {}).setdefault(ti if isinstance(ti, int) else 0, {"name": "", "arguments": []})
                    function = tc.get("function")
                    if not isinstance(function, Mapping):
                        function = {}
                    if isinstance(function.get("name"), str) and not call["name"]:
                        call["name"] = function["name"]
                    if isinstance(function.get("arguments"), str):
                        call["arguments"].append(function["arguments"])
            if isinstance(data.get("finish_reason"), str):
                self._finish[ci] = data["finish_reason"]

    def result(self) -> dict[str, Any]:
        choices = []
        for ci in sorted(self._content or {0: []}):
            message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content.get(ci, ())) or None}
            calls = self._calls.get(ci)
            if calls:
                message["tool_calls"] = [
                    {"id": new_call_id(), "type": "function", "function": {"name": c["name"], "arguments": "".join(c["arguments"])}}
                    for _, c in sorted(calls.items())
                ]
            choices.append({"index": ci, "message": message, "finish_reason": self._finish.get(ci) or "stop"})
        body: dict[str, Any] = {
            "id": self._head.get("id") or new_completion_id(),
            "object": "chat.completion",
            "created": self._head.get("created", 0),
            "model": self._head.get("model") or self.request_model,
            "choices": choices,
        }
        if self._usage is not None:
            body["usage"] = dict(self._usage)
        return body


def completion_as_chunks(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A whole ``chat.completion`` as the chunks a streaming upstream would have sent
    (for a streaming client whose upstream answered in one piece)."""
    head = {k: body[k] for k in ("id", "created", "model") if k in body}
    choices = []
    for choice in body.get("choices") or ():
        if not isinstance(choice, Mapping):
            continue
        message = choice.get("message")
        if not isinstance(message, Mapping):
            message = {}
        delta: dict[str, Any] = {"role": "assistant"}
        text = content_text(message.get("content"))
        if text:
            delta["content"] = text
        calls = [c for c in message.get("tool_calls") or () if isinstance(c, Mapping)]
        if calls:
            delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(calls)]
        choices.append({"index": choice.get("index", 0), "delta": delta, "finish_reason": choice.get("finish_reason")})
    chunks: list[dict[str, Any]] = [{**head, "object": "chat.completion.chunk", "choices": choices}]
    if isinstance(body.get("usage"), Mapping):
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": body["usage"]})
    return chunks
