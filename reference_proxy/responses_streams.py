"""Responses streams read as chat chunks, and chat chunks written as a Responses stream: pure.

A Responses upstream's events are read as chat chunks (``ResponsesAsChunks``, an
``UpstreamReader``), so the chat pipeline (rescue included) runs on them; the pipeline's
chunks are written as Responses events for a Responses client (``ChunksAsResponses``):
each run of text a ``message`` item, each call a ``function_call`` item of its own,
announced, filled and closed before the next item starts (Codex CLI runs a call at its
``response.output_item.done``), every event numbered. Event shapes:
https://platform.openai.com/docs/api-reference/responses-streaming
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from typing import Any

from reference_proxy.openai_stream import dumps
from reference_proxy.responses_answers import (
    call_item,
    chat_usage,
    message_item,
    new_response_id,
    response_shell,
    responses_usage,
)
from reference_proxy.translate.streams import ChunkWriter

Item = dict[str, Any] | str


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class ResponsesAsChunks(ChunkWriter):
    """A Responses upstream's stream read as chat-completion chunks (an ``UpstreamReader``)."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model)
        self.calls: dict[Any, tuple[int, bool]] = {}  # output_index -> (chat call index, had argument deltas)

    def read_object(self, event: dict[str, Any]) -> list[Item]:
        kind = event.get("type")
        if kind == "response.created":
            model = _map(event.get("response")).get("model")
            if isinstance(model, str) and model:
                self.head["model"] = model
            return [self.chunk({"role": "assistant", "content": ""})]
        if kind == "response.output_text.delta" and isinstance(event.get("delta"), str) and event["delta"]:
            return [self.chunk({"content": event["delta"]})]
        if kind == "response.output_item.added" and _map(event.get("item")).get("type") == "function_call":
            item = _map(event.get("item"))
            index = len(self.calls)
            self.calls[event.get("output_index")] = (index, False)
            return [self.chunk({"tool_calls": [{"index": index, "id": item.get("call_id"), "type": "function",
                                                 "function": {"name": item.get("name"), "arguments": ""}}]})]
        if kind == "response.function_call_arguments.delta" and event.get("output_index") in self.calls:
            index, _ = self.calls[event["output_index"]]
            self.calls[event["output_index"]] = (index, True)
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                return [self.chunk({"tool_calls": [{"index": index, "function": {"arguments": delta}}]})]
            return []
        if kind == "response.output_item.done" and event.get("output_index") in self.calls:
            index, had = self.calls[event["output_index"]]
            arguments = _map(event.get("item")).get("arguments")
            if not had and isinstance(arguments, str) and arguments:  # the arguments came whole
                return [self.chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})]
            return []
        if kind in ("response.completed", "response.incomplete"):
            response = _map(event.get("response"))
            finish = "length" if response.get("status") == "incomplete" else "tool_calls" if self.calls else "stop"
            self.ended = True
            return [self.chunk({}, finish), {**self.head, "choices": [], "usage": chat_usage(response.get("usage"))},
                    "[DONE]"]
        if kind in ("response.failed", "error"):
            error = _map(_map(event.get("response")).get("error")) if kind == "response.failed" else event
            self.ended = True
            return [{"error": {"message": str(error.get("message") or "upstream error"), "type": "server_error",
                               "param": None, "code": error.get("code")}}]
        return []

    def end(self) -> list[Item]:
        return self.last("tool_calls" if self.calls else "stop")


