"""A streamed upstream answer of one API read as the events of the other, so the
client's own pipeline can run on it (``TranslatedPipeline``).

Each reader takes one SSE ``data`` payload at a time and returns what the client's
pipeline should be fed instead: parsed payloads, or text it should parse itself
(``[DONE]``, or a payload that is not JSON, which the pipeline counts as skipped).
"""

from __future__ import annotations

import json
import secrets
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Protocol

from reference_proxy.translate.answers import FINISH_FROM_STOP, STOP_FROM_FINISH, chat_usage, json_object, messages_usage

Item = dict[str, Any] | str


class UpstreamReader(Protocol):
    def read(self, data: str) -> list[Item]: ...

    def finish(self) -> list[Item]:
        """What to feed when the upstream body ended without its terminator."""
        ...


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class ChunkWriter(ABC):
    """What a reader of another API's stream as chat-completions chunks shares: one head for
    the answer (an id, the request's model until the stream names its own) and a chunk of
    one delta of the one choice; each payload that is a JSON object is read by
    ``read_object``, any other is fed on as it came (``[DONE]``, or text the pipeline skips)."""

    def __init__(self, request_model: str, created: int = 0) -> None:
        self.head: dict[str, Any] = {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion.chunk",
                                     "created": created, "model": request_model}
        self.started = False
        self.ended = False

    def chunk(self, delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**self.head, "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}]}

    def start(self, out: list[Item]) -> None:
        """The answer's first chunk, its role, unless it was written already."""
        if not self.started:
            self.started = True
            out.append(self.chunk({"role": "assistant", "content": ""}))

    def last(self, finish: str, usage: Mapping[str, Any] | None = None) -> list[Item]:
        """The answer's end: its finish (with the usage when it is known) and ``[DONE]``."""
        self.ended = True
        chunk = self.chunk({}, finish)
        if usage is not None:
            chunk["usage"] = usage
        return [chunk, "[DONE]"]

    def read(self, data: str) -> list[Item]:
        if self.ended:
            return []
        value = json_object(data)
        return [data] if value is None else self.read_object(value)

    @abstractmethod
    def read_object(self, value: dict[str, Any]) -> list[Item]:
        """One payload of the stream, a JSON object."""

    def finish(self) -> list[Item]:
        """What to feed when the upstream body ended without its terminator."""
        return [] if self.ended else self.end()

    @abstractmethod
    def end(self) -> list[Item]:
        """The end of an answer that has not ended yet."""


class ChunksAsEvents:
    """An OpenAI chat-completions stream read as Messages events."""

    def __init__(self, request_model: str) -> None:
        self.request_model = request_model
        self.started = False
        self.ended = False
        self.block = -1  # index of the last block opened
        self.open: str | None = None  # "text" or "tool" while a block is open
        self.call: int | None = None  # the chat call index of the open tool block
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {"input_tokens": 0, "output_tokens": 0}
        self.last_call: int | None = None  # the chat call index of the last call delta
        self.called = False  # a tool_use block was opened

    def read(self, data: str) -> list[Item]:
        if self.ended:
            return []
        if data.strip() == "[DONE]":
            return self.finish()
        chunk = json_object(data)
        if chunk is None:
            return [data]
        choices = chunk.get("choices")
        if ("error" in chunk and not choices) or chunk.get("object") == "error":
            error = chunk.get("error")
            error = error if isinstance(error, Mapping) else {"message": str(error or "upstream error")}
            self.ended = True
            return [{"type": "error", "error": {"type": error.get("type") or "api_error",
                                                "message": str(error.get("message") or "upstream error")}}]
        out: list[Item] = []
        if not self.started:
            self._start(chunk.get("model"), out)
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = messages_usage(chunk["usage"])
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                text = delta.get("content")
                if isinstance(text, str) and text:
                    self._text(text, out)
                calls = delta.get("tool_calls")
                for call in [calls] if isinstance(calls, Mapping) else calls if isinstance(calls, list) else ():
                    if isinstance(call, Mapping):  # a call object instead of a list of them: TGI
                        self._call(call, out)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return out

    def finish(self) -> list[Item]:
        if self.ended:
            return []
        out: list[Item] = []
        if not self.started:
            self._start(None, out)
        self._close(out)
        delta: dict[str, Any] = {"stop_sequence": None}
        if self.finish_reason is not None:
            # Servers that finish an answer with calls as "stop" (Ollama, Gemini): a Messages client runs
            # tool_use blocks only when the answer stops for them.
            called = self.called and self.finish_reason == "stop"
            delta["stop_reason"] = "tool_use" if called else STOP_FROM_FINISH.get(self.finish_reason, "end_turn")
        out.append({"type": "message_delta", "delta": delta, "usage": {"output_tokens": self.usage["output_tokens"]}})
        out.append({"type": "message_stop"})
        self.ended = True
        return out

    def _start(self, model: Any, out: list[Item]) -> None:
        self.started = True
        out.append({"type": "message_start", "message": {
            "id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "content": [],
            "model": model if isinstance(model, str) and model else self.request_model,
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}})

    def _close(self, out: list[Item]) -> None:
        if self.open is not None:
            out.append({"type": "content_block_stop", "index": self.block})
            self.open = None
            self.call = None

    def _text(self, text: str, out: list[Item]) -> None:
        if self.open != "text":
            self._close(out)
            self.block += 1
            self.open = "text"
            out.append({"type": "content_block_start", "index": self.block, "content_block": {"type": "text", "text": ""}})
        out.append({"type": "content_block_delta", "index": self.block, "delta": {"type": "text_delta", "text": text}})

    def _call(self, call: Mapping[str, Any], out: list[Item]) -> None:
        fn = _map(call.get("function"))
        index = call.get("index")
        if not isinstance(index, int) or isinstance(index, bool):  # Ollama: a delta naming a call starts one
            last = self.last_call
            index = 0 if last is None else last + 1 if call.get("id") or fn.get("name") else last
        self.last_call = index
        if self.open != "tool" or self.call != index:
            self._close(out)
            self.block += 1
            self.open, self.call = "tool", index
            ident = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"toolu_{secrets.token_hex(12)}"
            name = fn.get("name") if isinstance(fn.get("name"), str) else ""
            out.append({"type": "content_block_start", "index": self.block,
                        "content_block": {"type": "tool_use", "id": ident, "name": name, "input": {}}})
            self.called = True
        arguments = fn.get("arguments")
        if isinstance(arguments, Mapping):  # an object instead of its JSON text: TGI
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            out.append({"type": "content_block_delta", "index": self.block,
                        "delta": {"type": "input_json_delta", "partial_json": arguments}})


class EventsAsChunks(ChunkWriter):
    """A Messages stream read as OpenAI chat-completions chunks."""

    def __init__(self, request_model: str) -> None:
        super().__init__(request_model)
        self.request_model = request_model
        self.calls: dict[int, tuple[int, Any, bool]] = {}  # block index -> (call index, start input, had deltas)
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] = {}

    def read_object(self, event: dict[str, Any]) -> list[Item]:
        kind = event.get("type")
        if kind == "message_start":
            message = _map(event.get("message"))
            if isinstance(message.get("model"), str) and message["model"]:
                self.head["model"] = message["model"]
            if isinstance(message.get("usage"), Mapping):
                self.usage.update(message["usage"])
            return [self.chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            return self._block_start(event)
        if kind == "content_block_delta":
            return self._block_delta(event)
        if kind == "content_block_stop":
            return self._block_stop(event)
        if kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                self.stop_reason = delta["stop_reason"]
            if isinstance(event.get("usage"), Mapping):
                self.usage.update(event["usage"])
            return []
        if kind == "message_stop":
            return self.finish()
        if kind == "error":
            error = _map(event.get("error"))
            self.ended = True
            return [{"error": {"message": str(error.get("message") or "upstream error"),
                               "type": error.get("type") or "server_error", "param": None, "code": None}}]
        return []  # ping, and event types this proxy does not know

    def end(self) -> list[Item]:
        self.ended = True
        finish = FINISH_FROM_STOP.get(self.stop_reason, "stop") if self.stop_reason else "stop"
        return [self.chunk({}, finish), {**self.head, "choices": [], "usage": chat_usage(self.usage)}, "[DONE]"]

    def _block_start(self, event: Mapping[str, Any]) -> list[Item]:
        block = _map(event.get("content_block"))
        index = event.get("index")
        if block.get("type") == "tool_use" and isinstance(index, int):
            call = len(self.calls)
            self.calls[index] = (call, block.get("input"), False)
            return [self.chunk({"tool_calls": [{"index": call, "id": block.get("id"), "type": "function",
                                                 "function": {"name": block.get("name"), "arguments": ""}}]})]
        text = block.get("text")
        return [self.chunk({"content": text})] if block.get("type") == "text" and isinstance(text, str) and text else []

    def _block_delta(self, event: Mapping[str, Any]) -> list[Item]:
        delta = _map(event.get("delta"))
        if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
            return [self.chunk({"content": delta["text"]})]
        index = event.get("index")
        if delta.get("type") == "input_json_delta" and index in self.calls and isinstance(delta.get("partial_json"), str):
            call, start, _ = self.calls[index]
            self.calls[index] = (call, start, True)
            if not delta["partial_json"]:
                return []
            return [self.chunk({"tool_calls": [{"index": call, "function": {"arguments": delta["partial_json"]}}]})]
        return []

    def _block_stop(self, event: Mapping[str, Any]) -> list[Item]:
        index = event.get("index")
        if index not in self.calls:
            return []
        call, start, had_deltas = self.calls[index]
        if had_deltas:
            return []
        # No input_json_delta: the input is the block's starting one (``{}`` for a call without arguments).
        arguments = json.dumps(_map(start), ensure_ascii=False)
        return [self.chunk({"tool_calls": [{"index": call, "function": {"arguments": arguments}}]})]


class WrappedPipeline:
    """A pipeline around another (``inner``) that changes what goes in or comes out: it is
    closed, counts, names its model and has answered as the inner one."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def closed(self) -> bool:
        return bool(self.inner.closed)

    @property
    def stats(self) -> Any:
        return self.inner.stats

    @property
    def model(self) -> str:
        return str(self.inner.model)

    @property
    def answered(self) -> bool:
        return bool(getattr(self.inner, "answered", False))


class TranslatedPipeline(WrappedPipeline):
    """The client's own pipeline fed through an ``UpstreamReader``: what the relay
    drives for a client of one API in front of an upstream of the other."""

    def __init__(self, inner: Any, reader: UpstreamReader) -> None:
        super().__init__(inner)
        self.reader = reader

    def _feed(self, items: list[Item]) -> str:
        out = []
        for item in items:
            out.append(self.inner.feed_data(item) if isinstance(item, str) else self.inner.feed(item))
        return "".join(out)

    def feed_data(self, data: str) -> str:
        return self._feed(self.reader.read(data))

    def feed(self, payload: Mapping[str, Any]) -> str:
        return self._feed(self.reader.read(json.dumps(payload)))

    def fail(self, error: Mapping[str, Any]) -> str:
        return str(self.inner.fail(error))

    def close(self) -> str:
        return self._feed(self.reader.finish()) + str(self.inner.close())
