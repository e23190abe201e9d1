"""What every wire dialect is, as one object: its name, endpoint, finish vocabulary,
error types, and how a backend's native calls are written as scenario frames.

A dialect-neutral backend script (text, native calls, finish, faults) is served in any
dialect through these objects (``script.serve_as``); adding a dialect is one module
here that builds a ``WireDialect``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from harness.core.dialects.frames import Frame
from harness.core.dialects.request import NeutralRequest

# The dialect-neutral reasons an answer ends.
Finish = Literal["end", "tool", "length", "stop-sequence"]


@dataclass(frozen=True, slots=True)
class NativeCall:
    """One structured call as a backend sends it, whatever the dialect: its id (when the
    script gives one), its name, and its arguments as the JSON fragments it streams."""

    name: str
    id: str | None
    fragments: tuple[str, ...]
    delays: tuple[float | None, ...] = ()  # the start's, then each fragment's own delay, when set
    frames: int = 1  # how many frames of its own dialect carried it


class NotPortable(Exception):
    """A backend script that only makes sense in its own dialect; the message says why."""


class ErrorShape(Protocol):
    """How a dialect's API writes an error body, and reads one back."""

    def write(self, message: str, type: str) -> dict[str, Any]: ...

    def read(self, body: Any) -> str | None:
        """The message of an error body of this shape, or None when it is not one."""
        ...


class CallCodec(Protocol):
    """How a dialect writes and reads native calls as scenario frames."""

    frame_key: str  # the key of the scenario frame that carries its calls ("tool_call", "tool_use")

    def write(self, calls: Sequence[tuple[int, NativeCall]]) -> list[Frame]:
        """Frames carrying ``calls`` (each with its position among the answer's calls)."""
        ...

    def read(self, frames: Sequence[Frame]) -> list[Frame | NativeCall]:
        """The frames with their native calls gathered into ``NativeCall``s (text and raw
        frames stay as they are); ``NotPortable`` when calls interleave."""
        ...

    def whole(self, index: int, call: NativeCall) -> Frame:
        """One frame carrying all of ``call`` (its position ``index`` among the calls)."""
        ...

    def arguments(self, frames: Sequence[Frame]) -> tuple[str, ...]:
        """The arguments text of each native call ``frames`` send, in order, however the script
        writes them (a Kiro script's own ``toolUseEvent`` events too): what a proxy that relays
        calls unchanged passes on."""
        ...


def joined_arguments(items: Sequence[Frame | NativeCall]) -> tuple[str, ...]:
    """The arguments of each call among ``read()``'s items, its fragments joined."""
    return tuple("".join(item.fragments) for item in items if isinstance(item, NativeCall))


ToolChoice = Literal["auto", "any", "one"]


def tool_declaration(name: str, schema: Mapping[str, Any], description: str | None,
                     schema_key: str = "parameters", **head: Any) -> dict[str, Any]:
    """A tool declared as every API writes one, whatever its keys: ``head`` (a ``type``),
    the name, the description when there is one, then the schema under ``schema_key``."""
    tool: dict[str, Any] = {**head, "name": name}
    if description is not None:
        tool["description"] = description
    tool[schema_key] = dict(schema)
    return tool


class RequestShape(Protocol):
    """How a client of a dialect's API writes its request: where it puts a user id,
    how it declares a tool, how it says which tool to use; and how a request body of the
    API reads as a neutral request."""

    user_id_path: tuple[str, ...]  # the user-id field, outermost key first
    needs_max_tokens: bool  # whether the API rejects a request without ``max_tokens``
    tool_form: str  # how a tool is written, for a message that says so

    def tool(self, name: str, schema: Mapping[str, Any], description: str | None = None) -> dict[str, Any]:
        """A tool declaration."""
        ...

    def tool_ok(self, tool: Mapping[str, Any]) -> bool:
        """Whether ``tool`` is a tool declaration of this API, with a name."""
        ...

    def tool_choice(self, kind: ToolChoice, name: str | None = None) -> Any:
        """``tool_choice`` for: let the model choose, call some tool, call tool ``name``."""
        ...

    def read(self, body: Any) -> NeutralRequest:
        """What a request body of this API asks, dialect-neutral (``harness.core.dialects.request``):
        total, so a broken body reads as something."""
        ...


