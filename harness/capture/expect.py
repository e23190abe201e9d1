"""What an imported capture should give the client: the expectation the import proposes.

The reference proxy's own parsing decides it, so a proposal is what a correct proxy
delivers for the captured answer: for chat completions the calls the rescuer finds in
the text plus the native calls (a native copy of a rescued call expected once); for
Messages the answer run through the reference proxy's Messages pipeline (text blocks
rescued block by block, native tool_use blocks, de-duplicated, and the stop_reason it
reports). A person still reviews it. Without a captured request, every name the answer
puts in a call's place is offered to the parser as a tool.

Pure: a ``Capture`` in, an ``Expectation`` out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.capture.model import Capture, Dialect
from harness.core.dialects import ANTHROPIC, OPENAI
from harness.core.dialects.frames import ContentFrame, Frame, ToolCallFrame, ToolUseFrame
from reference_proxy.anthropic_message import finish_message
from reference_proxy.dedup import call_key
from reference_proxy.request_shaping import anthropic_tools
from reference_proxy.rescue import RescuedCall, ToolSpec, tools_from_request

Rescue = Callable[[str, Sequence[ToolSpec]], tuple[str, list[RescuedCall]]]
Call = tuple[str, dict[str, Any]]


def declared_tools(request: Mapping[str, Any], dialect: Dialect) -> list[ToolSpec]:
    """The tools a request of ``dialect`` declares."""
    return READINGS[dialect].declared(request)


def parser_tools(request: Mapping[str, Any], dialect: Dialect) -> list[ToolSpec]:
    """The tools text may become calls of: the declared ones, none under a ``tool_choice``
    of none (the reference proxy then offers the backend no tool, and rescues none)."""
    return READINGS[dialect].offered(request)


@dataclass
class _Native:
    """A native chat-completions call assembled from its deltas."""

    index: int
    id: str | None
    position: int  # frame number of its first delta
    name: str = ""
    arguments: str = ""


def native_calls(frames: Sequence[Frame]) -> list[_Native]:
    """Native calls in order of their first delta. A new id on an index already in use
    starts a new call (some backends number every call 0)."""
    calls: list[_Native] = []
    current: dict[int, _Native] = {}
    for position, frame in enumerate(frames):
        if not isinstance(frame, ToolCallFrame):
            continue
        call = current.get(frame.index)
        if call is None or (frame.id is not None and call.id is not None and frame.id != call.id):
            call = current[frame.index] = _Native(frame.index, frame.id, position)
            calls.append(call)
        if call.id is None:
            call.id = frame.id
        call.name += frame.name or ""
        call.arguments += frame.arguments or ""
    return calls


_NAME_HINTS = re.compile(
    r'"(?:name|tool|function)"\s*:\s*"([^"\\\s]{1,128})"|<invoke\s+name="([^"]{1,128})"|<function=([^>\s]{1,128})>'
)


def _candidate_tools(text: str, native_names: Sequence[str]) -> list[ToolSpec]:
    """Names that may be tools, for a capture without its request: the parser only
    extracts declared tools, so it is offered every name the text puts in a call's place."""
    names: dict[str, None] = {}
    for name in native_names:
        if name:
            names[name] = None
    for m in _NAME_HINTS.finditer(text):
        written = next(g for g in m.groups() if g)
        names[written.rsplit(":", 1)[-1]] = None
    return [ToolSpec(n) for n in names if n]


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"), (list, "array"), (dict, "object")
)


def inferred_tool(name: str, arguments: Mapping[str, Any] | None, dialect: Dialect = OPENAI) -> dict[str, Any]:
    """A tool definition of ``dialect`` guessed from one call's arguments."""
    properties: dict[str, Any] = {}
    for key, value in (arguments or {}).items():
        kind = next((t for cls, t in _JSON_TYPES if isinstance(value, cls)), None)
        properties[key] = {"type": kind} if kind else {}
    return dialect.requests.tool(name, {"type": "object", "properties": properties})


def _arguments(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text or "{}")
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Expectation:
    """What a correct proxy delivers for a capture, as the import proposes it."""

    calls: list[Call]
    content: str
    tools_used: list[ToolSpec]
    finish_reason: str | None  # None: the capture reports none and there is no call
    warnings: list[str] = field(default_factory=list)
    # Set when the text comes in several blocks around calls: the blocks in order, with any
    # white space between them (a faithful relay keeps the separators, another trims them).
    content_regex: str | None = None


def expectation(capture: Capture, tools: Sequence[ToolSpec] | None, rescue: Rescue) -> Expectation:
    """The proposal for ``capture``, in its dialect; ``tools`` None when the request was not captured."""
    return READINGS[capture.dialect].expect(capture, tools, rescue)


def _unusable_input(name: str, text: str) -> str:
    return (
        f"the native call {name} has arguments that are not a JSON object ({text[:60]!r}); "
        "expect.tool_calls uses {}: fix it"
    )


def _repeated(name: str) -> str:
    return f"the native call {name} repeats a call written in the text; expected once"


