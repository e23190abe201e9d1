"""A captured chat-completions answer (SSE, chunk list or one JSON body) read into frames; Messages
answers are handed to ``capture_messages``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from harness.capture.errors import CaptureError
from harness.capture.messages import (
    MessagesParts,
    is_messages_payload,
    is_messages_stream,
    read_message_object,
    read_messages_events,
    read_messages_sse,
)
from harness.capture.model import Dialect
from harness.capture.stream import NOT_JSON, StreamParts, data_line, loads, parse_data, read_stream
from harness.capture.text import (
    check_response_dialect,
    decode_text,
    json_list,
    json_object,
    parse_json,
    strip_http_head,
)
from harness.core.dialects import OPENAI
from harness.core.dialects.frames import ContentFrame, RawFrame, ToolCallFrame
from harness.judge.readers.assemble import first_choice
from harness.judge.readers.sse import is_done_like, parse_events

# --------------------------------------------------------------------------- chunks → frames


@dataclass
class _Response(StreamParts):
    """What a chat-completions response said, gathered chunk by chunk."""

    DIALECT: ClassVar[Dialect] = OPENAI
    FINISH: ClassVar[str] = OPENAI.finish_field
    END: ClassVar[str] = OPENAI.stream_end

    chunks: int = 0
    reasoning: int = 0
    other_choices: int = 0
    multi_call_deltas: int = 0
    missing_index: int = 0

    def note_model(self, obj: Mapping[str, Any]) -> None:
        model = obj.get("model")
        if self.model is None and isinstance(model, str) and model:
            self.model = model

    def note_usage(self, obj: Mapping[str, Any]) -> None:
        usage = obj.get("usage")
        if isinstance(usage, dict):
            counts = {
                k: v
                for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                if isinstance(v := usage.get(k), int) and not isinstance(v, bool) and v >= 0
            }
            if counts:
                self.usage = counts

    def tool_call(self, raw: Any, position: int) -> None:
        if not isinstance(raw, dict):
            return
        index = raw.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            self.missing_index += 1
            index = position
        fn = json_object(raw.get("function"))
        kind = raw.get("type")
        self.frames.append(
            ToolCallFrame(
                index=index,
                id=raw["id"] if isinstance(raw.get("id"), str) else None,
                type="function" if kind == "function" else None,
                name=fn["name"] if isinstance(fn.get("name"), str) else None,
                arguments=fn["arguments"] if isinstance(fn.get("arguments"), str) else None,
            )
        )

    def chunk(self, obj: Mapping[str, Any]) -> None:
        """One ``chat.completion.chunk``: its first choice's delta becomes frames."""
        self.chunks += 1
        self.note_model(obj)
        self.note_usage(obj)
        for choice in json_list(obj.get("choices")):
            if not isinstance(choice, dict):
                continue
            if choice.get("index", 0) != 0:
                self.other_choices += 1
                continue
            delta = json_object(choice.get("delta"))
            finish = choice.get("finish_reason")
            content = delta.get("content")
            if isinstance(content, str):
                # The role chunk's and the finish chunk's empty content are envelope,
                # which the mock writes by itself; any other delta is kept as it came.
                if content or not ("role" in delta or finish):
                    self.frames.append(ContentFrame(content))
            if delta.get("reasoning_content") or delta.get("reasoning"):
                self.reasoning += 1
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                if len(calls) > 1:
                    self.multi_call_deltas += 1
                for position, call in enumerate(calls):
                    self.tool_call(call, position)
            if isinstance(finish, str) and finish:
                self.finish_reason = finish

    def completion(self, obj: Mapping[str, Any]) -> None:
        """A whole ``chat.completion``: its content is one frame, each call one frame."""
        self.events += 1
        self.chunks += 1
        self.note_model(obj)
        self.note_usage(obj)
        first = first_choice(obj)
        self.other_choices = sum(isinstance(c, dict) for c in json_list(obj.get("choices"))) - (first is not None)
        if first is None:
            return
        message = json_object(first.get("message"))
        content = message.get("content")
        if isinstance(content, list):  # content parts: only their text reaches a client
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
        if isinstance(content, str) and content:
            self.frames.append(ContentFrame(content))
        if message.get("reasoning_content") or message.get("reasoning"):
            self.reasoning += 1
        for position, call in enumerate(json_list(message.get("tool_calls"))):
            if isinstance(call, dict):
                call = {**call, "index": call.get("index", position)}
            self.tool_call(call, position)
        finish = first.get("finish_reason")
        if isinstance(finish, str) and finish:
            self.finish_reason = finish

    def summary_warnings(self, origin: str) -> list[str]:
        out = list(self.warnings)
        if self.reasoning:
            out.append(f"{origin}: dropped reasoning text in {self.reasoning} delta(s): scenarios have no frame for it")
        if self.other_choices:
            out.append(f"{origin}: kept choice 0 only; {self.other_choices} delta(s) of other choices dropped")
        if self.multi_call_deltas:
            out.append(
                f"{origin}: {self.multi_call_deltas} delta(s) carried several tool_calls entries; "
                "each entry became its own frame"
            )
        if self.missing_index:
            out.append(f"{origin}: {self.missing_index} tool_calls entr(ies) had no index; their position was used")
        return out


    def event(self, payload: Any, raw: str, label: str, origin: str) -> None:
        """One event's parsed data: a chunk, or something kept verbatim as a raw frame."""
        if isinstance(payload, dict):
            check_response_dialect(origin, payload)
            if "error" in payload and "choices" not in payload:
                err = payload["error"]
                message = err.get("message") if isinstance(err, dict) else err
                self.frames.append(RawFrame(raw))
                self.warnings.append(f"{origin}: {label} is an error ({message!s:.120}); kept verbatim as a raw frame")
                return
            if isinstance(payload.get("choices"), list) or payload.get("object") == "chat.completion.chunk":
                self.chunk(payload)
                return
        self.frames.append(RawFrame(raw))
        self.warnings.append(f"{origin}: {label} is not a chat.completion.chunk; kept verbatim as a raw frame")

    def ends(self, data: str) -> bool:
        return is_done_like(data)

    def pieces(self, data: str, parsed: Any, raw: str) -> list[tuple[str, Any, str]]:
        """Chunks glued without blank lines (one ``data:`` line each) are events of their own."""
        lines = data.split("\n")
        if parsed is not NOT_JSON or len(lines) == 1:
            return [(data, parsed, raw)]
        values = [loads(line) for line in lines]
        if any(v is NOT_JSON and not is_done_like(line) for line, v in zip(lines, values)):
            return [(data, parsed, raw)]
        return [(line, value, f"data: {line}\n\n") for line, value in zip(lines, values)]


