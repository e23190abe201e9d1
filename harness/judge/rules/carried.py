"""What a proxy's request upstream must carry of the client's, read through both
dialects' neutral readings (``harness.core.dialects.request``), so that the same checks judge
a proxy that relays, one that translates between two APIs, and one that rewrites ids or
schemas in ways the backend cannot tell apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.core.dialects import NeutralRequest, WireDialect, posted_to
from harness.core.dialects.request import ChoiceIntent, Tool, ToolCall, ToolResult
from harness.judge.compare import json_equal, render
from harness.judge.rules.context import Context

W = TypeVar("W")
G = TypeVar("G")


@dataclass(frozen=True)
class Readings:
    """The client's request and the last request upstream, each read in its own dialect."""

    client: NeutralRequest
    upstream: NeutralRequest
    client_dialect: WireDialect
    upstream_dialect: WireDialect

    @property
    def pair(self) -> str:
        return f"{self.client_dialect.title} → {self.upstream_dialect.title}"


def _read(ctx: Context) -> Readings | None:
    ex = ctx.exchange
    client = ctx.scenario.client
    if not ex.upstream or client.raw_body is not None or client.truncate_body:
        return None
    last = ex.upstream[-1]
    upstream = posted_to(last.path)
    if upstream is None or not isinstance(last.body, Mapping) or not isinstance(ex.request_body, Mapping):
        return None
    own = ctx.dialect
    return Readings(own.requests.read(ex.request_body), upstream.requests.read(last.body), own, upstream)


def readings(ctx: Context) -> Readings | None:
    """Both readings, once per exchange; None when there is nothing to compare: no JSON
    request reached an endpoint of a known API, or the client sent bytes of its own."""
    return ctx.derived(_read)


# --------------------------------------------------------------------------- parameter schemas

# Keywords that say nothing about which arguments are valid, the ones a translator adds or drops
# to suit an API (``additionalProperties: false`` for strict mode, ``$schema``), and the value
# constraints some APIs refuse and translators drop for them (``format``, ``minimum``, ...): what
# is left is the shape of the arguments, their properties, types, ``required`` and ``enum``.
_IGNORED = frozenset({"description", "title", "examples", "default", "$schema", "$comment", "$id", "deprecated",
                      "readOnly", "writeOnly", "additionalProperties", "strict",
                      "format", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
                      "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties",
                      "maxProperties"})
# Keywords whose value maps names to schemas (the names are data, not keywords).
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
# Keywords whose value is data, compared as it is.
_LITERAL = frozenset({"enum", "const"})