def chat_expectation(capture: Capture, tools: Sequence[ToolSpec] | None, rescue: Rescue) -> Expectation:
    """The calls and text a correct proxy delivers: rescued from the content frames,
    plus the native calls, each native copy of a rescued call dropped once."""
    frames = capture.frames
    text = "".join(f.content for f in frames if isinstance(f, ContentFrame))
    natives = native_calls(frames)
    offered = list(tools) if tools is not None else _candidate_tools(text, [n.name for n in natives])
    visible, rescued = rescue(text, offered)
    warnings: list[str] = []
    found: list[Call] = []
    pending: dict[Hashable, int] = {}
    for call in rescued:
        found.append((call.name, _arguments(call.arguments) or {}))
        key = call_key(call.name, call.arguments)
        pending[key] = pending.get(key, 0) + 1
    natives_out: list[Call] = []
    for native in natives:
        if not native.name:
            warnings.append(f"a native call on index {native.index} has no name; left out of expect.tool_calls")
            continue
        key = call_key(native.name, native.arguments)
        if pending.get(key, 0) > 0:
            pending[key] -= 1
            warnings.append(_repeated(native.name))
            continue
        args = _arguments(native.arguments)
        if args is None:
            warnings.append(_unusable_input(native.name, native.arguments))
        natives_out.append((native.name, args or {}))
    first_text = next(
        (i for i, f in enumerate(frames) if isinstance(f, ContentFrame) and f.content.strip()), len(frames)
    )
    first_native = natives[0].position if natives else len(frames)
    calls = natives_out + found if first_native < first_text else found + natives_out
    used_names = {name for name, _ in calls}
    used = [t for t in offered if t.name in used_names]
    finish = "tool_calls" if calls else capture.finish_reason
    return Expectation(calls, visible.strip(), used, finish, warnings)


def messages_expectation(capture: Capture, tools: Sequence[ToolSpec] | None) -> Expectation:
    """The captured answer as one ``message`` (consecutive text frames one text block, each
    tool_use frame a block), finished by the reference proxy's Messages pipeline: leaked
    calls become tool_use blocks where they stood, native copies of them are dropped,
    and the stop_reason is the one it reports."""
    frames = capture.frames
    text = "".join(f.content for f in frames if isinstance(f, ContentFrame))
    uses = [f for f in frames if isinstance(f, ToolUseFrame)]
    offered = list(tools) if tools is not None else _candidate_tools(text, [u.name for u in uses])
    warnings: list[str] = []
    blocks: list[dict[str, Any]] = []
    natives: dict[str, str] = {}  # block id given here -> tool name
    for frame in frames:
        if isinstance(frame, ContentFrame):
            if blocks and blocks[-1]["type"] == "text":
                blocks[-1]["text"] += frame.content
            else:
                blocks.append({"type": "text", "text": frame.content})
        elif isinstance(frame, ToolUseFrame):
            if not frame.name:
                warnings.append("a native tool_use block has no name; left out of expect.tool_calls")
                continue
            joined = "".join(frame.input_json)
            args = _arguments(joined)
            if args is None:
                warnings.append(_unusable_input(frame.name, joined))
            ident = f"import_native_{len(natives)}"
            natives[ident] = frame.name
            blocks.append({"type": "tool_use", "id": ident, "name": frame.name, "input": args or {}})
    message: dict[str, Any] = {"type": "message", "role": "assistant", "content": blocks,
                               "stop_reason": capture.finish_reason}
    finish_message(message, tools=offered)
    calls: list[Call] = []
    delivered: set[str] = set()
    for block in message["content"]:
        if block.get("type") == "tool_use":
            calls.append((block["name"], dict(block["input"])))
            delivered.add(block["id"])
    warnings.extend(_repeated(name) for ident, name in natives.items() if ident not in delivered)
    texts = [b["text"].strip() for b in message["content"] if b.get("type") == "text" and b["text"].strip()]
    content = "\n\n".join(texts)
    used_names = {name for name, _ in calls}
    used = [t for t in offered if t.name in used_names]
    return Expectation(calls, content, used, message["stop_reason"], warnings, content_regex=blocks_pattern(texts))


def blocks_pattern(texts: Sequence[str]) -> str | None:
    """For text in several blocks, a pattern of the blocks in order with any white space
    around and between them; None for one block (``content`` says it exactly)."""
    if len(texts) < 2:
        return None
    return r"\A\s*" + r"\s*".join(re.escape(t) for t in texts) + r"\s*\Z"


def _messages_offered(request: Mapping[str, Any]) -> list[ToolSpec]:
    """A Messages request's tools, none under ``tool_choice: {type: none}`` (as
    ``tools_from_request`` reads a chat request's ``tool_choice: "none"``)."""
    choice = request.get("tool_choice")
    return [] if isinstance(choice, Mapping) and choice.get("type") == "none" else list(anthropic_tools(request))


@dataclass(frozen=True)
class Reading:
    """How the reference proxy reads a capture of one dialect: the tools its request
    declares, the tools its text may become calls of, and the answer it proposes."""

    declared: Callable[[Mapping[str, Any]], list[ToolSpec]]
    offered: Callable[[Mapping[str, Any]], list[ToolSpec]]
    expect: Callable[[Capture, Sequence[ToolSpec] | None, Rescue], Expectation]


READINGS: Mapping[Dialect, Reading] = {
    OPENAI: Reading(tools_from_request, tools_from_request, chat_expectation),
    ANTHROPIC: Reading(lambda request: list(anthropic_tools(request)), _messages_offered,
                         lambda capture, tools, _rescue: messages_expectation(capture, tools)),
}