class ChunksAsResponses:
    """The chat pipeline's chunks written as a Responses stream, every event numbered."""

    def __init__(self, request: Mapping[str, Any], request_model: str) -> None:
        self.request = request
        self.model = request_model
        self.response_id = new_response_id()
        self.sequence = 0
        self.started = False
        self.ended = False
        self.output: list[dict[str, Any] | None] = []  # by output_index; None while the item is open
        self.message: tuple[int, str, list[str]] | None = None  # the open message: output_index, id, texts
        self.calls: dict[int, tuple[int, str, str, str, list[str]]] = {}  # chat index -> output_index, id, call_id, name, args
        self.finish_reason: str | None = None
        self.usage: Any = None

    def _event(self, payload: dict[str, Any]) -> str:
        payload["sequence_number"] = self.sequence
        self.sequence += 1
        return f"event: {payload['type']}\ndata: {dumps(payload)}\n\n"

    def _shell(self, status: str, output: list[dict[str, Any]], usage: dict[str, Any] | None = None,
               error: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return response_shell(self.request, self.response_id, self.model, status, output, usage,
                              incomplete=status == "incomplete", error=error)

    def _start(self, out: list[str]) -> None:
        if not self.started:
            self.started = True
            out.append(self._event({"type": "response.created", "response": self._shell("in_progress", [])}))
            out.append(self._event({"type": "response.in_progress", "response": self._shell("in_progress", [])}))

    def read(self, data: str) -> str:
        """One SSE ``data`` payload of the chat pipeline's output."""
        if self.ended:
            return ""
        out: list[str] = []
        if data.strip() == "[DONE]":
            self._finish(out)
            return "".join(out)
        try:
            chunk = json.loads(data)
        except ValueError:
            return ""
        if not isinstance(chunk, dict):
            return ""
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        if "error" in chunk and not chunk.get("choices"):
            self._fail(_map(chunk.get("error")), out)
            return "".join(out)
        self._start(out)
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            choice = _map(choice)
            if choice.get("index", 0) != 0:
                continue
            delta = _map(choice.get("delta"))
            text = delta.get("content")
            if isinstance(text, str) and text:
                self._text(text, out)
            for call in delta.get("tool_calls") or ():
                self._call(_map(call), out)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return "".join(out)

    def _text(self, text: str, out: list[str]) -> None:
        if self.message is None:
            index = len(self.output)
            ident = f"msg_{secrets.token_hex(16)}"
            self.output.append(None)
            self.message = (index, ident, [])
            out.append(self._event({"type": "response.output_item.added", "output_index": index, "item": {
                "id": ident, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}))
            out.append(self._event({"type": "response.content_part.added", "item_id": ident, "output_index": index,
                                    "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}))
        index, ident, texts = self.message
        texts.append(text)
        out.append(self._event({"type": "response.output_text.delta", "item_id": ident, "output_index": index,
                                "content_index": 0, "delta": text, "logprobs": []}))

    def _close_message(self, out: list[str]) -> None:
        if self.message is None:
            return
        index, ident, texts = self.message
        text = "".join(texts)
        where = {"item_id": ident, "output_index": index, "content_index": 0}
        out.append(self._event({"type": "response.output_text.done", **where, "text": text, "logprobs": []}))
        out.append(self._event({"type": "response.content_part.done", **where,
                                "part": {"type": "output_text", "text": text, "annotations": []}}))
        item = message_item(ident, text)
        out.append(self._event({"type": "response.output_item.done", "output_index": index, "item": item}))
        self.output[index] = item
        self.message = None

    def _call(self, call: Mapping[str, Any], out: list[str]) -> None:
        chat_index = call.get("index", 0)
        if not isinstance(chat_index, int):
            return
        fn = _map(call.get("function"))
        if chat_index not in self.calls:
            # Calls stay open until the answer ends: an upstream may go on with one after the next
            # has begun, or after text (deltas name their call by index), and every argument
            # fragment must reach the client. Items are numbered as they begin, so open ones mix.
            self._close_message(out)
            index = len(self.output)
            ident = f"fc_{secrets.token_hex(16)}"
            given = call.get("id")
            call_id = given if isinstance(given, str) and given else f"call_{secrets.token_hex(12)}"
            name = str(fn["name"]) if isinstance(fn.get("name"), str) else ""
            self.output.append(None)
            self.calls[chat_index] = (index, ident, call_id, name, [])
            out.append(self._event({"type": "response.output_item.added", "output_index": index,
                                    "item": call_item(ident, call_id, name, "", "in_progress", self.request)}))
        index, ident, _, _, parts = self.calls[chat_index]
        fragment = fn.get("arguments")
        if isinstance(fragment, str) and fragment:
            parts.append(fragment)
            out.append(self._event({"type": "response.function_call_arguments.delta", "item_id": ident,
                                    "output_index": index, "delta": fragment}))

    def _close_calls(self, out: list[str]) -> None:
        """Close every call (once: the answer ends right after), in the order they began."""
        for index, ident, call_id, name, parts in self.calls.values():
            arguments = "".join(parts)
            out.append(self._event({"type": "response.function_call_arguments.done", "item_id": ident,
                                    "output_index": index, "name": name, "arguments": arguments}))
            item = call_item(ident, call_id, name, arguments, request=self.request)
            out.append(self._event({"type": "response.output_item.done", "output_index": index, "item": item}))
            self.output[index] = item

    def _finish(self, out: list[str]) -> None:
        self._start(out)
        self._close_message(out)
        self._close_calls(out)
        status = "incomplete" if self.finish_reason == "length" else "completed"
        output = [item for item in self.output if item is not None]
        final = "response.incomplete" if status == "incomplete" else "response.completed"
        out.append(self._event({"type": final, "response": self._shell(status, output, responses_usage(self.usage))}))
        self.ended = True

    def _fail(self, error: Mapping[str, Any], out: list[str]) -> None:
        """The answer broke off: what was complete stays, the response fails with the upstream's message."""
        self._start(out)
        self._close_message(out)
        self._close_calls(out)
        output = [item for item in self.output if item is not None]
        body = {"code": str(error.get("code") or "server_error"), "message": str(error.get("message") or "upstream error")}
        out.append(self._event({"type": "response.failed", "response": self._shell("failed", output, error=body)}))
        self.ended = True

    def finish(self) -> str:
        """The pipeline closed without ``[DONE]``: end the response anyway."""
        if self.ended:
            return ""
        out: list[str] = []
        self._finish(out)
        return "".join(out)


class ChainedReader:
    """Two upstream readers in a row: what the first makes of each payload, read by the second
    (a Responses stream read as chat chunks, then as Messages events)."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first = first
        self.second = second

    def _through(self, items: list[Item]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            out.extend(self.second.read(item if isinstance(item, str) else json.dumps(item)))
        return out

    def read(self, data: str) -> list[Item]:
        return self._through(self.first.read(data))

    def finish(self) -> list[Item]:
        return [*self._through(self.first.finish()), *self.second.finish()]
