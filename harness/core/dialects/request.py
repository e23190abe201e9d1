"""A request body of any wire dialect, read as what it asks: the neutral request.

Each dialect's request shape (``WireDialect.requests.read``) reads a body of its API into the same
``NeutralRequest``: the system text, the conversation as turns (text, the tool calls an
assistant made, the tool results a user turn carries, with the call id each answers),
the tools offered with their parameter schemas, ``tool_choice`` as an intent, and the
stream flag. What the request of one API says can then be compared with what a
translating proxy sent in another. Pure, and total: a body of any shape reads as
something (an odd part is left out, never raised on), since a client's request may be
broken on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["user", "assistant"]
# What the client asked of tool use: the API's default (``auto``), no tool, some tool, one
# named tool, nothing said at all, or a form of no other API (``other``, never compared).
Intent = Literal["auto", "none", "required", "named", "absent", "other"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call an assistant turn made (one without a name is not read as a call): ``arguments``
    parsed from JSON (an empty string as ``{}``), or the text itself when it is not JSON."""

    id: str | None
    name: str
    arguments: Any


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's answer: the id of the call it answers, and its text as the parts it was
    written in (a translator may join them, so they are kept apart)."""

    call_id: str | None
    texts: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of the conversation; consecutive turns of one role are one turn (as the
    Messages API alternates them), and tool results are carried by user turns."""

    role: Role
    texts: tuple[str, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()

    @property
    def text(self) -> str:
        return "\n".join(self.texts)


@dataclass(frozen=True, slots=True)
class Tool:
    """A function tool offered to the model; ``parameters`` None when none were given."""

    name: str
    parameters: Mapping[str, Any] | None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ChoiceIntent:
    intent: Intent
    name: str | None = None  # the tool, for ``named``


ABSENT = ChoiceIntent("absent")


@dataclass(frozen=True, slots=True)
class NeutralRequest:
    system: tuple[str, ...] = ()  # the system (and developer) texts, in order, wherever the request says them
    turns: tuple[Turn, ...] = ()
    tools: tuple[Tool, ...] = ()
    tool_choice: ChoiceIntent = ABSENT
    stream: bool = False

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every call of the conversation, in order."""
        return tuple(call for turn in self.turns for call in turn.calls)

    @property
    def results(self) -> tuple[ToolResult, ...]:
        """Every tool result of the conversation, in order."""
        return tuple(result for turn in self.turns for result in turn.results)


# --------------------------------------------------------------------------- shared by the readers


def mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> list[Mapping[str, Any]]:
    """The mappings of a list (anything else in it, or a non-list, is left out)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def texts(content: Any) -> tuple[str, ...]:
    """The texts of a content: a string, or the ``text`` of each part of a list (text,
    input_text, output_text parts alike; images and other parts carry none)."""
    if isinstance(content, str):
        return (content,) if content else ()
    return tuple(t for part in items(content) if isinstance(t := part.get("text"), str) and t)


def arguments(value: Any) -> Any:
    """A call's arguments as data: a JSON string parsed (empty means no arguments), an
    object as it is; text that is not JSON stays text."""
    if not isinstance(value, str):
        return {} if value is None else value
    if not value.strip():
        return {}
    try:
        return json.loads(value)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than a reader follows
        return value


def stream_flag(body: Mapping[str, Any]) -> bool:
    return body.get("stream") is True


class Conversation:
    """Builds turns, folding consecutive turns of one role into one."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def add(self, role: Role, texts: Sequence[str] = (), calls: Sequence[ToolCall] = (),
            results: Sequence[ToolResult] = ()) -> None:
        if not (texts or calls or results):
            return
        if self.turns and self.turns[-1].role == role:
            last = self.turns[-1]
            self.turns[-1] = Turn(role, (*last.texts, *texts), (*last.calls, *calls), (*last.results, *results))
        else:
            self.turns.append(Turn(role, tuple(texts), tuple(calls), tuple(results)))


def tool_name(tool: Any) -> str | None:
    """The name of an OpenAI (``{function: {name}}``) or Anthropic (``{name}``) tool."""
    if not isinstance(tool, Mapping):
        return None
    fn = tool.get("function")
    name = fn.get("name") if isinstance(fn, Mapping) else tool.get("name")
    return name if isinstance(name, str) and name else None
