"""Tools with generated JSON Schemas, and arguments that satisfy them.

The values lean towards what parsers get wrong: strings that read as another JSON
type (``"42"``, ``"true"``, ``"null"``, ``"[1]"``), empty strings, numbers at the edge
of what a double holds exactly. Strings stay inside what every text format can carry
unambiguously (no ``<``, ``>``, ``&`` or backtick, no white space at either end), so a
value that a format cannot write never becomes a false alarm.

The schema is drawn first and the values from it (not from ``hypothesis-jsonschema``):
the weighting towards confusable values and the format-safe alphabet are the point,
and the schema grammar here is small and fully known.

Every strategy is built once and reused (``functools.cache``): hypothesis validates a
strategy object the first time it draws from it, and a fresh nest of them per example
cost more than playing the example.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from typing import Any

from hypothesis import strategies as st

JsonSchema = dict[str, Any]

# Strings that read as another JSON type or as markup-free edge cases.
CONFUSABLE: tuple[str, ...] = (
    "42", "-7", "0042", "3.14", "1e5", "true", "false", "null", "[1]", "[]", "{}", '{"a": 1}', "", "0",
    "None", "NaN", '"quoted"', "9007199254740993",
)
# Numbers where a lossy re-encoding shows: the edges of exact doubles, exponents, zero.
EDGE_INTEGERS: tuple[int, ...] = (0, -1, 1, 2**31, -(2**31), 2**53 - 1, -(2**53 - 1), 10**15)
EDGE_NUMBERS: tuple[float, ...] = (0.5, -2.5, 3.0, 1e300, -1e-300, 1.7976931348623157e308, 5e-324, 0.1)

# Names a format reserves for its own structure, never used as a parameter name.
RESERVED = frozenset({"name", "arguments", "parameters", "tool", "function", "type", "id", "input"})
TOOL_NAMES: tuple[str, ...] = (
    "get_weather", "read_file", "run_tests", "search_docs", "set_env", "lookup", "edit_lines", "send_mail",
)
_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_SAFE_CHARS = _WORD_CHARS + " .,:;!?-_/()[]{}'\"\\#%*+=@^|~$" + "éßøç日本語中文한국어" + "😀🚀👍" + "\n"


@cache
def param_names() -> st.SearchStrategy[str]:
    """``[a-z][a-z0-9_]{0,9}``, not a reserved name (built from characters: a regex strategy
    costs more per draw than the rest of a case)."""
    head = st.sampled_from("abcdefghijklmnopqrstuvwxyz")
    tail = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789_"), max_size=9)
    return st.builds(str.__add__, head, tail).filter(lambda n: n not in RESERVED)


@cache
def _plain_strings() -> st.SearchStrategy[str]:
    """Text without white space at either end (XML-style formats may trim it)."""
    return st.text(st.sampled_from(_SAFE_CHARS), min_size=1, max_size=24).map(str.strip).filter(bool)


@cache
def strings() -> st.SearchStrategy[str]:
    """Two in three strings are confusable ones."""
    return st.one_of(st.sampled_from(CONFUSABLE), st.sampled_from(CONFUSABLE), _plain_strings())


@cache
def integers() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(EDGE_INTEGERS), st.integers(-1000, 1000))


@cache
def numbers() -> st.SearchStrategy[float | int]:
    return st.one_of(st.sampled_from(EDGE_NUMBERS), st.floats(allow_nan=False, allow_infinity=False), integers())


@cache
def leaf_schemas() -> st.SearchStrategy[JsonSchema]:
    enum = st.lists(strings(), min_size=1, max_size=4, unique=True).map(lambda e: {"type": "string", "enum": e})
    return st.one_of(
        st.sampled_from([{"type": t} for t in ("string", "string", "integer", "number", "boolean", "null")]), enum
    )


@cache
def object_schemas(depth: int = 2, max_properties: int = 4) -> st.SearchStrategy[JsonSchema]:
    """An object schema; its properties nest objects and arrays down to ``depth``."""
    inner = leaf_schemas() if depth <= 0 else st.one_of(
        leaf_schemas(), leaf_schemas().map(lambda s: {"type": "array", "items": s}),
        object_schemas(depth - 1, 3), object_schemas(depth - 1, 2).map(lambda s: {"type": "array", "items": s}),
    )
    return _object_schema(st.dictionaries(param_names(), inner, max_size=max_properties))


@st.composite
def _object_schema(draw: st.DrawFn, of_properties: st.SearchStrategy[dict[str, JsonSchema]]) -> JsonSchema:
    properties = draw(of_properties)
    required = [k for k in properties if draw(st.booleans())]
    schema: JsonSchema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def values(schema: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid under ``schema`` (one of the schemas drawn above)."""
    return _values(json.dumps(schema))  # its properties keep their order


@cache
def _values(key: str) -> st.SearchStrategy[Any]:
    schema = json.loads(key)
    if "enum" in schema:
        return st.sampled_from(list(schema["enum"]))
    kind = schema.get("type")
    if kind == "string":
        return strings()
    if kind == "integer":
        return integers()
    if kind == "number":
        return numbers()
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(values(schema["items"]), max_size=3)
    return objects(schema)


@st.composite
def objects(draw: st.DrawFn, schema: Mapping[str, Any]) -> dict[str, Any]:
    """An object holding every required property and some of the optional ones."""
    required = set(schema.get("required") or ())
    out: dict[str, Any] = {}
    for key, sub in (schema.get("properties") or {}).items():
        if key in required or draw(st.booleans()):
            out[key] = draw(values(sub))
    return out
