"""The OpenAI Responses API said in Chat Completions words and back: pure, no I/O.

The proxy serves ``/v1/responses`` by running the chat pipeline (rescue included) on
the answer: a Responses request becomes a chat request (``responses_to_chat``); a
Responses upstream's events are read as chat chunks (``ResponsesAsChunks``); the
pipeline's chunks are written as Responses events (``ChunksAsResponses``), each call a
``function_call`` item of its own, announced, filled and closed before the next item
starts (Codex CLI runs a call at its ``response.output_item.done``), every event numbered.
Field names and event shapes: https://platform.openai.com/docs/api-reference/responses-streaming
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections.abc import Mapping
from typing import Any

from reference_proxy.openai_stream import dumps

Item = dict[str, Any] | str
log = logging.getLogger("reference_proxy.responses")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def new_response_id() -> str:
    return "resp_" + secrets.token_hex(24)


# --------------------------------------------------------------------------- requests


def _function_tool(tool: Any) -> dict[str, Any] | None:
    tool = _map(tool)
    if tool.get("type") != "function" or not isinstance(tool.get("name"), str):
        return None
    function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def input_messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conversation of a Responses request as chat messages: an assistant's
    ``function_call`` items join one assistant message's ``tool_calls``."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        item = _map(item)
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}}
            last = messages[-1] if messages else None
            if last is not None and last.get("role") == "assistant":
                last.setdefault("tool_calls", []).append(call)
                if not last.get("content"):
                    last["content"] = None
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item.get("output")
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"),
                             "content": output if isinstance(output, str) else _text(output) or dumps(output)})
        # reasoning and other item kinds have no chat form; they are left out
    return messages


def responses_to_chat(body: Mapping[str, Any]) -> dict[str, Any]:
    """The chat request that asks what the Responses request ``body`` asks."""
    chat: dict[str, Any] = {k: body[k] for k in ("model", "temperature", "top_p", "user", "parallel_tool_calls")
                            if k in body and body[k] is not None}
    chat["messages"] = input_messages(body)
    tools = [t for t in (_function_tool(t) for t in body.get("tools") or ()) if t is not None]
    if tools:
        chat["tools"] = tools
    if "tool_choice" in body and tools:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    if isinstance(body.get("max_output_tokens"), int):
        chat["max_tokens"] = body["max_output_tokens"]
    chat["stream"] = body.get("stream") is True
    if chat["stream"]:
        chat["stream_options"] = {"include_usage": True}
    return chat


def chat_to_responses_request(chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
    """A chat request as a Responses upstream takes it (the proxy's own request, after shaping)."""
    out: dict[str, Any] = {k: chat[k] for k in ("model", "temperature", "top_p", "user", "parallel_tool_calls")
                           if k in chat}
    items: list[dict[str, Any]] = []
    for message in chat.get("messages") or ():
        message = _map(message)
        role = message.get("role")
        if role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _text(message.get("content"))})
            continue
        if _text(message.get("content")) or not message.get("tool_calls"):
            items.append({"type": "message", "role": role, "content": _text(message.get("content"))})
        for call in message.get("tool_calls") or ():
            fn = _map(_map(call).get("function"))
            items.append({"type": "function_call", "call_id": _map(call).get("id"), "name": fn.get("name"),
                          "arguments": fn.get("arguments") or ""})
    out["input"] = items
    tools = [{"type": "function", **_map(t).get("function", {})} for t in chat.get("tools") or ()
             if isinstance(_map(t).get("function"), Mapping)]
    if tools:
        out["tools"] = tools
    choice = chat.get("tool_choice")
    if isinstance(choice, Mapping) and isinstance(choice.get("function"), Mapping):
        out["tool_choice"] = {"type": "function", "name": choice["function"].get("name")}
    elif choice is not None:
        out["tool_choice"] = choice
    if isinstance(chat.get("max_tokens"), int):
        out["max_output_tokens"] = chat["max_tokens"]
    out["stream"] = stream
    return out


# --------------------------------------------------------------------------- whole answers