Answer = _Response | MessagesParts  # an answer read in its dialect


def read_sse(data: bytes, origin: str) -> Answer:
    """An SSE transcript of either dialect: ``data:`` lines, possibly with ``event:``/``id:``
    lines, comments, CRLF line ends, glued events and a missing or cut-off end."""
    body = strip_http_head(data, origin)
    decode_text(body, origin)  # invalid UTF-8 is an error, not replacement characters in the frames
    stream = parse_events(body)
    parsed = parse_data(stream)
    if is_messages_stream(stream, parsed):
        return read_messages_sse(body, stream, parsed, origin)
    resp = _Response(events=len(stream.events))
    read_stream(resp, body, stream, parsed, origin)
    if not resp.chunks:
        if not stream.events:
            raise CaptureError(f"{origin}: no complete SSE event ('data: ...' followed by a blank line)")
        if resp.cut:
            raise CaptureError(f"{origin}: truncated SSE: the stream is cut off before its first complete chunk")
        raise CaptureError(f"{origin}: no chat.completion.chunk event among {len(stream.events)} SSE event(s)")
    resp.truncation_warnings(origin)
    return resp


def read_chunks(items: Sequence[Any], origin: str) -> Answer:
    """A list of chunk objects (or of SSE ``data:`` strings), or of Messages events, as some
    logs keep a stream."""
    if items and is_messages_payload(items[0]):
        return read_messages_events(items, origin)
    resp = _Response(events=len(items))
    for position, item in enumerate(items):
        label = f"chunk {position + 1}"
        if isinstance(item, str):
            text = item.strip()
            text = text[5:].strip() if text.startswith("data:") else text
            if is_done_like(text):
                resp.done = True
                continue
            try:
                item = json.loads(text)
            except (ValueError, RecursionError):
                resp.warnings.append(f"{origin}: {label} is not JSON ({text[:60]!r}); dropped")
                continue
        resp.event(item, data_line(item), label, origin)
    if not resp.chunks:
        raise CaptureError(f"{origin}: no chat.completion.chunk among {len(items)} item(s)")
    resp.done = True  # a list has no terminator to miss
    resp.truncation_warnings(origin)
    return resp


def read_completion_object(obj: Any, origin: str) -> Answer:
    """A non-streaming answer: one ``chat.completion`` or Messages ``message`` object."""
    if not isinstance(obj, dict):
        raise CaptureError(f"{origin}: expected a chat.completion or Messages JSON object, got a JSON "
                           f"{type(obj).__name__}")
    check_response_dialect(origin, obj)
    if "error" in obj and "choices" not in obj:
        err = obj["error"]
        message = err.get("message") if isinstance(err, dict) else err
        raise CaptureError(f"{origin}: the captured response is an error, not an answer: {message!s:.200}")
    if obj.get("type") == "message" and isinstance(obj.get("content"), list):
        return read_message_object(obj, origin)
    if is_messages_payload(obj):
        return read_messages_events([obj], origin)
    if not isinstance(obj.get("choices"), list):
        raise CaptureError(f"{origin}: not a chat.completion or a Messages answer: no 'choices' list, "
                           "no 'content' blocks")
    if obj.get("object") == "chat.completion.chunk":
        return read_chunks([obj], origin)
    resp = _Response()
    resp.completion(obj)
    if resp.finish_reason is None:
        resp.warnings.append(f"{origin}: no finish_reason in the response")
    return resp


def read_response_text(data: bytes, origin: str) -> Answer:
    """A response body of unknown kind: SSE text or one JSON object."""
    body = strip_http_head(data, origin)
    text = decode_text(body, origin).strip()
    if text.startswith(("{", "[")) and not re.search(r"(?m)^data:", text):
        obj = parse_json(text, origin, "the response is not valid JSON")
        if isinstance(obj, list):
            return read_chunks(obj, origin)
        return read_completion_object(obj, origin)
    if not text:
        raise CaptureError(f"{origin}: the response body is empty")
    return read_sse(body, origin)