@dataclass(frozen=True, slots=True, eq=False)
class WireDialect:
    """One wire dialect (one object each: compared and hashed by identity)."""

    name: str  # how scenario files, options and reports name it
    title: str  # e.g. "OpenAI Chat Completions"
    endpoint: str  # what clients post to, below the base URL
    default_finish: str
    finish_names: Mapping[str, Finish]  # native finish/stop reason -> neutral
    error_types: Mapping[int, str]  # status -> the API's own error type
    client_error_type: str  # other 4xx
    server_error_type: str  # other 5xx
    calls: CallCodec
    errors: ErrorShape
    requests: RequestShape
    finish_field: str  # the answer field a report names its finish reason by
    stream_end: str  # what ends one of its streams, as a message quotes it
    answer_name: str  # what one of its non-streamed answers is called ("chat.completion", "Messages")
    short_name: str  # how a message names the API in one word ("chat-completions", "Messages")
    usage_names: Mapping[str, str] = field(default_factory=dict)  # neutral usage key -> native
    finish_aliases: Mapping[Finish, str] = field(default_factory=dict)  # neutral -> the nearest native reason
    pings: bool = False  # whether its streams may carry keep-alive ping events (a backend's ``ping``)
    request_id_header: str | None = None  # the header its answers carry the API's request id in
    call_id_prefix: str = "call_"  # how the API's own call ids begin
    client_header: str | None = None  # a header every client of the API sends, when it has one
    # Its sampling parameters (the request fields that tune the model's choices), when known.
    sampling: frozenset[str] | None = None
    # Whether an answer's text around its calls comes in parts of its own (Messages text
    # blocks, Responses message items), which a proxy may trim one by one.
    splits_text: bool = False
    # The ``X-Amz-Target`` that routes a ``POST /`` to it (an AWS JSON-protocol API), when it has one.
    root_target: str | None = None
    # Whether it answers every request as a stream (it has no non-streamed answer), and in which media type.
    streams_always: bool = False
    media_type: str = "text/event-stream"
    system_role: bool = True  # whether its requests carry system text of their own (Kiro's do not)
    # The error class the API's official SDK raises for a status (``sdk_error``), where one reads the
    # API's answers: clients act on the class (catch it, retry it), not on the number.
    sdk_errors: Mapping[int, str] = field(default_factory=dict)
    sdk_server_error: str | None = None  # the class of every other 5xx

    def __repr__(self) -> str:
        return f"WireDialect({self.name!r})"

    def neutral_finish(self, native: str) -> Finish | None:
        return self.finish_names.get(native)

    def native_finish(self, neutral: Finish) -> str:
        for native, meaning in self.finish_names.items():
            if meaning == neutral:
                return native
        if neutral in self.finish_aliases:
            return self.finish_aliases[neutral]
        raise NotPortable(f"{self.title} has no finish reason for {neutral!r}")

    def error_type(self, status: int) -> str:
        """The error ``type`` the API answers ``status`` with."""
        return self.error_types.get(status, self.server_error_type if status >= 500 else self.client_error_type)

    def sdk_error(self, status: int) -> str | None:
        """The error class the official SDK raises for ``status``; None for its catch-all
        (``APIStatusError``), which tells nothing about the status."""
        return self.sdk_errors.get(status, self.sdk_server_error if status >= 500 else None)

    def native_usage(self, usage: Mapping[str, Any]) -> dict[str, Any]:
        """Usage counts named as this dialect names them (input / output tokens)."""
        neutral = {"input": ("prompt_tokens", "input_tokens"), "output": ("completion_tokens", "output_tokens")}
        out: dict[str, Any] = {}
        for key, names in neutral.items():
            for name in names:
                if name in usage:
                    out[self.usage_names[key]] = usage[name]
                    break
        return out
