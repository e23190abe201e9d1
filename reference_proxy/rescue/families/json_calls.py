"""The ``{"name": ..., "arguments": {...}}`` shape shared by the JSON-bodied families."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from reference_proxy.rescue.coercion import compact_json, loads_json
from reference_proxy.rescue.family import Call
from reference_proxy.rescue.jsonscan import Watcher
from reference_proxy.rescue.toolbox import Toolbox

ARGUMENT_KEYS: Final = ("arguments", "parameters")
CALL_KEYS: Final = frozenset(("name", *ARGUMENT_KEYS))


class CallWatcher(Watcher):
    """Vetoes a call object as soon as its name is known not to be a declared tool.

    The root may be one call object or an array of them; with ``keys`` set, a call
    object holding any other key is vetoed too (for bare JSON, where prose is likelier
    than a call).
    """

    __slots__ = ("_tools", "_keys", "_name_key", "_depth")

    def __init__(self, tools: Toolbox, *, name_key: str = "name", keys: frozenset[str] | None = None) -> None:
        self._tools = tools
        self._keys = keys
        self._name_key = name_key
        self._depth = 1  # depth of the call objects' keys

    def item(self, depth: int, first_char: str) -> bool:
        if depth == 1:  # the root is an array: its items must be call objects
            self._depth = 2
            return first_char == "{"
        return True

    def key(self, depth: int, key: str) -> bool:
        return self._keys is None or depth != self._depth or key in self._keys

    def string_value(self, depth: int, key: str | None, value: str) -> bool:
        if depth == self._depth and key == self._name_key:
            return self._tools.resolve(value) is not None
        return True


def json_call(name: str, raw: Any) -> Call | None:
    """A call to ``name`` with arguments as written (an object, the JSON text of one, or
    nothing), or None when they are not an object with a JSON form."""
    if raw is None:
        return Call(name, {}, "{}")
    if isinstance(raw, str):
        if not raw.strip():
            return Call(name, {}, "{}")
        try:
            raw = loads_json(raw)
        except ValueError:
            return None
    if not isinstance(raw, dict):
        return None
    text = compact_json(raw)
    return None if text is None else Call(name, raw, text)


def call_from_object(obj: Any, tools: Toolbox) -> Call | None:
    """A call from ``{"name": declared, "arguments"|"parameters": {...}}``, else None."""
    if not isinstance(obj, dict):
        return None
    name = obj.get("name")
    if not isinstance(name, str):
        return None
    resolved = tools.resolve(name)
    if resolved is None:
        return None
    for key in ARGUMENT_KEYS:
        if key in obj:
            return json_call(resolved, obj[key])
    return json_call(resolved, None)


def calls_from_values(values: Iterable[Any], tools: Toolbox) -> tuple[Call, ...] | None:
    """Every value must be a call object or a non-empty array of them; else None."""
    calls: list[Call] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        if not items:
            return None
        for item in items:
            call = call_from_object(item, tools)
            if call is None:
                return None
            calls.append(call)
    return tuple(calls)