def _count(usage: Mapping[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(chat_usage: Any) -> dict[str, Any]:
    usage = _map(chat_usage)
    prompt, completion = _count(usage, "prompt_tokens"), _count(usage, "completion_tokens")
    return {"input_tokens": prompt, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": completion,
            "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + completion}


def _chat_usage(usage: Any) -> dict[str, int]:
    given = _map(usage)
    prompt, completion = _count(given, "input_tokens"), _count(given, "output_tokens")
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def response_shell(request: Mapping[str, Any], response_id: str, model: str, status: str,
                   output: list[dict[str, Any]], usage: dict[str, Any] | None,
                   incomplete: bool = False, error: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A ``response`` object, echoing what the request set."""
    tools = request.get("tools")
    return {
        "id": response_id, "object": "response", "created_at": int(time.time()), "status": status,
        "error": dict(error) if error is not None else None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": request.get("instructions"), "max_output_tokens": request.get("max_output_tokens"),
        "model": model, "output": output, "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"), "reasoning": {"effort": None, "summary": None},
        "store": request.get("store", True), "temperature": request.get("temperature", 1.0),
        "text": {"format": {"type": "text"}}, "tool_choice": request.get("tool_choice", "auto"),
        "tools": tools if isinstance(tools, list) else [], "top_p": request.get("top_p", 1.0),
        "truncation": "disabled", "usage": usage, "user": request.get("user"), "metadata": {},
    }


def _message_item(ident: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {"id": ident, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _call_item(ident: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"id": ident, "type": "function_call", "status": status, "call_id": call_id, "name": name,
            "arguments": arguments}


def completion_to_response(completion: Mapping[str, Any], request: Mapping[str, Any]) -> dict[str, Any]:
    """A whole ``chat.completion`` (after rescue) as a ``response``."""
    choices = completion.get("choices")
    choice = _map(choices[0]) if isinstance(choices, list) and choices else {}
    message = _map(choice.get("message"))
    response_id = new_response_id()
    output: list[dict[str, Any]] = []
    text = message.get("content")
    if isinstance(text, str) and text:
        output.append(_message_item(f"msg_{secrets.token_hex(16)}", text))
    for call in message.get("tool_calls") or ():
        fn = _map(_map(call).get("function"))
        ident = _map(call).get("id")
        call_id = ident if isinstance(ident, str) and ident else f"call_{secrets.token_hex(12)}"
        output.append(_call_item(f"fc_{secrets.token_hex(16)}", call_id, str(fn.get("name") or ""),
                                 str(fn.get("arguments") or "")))
    model = completion.get("model")
    length = choice.get("finish_reason") == "length"
    return response_shell(request, response_id, model if isinstance(model, str) else str(request.get("model", "")),
                          "incomplete" if length else "completed", output, _usage(completion.get("usage")),
                          incomplete=length)


def response_to_completion(response: Mapping[str, Any], request_model: str) -> dict[str, Any]:
    """A whole ``response`` from a Responses upstream as a ``chat.completion`` (before rescue)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for item in response.get("output") or ():
        item = _map(item)
        if item.get("type") == "message":
            texts.append("".join(p.get("text", "") for p in item.get("content") or ()
                                 if isinstance(p, Mapping) and p.get("type") == "output_text"))
        elif item.get("type") == "function_call":
            calls.append({"id": item.get("call_id"), "type": "function",
                          "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}})
    status = response.get("status")
    finish = "length" if status == "incomplete" else "tool_calls" if calls else "stop"
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts or not calls else None}
    if calls:
        message["tool_calls"] = calls
    model = response.get("model")
    return {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion", "created": int(time.time()),
            "model": model if isinstance(model, str) and model else request_model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _chat_usage(response.get("usage"))}


# --------------------------------------------------------------------------- streams


class ResponsesAsChunks:
    """A Responses upstream's stream read as chat-completion chunks (an ``UpstreamReader``)."""

    def __init__(self, request_model: str) -> None:
        self.head: dict[str, Any] = {"id": f"chatcmpl-{secrets.token_hex(12)}", "object": "chat.completion.chunk",
                                     "created": 0, "model": request_model}
        self.calls: dict[Any, tuple[int, bool]] = {}  # output_index -> (chat call index, had argument deltas)
        self.ended = False

    def _chunk(self, delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**self.head, "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}]}

    def read(self, data: str) -> list[Item]:
        if self.ended:
            return []
        try:
            event = json.loads(data)
        except ValueError:
            return [data]
        if not isinstance(event, dict):
            return [data]
        kind = event.get("type")
        if kind == "response.created":
            model = _map(event.get("response")).get("model")
            if isinstance(model, str) and model:
                self.head["model"] = model
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "response.output_text.delta" and isinstance(event.get("delta"), str) and event["delta"]:
            return [self._chunk({"content": event["delta"]})]
        if kind == "response.output_item.added" and _map(event.get("item")).get("type") == "function_call":
            item = _map(event.get("item"))
            index = len(self.calls)
            self.calls[event.get("output_index")] = (index, False)
            return [self._chunk({"tool_calls": [{"index": index, "id": item.get("call_id"), "type": "function",
                                                 "function": {"name": item.get("name"), "arguments": ""}}]})]
        if kind == "response.function_call_arguments.delta" and event.get("output_index") in self.calls:
            index, _ = self.calls[event["output_index"]]
            self.calls[event["output_index"]] = (index, True)
            delta = event.get("delta")
            if isinstance(delta, str) and delta:
                return [self._chunk({"tool_calls": [{"index": index, "function": {"arguments": delta}}]})]
            return []
        if kind == "response.output_item.done" and event.get("output_index") in self.calls:
            index, had = self.calls[event["output_index"]]
            arguments = _map(event.get("item")).get("arguments")
            if not had and isinstance(arguments, str) and arguments:  # the arguments came whole
                return [self._chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})]
            return []
        if kind in ("response.completed", "response.incomplete"):
            response = _map(event.get("response"))
            finish = "length" if response.get("status") == "incomplete" else "tool_calls" if self.calls else "stop"
            self.ended = True
            return [self._chunk({}, finish), {**self.head, "choices": [], "usage": _chat_usage(response.get("usage"))},
                    "[DONE]"]
        if kind in ("response.failed", "error"):
            error = _map(_map(event.get("response")).get("error")) if kind == "response.failed" else event
            self.ended = True
            return [{"error": {"message": str(error.get("message") or "upstream error"), "type": "server_error",
                               "param": None, "code": error.get("code")}}]
        return []

    def finish(self) -> list[Item]:
        if self.ended:
            return []
        self.ended = True
        return [self._chunk({}, "tool_calls" if self.calls else "stop"), "[DONE]"]


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
        self.open_calls: list[int] = []  # chat indices of calls not closed yet
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
            self._close_calls(out)
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
        item = _message_item(ident, text)
        out.append(self._event({"type": "response.output_item.done", "output_index": index, "item": item}))
        self.output[index] = item
        self.message = None

    def _call(self, call: Mapping[str, Any], out: list[str]) -> None:
        chat_index = call.get("index", 0)
        if not isinstance(chat_index, int):
            return
        fn = _map(call.get("function"))
        if chat_index not in self.calls:
            self._close_message(out)
            self._close_calls(out)  # the pipeline sends each call whole: the one before it is complete
            index = len(self.output)
            ident = f"fc_{secrets.token_hex(16)}"
            given = call.get("id")
            call_id = given if isinstance(given, str) and given else f"call_{secrets.token_hex(12)}"
            name = str(fn["name"]) if isinstance(fn.get("name"), str) else ""
            self.output.append(None)
            self.calls[chat_index] = (index, ident, call_id, name, [])
            self.open_calls.append(chat_index)
            out.append(self._event({"type": "response.output_item.added", "output_index": index,
                                    "item": _call_item(ident, call_id, name, "", "in_progress")}))
        index, ident, _, _, parts = self.calls[chat_index]
        fragment = fn.get("arguments")
        if isinstance(fragment, str) and fragment and chat_index not in self.open_calls:
            log.warning("dropped arguments for call %s after its item was closed: %.200r", ident, fragment)
        elif isinstance(fragment, str) and fragment:
            parts.append(fragment)
            out.append(self._event({"type": "response.function_call_arguments.delta", "item_id": ident,
                                    "output_index": index, "delta": fragment}))

    def _close_calls(self, out: list[str]) -> None:
        for chat_index in self.open_calls:
            index, ident, call_id, name, parts = self.calls[chat_index]
            arguments = "".join(parts)
            out.append(self._event({"type": "response.function_call_arguments.done", "item_id": ident,
                                    "output_index": index, "name": name, "arguments": arguments}))
            item = _call_item(ident, call_id, name, arguments)
            out.append(self._event({"type": "response.output_item.done", "output_index": index, "item": item}))
            self.output[index] = item
        self.open_calls = []

    def _finish(self, out: list[str]) -> None:
        self._start(out)
        self._close_message(out)
        self._close_calls(out)
        status = "incomplete" if self.finish_reason == "length" else "completed"
        output = [item for item in self.output if item is not None]
        final = "response.incomplete" if status == "incomplete" else "response.completed"
        out.append(self._event({"type": final, "response": self._shell(status, output, _usage(self.usage))}))
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