def schema_shape(schema: Any) -> Any:
    """A JSON Schema reduced to the shape of the arguments it describes: annotations,
    ``additionalProperties``, value constraints, empty ``properties`` and ``required`` taken
    out; ``required`` as a sorted set, and ``type: object`` where there are properties."""
    if isinstance(schema, list):
        return [schema_shape(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _IGNORED:
            continue
        if key in _NAMED and isinstance(value, Mapping):
            value = {name: schema_shape(sub) for name, sub in value.items()}
        elif key == "required" and isinstance(value, list):
            value = sorted({str(v) for v in value})
        elif key not in _LITERAL:
            value = schema_shape(value)
        if value in ({}, []) and key in (*_NAMED, "required"):
            continue
        out[key] = value
    if "properties" in out:
        out.setdefault("type", "object")  # what a schema with properties describes, said or not
    return out


def parameters_shape(tool: Tool) -> dict[str, Any]:
    """A tool's parameters as ``schema_shape`` reads them; no parameters are an object with none."""
    shape = schema_shape(tool.parameters or {})
    return {"type": "object", **shape} if isinstance(shape, dict) else {"type": "object"}


def schema_differences(client: Tool, upstream: Tool) -> list[str]:
    """How the upstream's parameters of a tool differ from the client's, as phrases (none: the same)."""
    want, got = parameters_shape(client), parameters_shape(upstream)
    if json_equal(want, got):
        return []
    found: list[str] = []
    want_props, got_props = want.get("properties", {}), got.get("properties", {})
    if isinstance(want_props, Mapping) and isinstance(got_props, Mapping):
        missing = [p for p in want_props if p not in got_props]
        extra = [p for p in got_props if p not in want_props]
        if missing:
            found.append(f"parameter(s) {', '.join(missing)} missing")
        if extra:
            found.append(f"parameter(s) {', '.join(extra)} added")
        found += [f"parameter {p}: {render(want_props[p], 100)} became {render(got_props[p], 100)}"
                  for p in want_props if p in got_props and not json_equal(want_props[p], got_props[p])]
    if not json_equal(want.get("required", []), got.get("required", [])):
        found.append(f"required {render(want.get('required', []))} became {render(got.get('required', []))}")
    rest = [k for k in {*want, *got} - {"properties", "required"} if not json_equal(want.get(k), got.get(k))]
    found += [f"{k}: {render(want.get(k), 80)} became {render(got.get(k), 80)}" for k in sorted(rest)]
    return found


def first_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    """The tools by name (the first of a name, should one repeat)."""
    out: dict[str, Tool] = {}
    for tool in tools:
        out.setdefault(tool.name, tool)
    return out


# --------------------------------------------------------------------------- the conversation


def call_text(call: ToolCall) -> str:
    return f"{call.name}({render(call.arguments, 100)})"


def namesakes(call: ToolCall, calls: Sequence[ToolCall]) -> str:
    """The calls of the same name, said after a missing call (``; upstream has ...``), or nothing."""
    named = [call_text(c) for c in calls if c.name == call.name]
    return f"; upstream has {', '.join(named)}" if named else ""


def same_call(a: ToolCall, b: ToolCall) -> bool:
    """Same name and, where the first's arguments are an object, semantically equal ones
    (arguments that are not an object cannot be said in every API, so only the name counts)."""
    return a.name == b.name and (not isinstance(a.arguments, Mapping) or json_equal(a.arguments, b.arguments))


def _folded(text: str) -> str:
    return " ".join(text.split())


def in_order(parts: Sequence[str], text: str) -> bool:
    """Whether ``text`` holds each of ``parts``, in order, white space folded (a translator
    may join parts with any separator, trim them, and add text around them)."""
    at, text = 0, _folded(text)
    for part in map(_folded, parts):
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def carries(upstream: ToolResult, client: ToolResult) -> bool:
    """Whether a result upstream holds the client's result text: as text, or escaped inside
    JSON text (a translator that passes a result's list of blocks on as its JSON)."""
    forms = [client.texts, *(tuple(json.dumps(part, ensure_ascii=escape)[1:-1] for part in client.texts)
                             for escape in (False, True))]
    return any(in_order(parts, upstream.text) for parts in forms)


def answered_calls(request: NeutralRequest) -> Iterator[tuple[ToolResult, ToolCall]]:
    """Each tool result of a conversation with the call it answers: a call of an earlier
    turn with its id (results that answer no call are left out)."""
    calls: dict[str, ToolCall] = {}
    for turn in request.turns:
        for result in turn.results:
            if result.call_id is not None and result.call_id in calls:
                yield result, calls[result.call_id]
        for call in turn.calls:
            if call.id is not None:
                calls.setdefault(call.id, call)


def find_in_order(wanted: Sequence[W], given: Sequence[G], match: Callable[[W, G], bool]) -> list[tuple[W, G | None]]:
    """Each wanted item with the given item it matched (``match(wanted, given)``), matching
    in order: an item is looked for after the previous match; None when it is not there."""
    out: list[tuple[W, G | None]] = []
    at = 0
    for item in wanted:
        index = next((i for i in range(at, len(given)) if match(item, given[i])), None)
        if index is None:
            out.append((item, None))
        else:
            out.append((item, given[index]))
            at = index + 1
    return out


def system_places(request: NeutralRequest, *, moved: bool) -> list[str]:
    """Where a request holds system text: its system texts, and (``moved``: for a proxy that
    moves system text to the user) its first user turn too."""
    places = ["\n".join(request.system)]
    if moved:
        places += [t.text for t in request.turns if t.role == "user"][:1]
    return places


# --------------------------------------------------------------------------- tool_choice

_WORDS = {"auto": "auto", "none": "none", "required": "required (Anthropic any)", "absent": "left unsaid"}


def intent_text(choice: ChoiceIntent) -> str:
    return f"the tool {choice.name}" if choice.intent == "named" else _WORDS.get(choice.intent, "another form")


def same_intent(client: ChoiceIntent, upstream: ChoiceIntent) -> bool:
    """The same demand on the model: ``auto`` and nothing said are one (the APIs' default
    with tools), the others only themselves (a named tool by its name)."""
    loose = {"absent": "auto"}
    return (loose.get(client.intent, client.intent) == loose.get(upstream.intent, upstream.intent)
            and client.name == upstream.name)
