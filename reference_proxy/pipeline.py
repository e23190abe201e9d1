"""One streamed response: upstream chunks in, the client's SSE text out.

Pure and synchronous. Per choice it runs a rescuer over the content, buffers
native tool calls until each is complete, de-duplicates the two sources, numbers
all calls 0..n-1 in the order they are delivered, and writes either OpenAI
``tool_calls`` deltas or, for XML-reading clients, Cline-style XML in the content.
Text the rescuer releases goes out with the same upstream frame that carried it:
the proxy never waits for the whole answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from reference_proxy.dedup import CallLedger
from reference_proxy.errors import as_openai_error
from reference_proxy.openai_stream import DONE, ChunkEmitter, dumps, error_event, is_plain, new_call_id
from reference_proxy.rescue import ArgumentsDelta, Event, Rescuer, ToolCallEnd, ToolCallStart, ToolSpec
from reference_proxy.rescue.scanner import openers_for
from reference_proxy.translate.answers import json_object
from reference_proxy.xml_client import call_to_xml

log = logging.getLogger("reference_proxy.pipeline")

#: Sent when the client asked for usage and the upstream reported none: the chunk's
#: shape is what clients rely on; zeros say "unknown", never an estimate.
ZERO_USAGE: Mapping[str, int] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
_CALL_REASONS = frozenset({"tool_calls", "function_call"})


class RescuerLike(Protocol):
    """What the pipeline needs of a rescuer (``reference_proxy.rescue.Rescuer``)."""

    @property
    def overflowed(self) -> bool: ...

    def feed(self, text: str) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


RescuerFactory = Callable[[Sequence[ToolSpec], int], RescuerLike]


def default_rescuer(tools: Sequence[ToolSpec], buffer_cap: int) -> RescuerLike:
    return Rescuer(tools, buffer_cap=buffer_cap)


def rescuer_for(formats: frozenset[str] | None) -> RescuerFactory:
    """The factory of rescuers reading only ``formats`` (None: every format)."""
    openers = openers_for(formats)
    if openers is None:
        return default_rescuer

    def factory(tools: Sequence[ToolSpec], buffer_cap: int) -> RescuerLike:
        return Rescuer(tools, buffer_cap=buffer_cap, openers=openers)

    return factory


def final_finish_reason(upstream: str | None, calls: int, *, xml_client: bool) -> str:
    """``tool_calls`` when calls were delivered as calls; otherwise the upstream's reason,
    except that a tool-call reason with no call left (or XML delivery) becomes ``stop``."""
    if calls and not xml_client:
        return "tool_calls"
    if not upstream or upstream in _CALL_REASONS:
        return "stop"
    return upstream


def clean_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in usage.items() if k != "prompt_tokens_details"}


_FRAME_LESSONS = 8  # chunks a stream may learn its envelope from (bounded extra parsing)
_PROBE = "[0.5]"  # stands in for the delta when a learned envelope is checked
_json_value = json.JSONDecoder().raw_decode


class _Frame:
    """The text of an upstream chunk around its one choice's delta.

    A chunk that starts with ``prefix``, ends with ``suffix`` and holds a JSON object
    between them is, by JSON's grammar, the learned chunk with that object as its
    delta; when the learned chunk had nothing the pipeline acts on but the delta
    (no error, no usage, no finish reason, one choice), ``feed`` gives the same output
    for ``{"choices": [{"index": choice, "delta": ...}]}``. That spares a full
    ``json.loads`` of every chunk: most of an inference server's chunk is its
    unchanging envelope.
    """

    __slots__ = ("prefix", "suffix", "size", "choice")

    def __init__(self, prefix: str, suffix: str, choice: int) -> None:
        self.prefix = prefix
        self.suffix = suffix
        self.size = len(prefix) + len(suffix)
        self.choice = choice

    @classmethod
    def learn(cls, data: str, chunk: dict[str, Any]) -> _Frame | None:
        choices = chunk.get("choices")
        if (
            "error" in chunk
            or chunk.get("object") == "error"
            or isinstance(chunk.get("usage"), Mapping)
            or not isinstance(choices, list)
            or len(choices) != 1
            or not isinstance(choices[0], dict)
        ):
            return None
        choice = choices[0]
        reason = choice.get("finish_reason")
        index = choice.get("index", 0)
        if not isinstance(index, int) or isinstance(index, bool):
            index = 0
        if not isinstance(choice.get("delta"), dict) or (isinstance(reason, str) and reason):
            return None
        key = data.find('"delta":')
        if key < 0:
            return None
        start = key + len('"delta":')
        while start < len(data) and data[start] in " \t\r\n":
            start += 1
        try:
            _, end = _json_value(data, start)
        except ValueError:
            return None
        prefix, suffix = data[:start], data[end:]
        # The delta found must be the one choice's delta, nothing else: check with a probe.
        expected = dict(chunk)
        expected["choices"] = [{**choice, "delta": json.loads(_PROBE)}]
        try:
            if json.loads(prefix + _PROBE + suffix) != expected:
                return None
        except ValueError:
            return None
        return cls(prefix, suffix, index)


@dataclass
class ResponseStats:
    """What happened in one response, for the request log line."""

    rescued: int = 0
    native: int = 0
    duplicates: int = 0
    overflowed: bool = False
    finish_reason: str | None = None
    error: str | None = None
    skipped_events: int = 0


def event_object(data: str, stats: ResponseStats, logger: logging.Logger) -> dict[str, Any] | None:
    """An upstream event's ``data`` as the JSON object it must be; None when it is not one,
    which is counted in ``stats`` and logged (a pipeline skips it)."""
    value = json_object(data)
    if value is None:
        stats.skipped_events += 1
        logger.warning("skipped an upstream event that is not a JSON object: %.200r", data)
    return value


class _NativeCall:
    __slots__ = ("name", "parts", "done", "out_index")

    def __init__(self) -> None:
        self.name = ""
        self.parts: list[str] = []
        self.done = False
        self.out_index: int | None = None


class _Choice:
    __slots__ = (
        "index",
        "rescuer",
        "ledger",
        "native",
        "last_native",
        "next_call",
        "finished",
        "call_name",
        "call_parts",
        "tail",
        "overflow_logged",
    )

    def __init__(self, index: int, rescuer: RescuerLike | None) -> None:
        self.index = index
        self.rescuer = rescuer
        self.ledger = CallLedger()
        self.native: dict[int, _NativeCall] = {}
        self.last_native: int | None = None
        self.next_call = 0  # calls delivered so far; the next call's output index
        self.finished = False
        self.call_name: str | None = None  # a rescued call being assembled
        self.call_parts: list[str] = []
        self.tail = ""  # last character of the content sent (where XML starts on its own line)
        self.overflow_logged = False


class StreamPipeline:
    """The state of one streamed response."""

    def __init__(
        self,
        *,
        tools: Sequence[ToolSpec],
        xml_client: bool,
        include_usage: bool,
        request_model: str,
        buffer_cap: int = 65536,
        completion_id: str | None = None,
        created: int | None = None,
        rescuer_factory: RescuerFactory = default_rescuer,
        xml_writer: Callable[[str, str], str] = call_to_xml,
    ) -> None:
        self.tools = tuple(tools)
        self._rescuer_factory = rescuer_factory
        self._xml_writer = xml_writer  # a call as the XML an XML-reading client parses
        self.xml_client = xml_client
        self.include_usage = include_usage
        self.request_model = request_model
        self.buffer_cap = buffer_cap
        self.stats = ResponseStats()
        self.closed = False
        self.answered = False  # content or a call was written (the relay sends the first at once)
        self._completion_id = completion_id
        self._created = created
        self._emitter: ChunkEmitter | None = None
        self._choices: dict[int, _Choice] = {}
        self._usage: Mapping[str, Any] | None = None
        self._frame: _Frame | None = None
        self._frame_lessons = 0

    # ------------------------------------------------------------------ input

    def feed_data(self, data: str) -> str:
        """One SSE ``data`` payload: a JSON chunk, or ``[DONE]``."""
        if self.closed:
            return ""
        frame = self._frame
        if frame is not None and data.startswith(frame.prefix) and data.endswith(frame.suffix) and len(data) > frame.size:
            # Same envelope as a chunk seen before: only the delta between needs parsing.
            raw = data[len(frame.prefix) : len(data) - len(frame.suffix)]
            if raw.startswith('{"content":"') and raw.endswith('"}'):
                # The commonest delta, a plain string, needs no parsing either.
                text = raw[12:-2]
                if is_plain(text):
                    choice = self._choices.get(frame.choice)
                    if choice is not None and not choice.finished:
                        return self._content(choice, text)
            try:
                delta = json.loads(raw)
            except ValueError:
                delta = None
            if isinstance(delta, dict):
                return self.feed({"choices": [{"index": frame.choice, "delta": delta}]})
        if data.strip() == "[DONE]":
            return self.close()
        chunk = event_object(data, self.stats, log)
        if chunk is None:
            return ""
        out = self.feed(chunk)
        if frame is None or not data.startswith(frame.prefix):
            self._learn_frame(data, chunk)
        return out

    def _learn_frame(self, data: str, chunk: dict[str, Any]) -> None:
        """Remember the text around the delta of a plain one-choice chunk, so that later
        chunks with the same envelope need only their delta parsed (``_Frame``)."""
        if self._frame_lessons >= _FRAME_LESSONS:
            return
        self._frame_lessons += 1
        frame = _Frame.learn(data, chunk)
        if frame is not None:
            self._frame = frame

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """One parsed upstream chunk; returns the SSE text to send now (maybe empty)."""
        if self.closed:
            return ""
        choices = chunk.get("choices")
        if ("error" in chunk and not choices) or chunk.get("object") == "error":
            error = as_openai_error(chunk, fallback_message="upstream reported an error", fallback_code=None)
            return self.fail(error["error"])
        out: list[str] = []
        emitter = self._emitter or self._start(chunk.get("model"))
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = usage
        if not isinstance(choices, list):
            return ""
        for data in choices:
            if not isinstance(data, Mapping):
                continue
            ci = data.get("index", 0)
            if not isinstance(ci, int) or isinstance(ci, bool):
                ci = 0
            choice = self._choices.get(ci) or self._open_choice(ci, emitter, out)
            delta = data.get("delta")
            reason = data.get("finish_reason")
            if choice.finished:
                if isinstance(delta, Mapping) and (delta.get("content") or delta.get("tool_calls")):
                    log.warning("dropped upstream output after choice %d finished", ci)
                continue
            if isinstance(delta, Mapping):
                text = delta.get("content")
                if isinstance(text, str) and text:
                    out.append(self._content(choice, text))
                calls = delta.get("tool_calls")
                if isinstance(calls, Mapping):  # one call object instead of a list (TGI)
                    calls = [calls]
                if isinstance(calls, list) and calls:
                    self._native_deltas(choice, calls, out)
            if isinstance(reason, str) and reason:
                self._finish(choice, reason, out)
        return "".join(out)

    def close(self) -> str:
        """The upstream ended normally (``[DONE]``, or the end of the body)."""
        if self.closed:
            return ""
        out: list[str] = []
        emitter = self._emitter or self._start(None)
        if not self._choices:
            self._open_choice(0, emitter, out)
        for choice in self._choices.values():
            if not choice.finished:
                self._finish(choice, None, out)
        if self.include_usage:
            out.append(emitter.usage(clean_usage(self._usage or ZERO_USAGE)))
        out.append(DONE)
        self.closed = True
        return "".join(out)

    def fail(self, error: Mapping[str, Any]) -> str:
        """The upstream failed mid-stream: flush what the rescuer holds, then the error and ``[DONE]``.

        When every choice already finished, the answer is complete and ends normally.
        """
        if self.closed:
            return ""
        if self._choices and all(c.finished for c in self._choices.values()):
            log.warning("upstream failed after the answer was complete (%s); ended normally", error.get("message"))
            return self.close()
        out: list[str] = []
        for choice in self._choices.values():
            if not choice.finished:
                self._end_choice(choice, out, complete_natives=False)
        body = {
            "message": str(error.get("message") or "upstream error"),
            "type": error.get("type") if isinstance(error.get("type"), str) else "upstream_error",
            "param": error.get("param"),
            "code": error.get("code"),
        }
        self.stats.error = body["message"]
        out.append(error_event(body))
        out.append(DONE)
        self.closed = True
        return "".join(out)

    @property
    def model(self) -> str:
        return self._emitter.model if self._emitter is not None else self.request_model

    # ------------------------------------------------------------------ state

    def _start(self, model: Any) -> ChunkEmitter:
        name = model if isinstance(model, str) and model else self.request_model
        self._emitter = ChunkEmitter(name, completion_id=self._completion_id, created=self._created)
        return self._emitter

    def _open_choice(self, index: int, emitter: ChunkEmitter, out: list[str]) -> _Choice:
        rescuer = self._rescuer_factory(self.tools, self.buffer_cap) if self.tools else None
        choice = self._choices[index] = _Choice(index, rescuer)
        out.append(emitter.role(index))
        return choice

    def _content(self, choice: _Choice, text: str) -> str:
        """The output for content text of an open choice."""
        if not text:
            return ""
        out: list[str] = []
        if choice.rescuer is None:
            self._text(choice, text, out)
        else:
            self._events(choice, choice.rescuer.feed(text), out)
        return out[0] if len(out) == 1 else "".join(out)

    def _text(self, choice: _Choice, text: str, out: list[str]) -> None:
        assert self._emitter is not None
        out.append(self._emitter.content(text, choice.index))
        choice.tail = text[-1]
        self.answered = True

    def _events(self, choice: _Choice, events: Sequence[Event], out: list[str]) -> None:
        text: list[str] = []
        for event in events:
            if isinstance(event, str):
                text.append(event)
            elif isinstance(event, ArgumentsDelta):
                choice.call_parts.append(event.fragment)
            elif isinstance(event, ToolCallStart):
                choice.call_name = event.name
                choice.call_parts = []
            elif isinstance(event, ToolCallEnd):
                if text:
                    self._flush_text(choice, text, out)
                name, arguments = choice.call_name, "".join(choice.call_parts)
                choice.call_name, choice.call_parts = None, []
                if name is not None:
                    self._rescued_call(choice, name, arguments, out)
        if text:
            self._flush_text(choice, text, out)
        rescuer = choice.rescuer
        if rescuer is not None and rescuer.overflowed and not choice.overflow_logged:
            choice.overflow_logged = True
            self.stats.overflowed = True
            log.warning(
                "rescue buffer cap (%d characters) reached in choice %d: held text was sent as text",
                self.buffer_cap,
                choice.index,
            )

    def _flush_text(self, choice: _Choice, text: list[str], out: list[str]) -> None:
        joined = "".join(text)
        text.clear()
        if joined:
            self._text(choice, joined, out)

    def _rescued_call(self, choice: _Choice, name: str, arguments: str, out: list[str]) -> None:
        arguments = arguments if arguments.strip() else "{}"
        if not choice.ledger.admit_rescued(name, arguments):
            self.stats.duplicates += 1
            log.info("dropped rescued call %s: the same call already came natively", name)
            return
        self.stats.rescued += 1
        self._deliver(choice, name, arguments, out)

    def _native_deltas(self, choice: _Choice, deltas: list[Any], out: list[str]) -> None:
        for delta in deltas:
            if not isinstance(delta, Mapping):
                continue
            function = delta.get("function")
            if not isinstance(function, Mapping):
                function = {}
            index = delta.get("index")
            if not isinstance(index, int) or isinstance(index, bool):
                index = self._unnumbered(choice, delta, function)
            call = choice.native.get(index)
            if call is None:
                self._complete_natives(choice, out)  # a new call starts: the earlier ones are whole
                call = choice.native[index] = _NativeCall()
            choice.last_native = index
            fragment = function.get("arguments")
            if isinstance(fragment, Mapping):
                fragment = dumps(fragment)
            if call.done:
                self._late_fragment(choice, call, fragment, out)
                continue
            name = function.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            if isinstance(fragment, str) and fragment:
                call.parts.append(fragment)

    @staticmethod
    def _unnumbered(choice: _Choice, delta: Mapping[str, Any], function: Mapping[str, Any]) -> int:
        """The index of a call delta without one (Ollama): a delta that names a call (an id or a
        name) after a named call starts the next call; any other continues the last one."""
        last = choice.last_native
        if last is None:
            return 0
        names = bool(delta.get("id")) or bool(function.get("name"))
        return max(choice.native) + 1 if names and choice.native[last].name else last

    def _late_fragment(self, choice: _Choice, call: _NativeCall, fragment: Any, out: list[str]) -> None:
        """Arguments for a native call already delivered (an upstream interleaving calls)."""
        if not isinstance(fragment, str) or not fragment:
            return
        if call.out_index is not None and not self.xml_client and self._emitter is not None:
            log.warning("upstream continued native call %s after another call started", call.name)
            out.append(self._emitter.tool_arguments(call.out_index, fragment, choice.index))
        else:
            log.warning("dropped late arguments for native call %s: %.200r", call.name, fragment)

    def _complete_natives(self, choice: _Choice, out: list[str]) -> None:
        for call in choice.native.values():
            if call.done:
                continue
            call.done = True
            if not call.name:
                log.warning("dropped a native tool call without a name (arguments %.200r)", "".join(call.parts))
                continue
            arguments = "".join(call.parts)
            arguments = arguments if arguments.strip() else "{}"
            if not choice.ledger.admit_native(call.name, arguments):
                self.stats.duplicates += 1
                log.info("dropped native call %s: the same call was already rescued from the text", call.name)
                continue
            self.stats.native += 1
            call.out_index = self._deliver(choice, call.name, arguments, out)

    def _deliver(self, choice: _Choice, name: str, arguments: str, out: list[str]) -> int | None:
        """Send one whole call; returns its output index (None when written as XML)."""
        emitter = self._emitter
        assert emitter is not None
        choice.next_call += 1
        if self.xml_client:
            xml = self._xml_writer(name, arguments)
            self._text(choice, xml if choice.tail in ("", "\n") else "\n" + xml, out)
            return None
        index = choice.next_call - 1
        self.answered = True
        out.append(emitter.tool_start(index, new_call_id(), name, choice.index))
        out.append(emitter.tool_arguments(index, arguments, choice.index))
        return index

    def _end_choice(self, choice: _Choice, out: list[str], *, complete_natives: bool) -> None:
        if choice.rescuer is not None:
            self._events(choice, choice.rescuer.finish(), out)
        if choice.call_name is not None:
            log.warning("dropped rescued call %s: its end never came", choice.call_name)
            choice.call_name, choice.call_parts = None, []
        if complete_natives:
            self._complete_natives(choice, out)
        else:
            for call in choice.native.values():
                if not call.done:
                    call.done = True
                    log.warning("dropped native call %s: the upstream failed before it was complete", call.name)

    def _finish(self, choice: _Choice, upstream_reason: str | None, out: list[str]) -> None:
        assert self._emitter is not None
        self._end_choice(choice, out, complete_natives=True)
        choice.finished = True
        reason = final_finish_reason(upstream_reason, choice.next_call, xml_client=self.xml_client)
        if choice.index == 0:
            self.stats.finish_reason = reason
        out.append(self._emitter.finish(reason, choice.index))
