"""Turning raw text values into JSON values.

XML-style families write every parameter as bare text; the client wants typed JSON
arguments. The declared schema decides where it can; where it cannot, the rule
leaked-call rescuers settled on (Kiro-Go PR #114) applies: literals become their type, any
other text stays exactly as written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

_INTEGER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)")
_FLOAT: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)")
_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
_NOT_DECODED: Final = object()


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Built once: ``json.loads``/``json.dumps`` with options build a new coder per call.
_DECODER: Final = json.JSONDecoder(strict=False, parse_constant=_no_constants)
_SCAN_ONCE: Final[Callable[[str, int], tuple[Any, int]]] = _DECODER.scan_once  # type: ignore[attr-defined]
"""The decoder's scanner: one JSON value from an index, and the index after it."""
_BLANK_RUN: Final = re.compile(r"[ \t\n\r]*").match  # what ``json`` skips around a value
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads_json(text: str) -> Any:
    """Decode JSON, rejecting NaN/Infinity (no client can take them back).

    Raw control characters inside strings are tolerated: models write real newlines
    in long string values.
    """
    # ``_DECODER.decode`` written out: its C scanner called directly, without the two
    # Python-level frames of ``decode`` and ``raw_decode`` (which the compiled parser would
    # otherwise run as interpreted code for every call it reads), with the same answers.
    try:
        value, end = _SCAN_ONCE(text, _BLANK_RUN(text, 0).end())  # type: ignore[union-attr]
    except StopIteration as stop:
        raise json.JSONDecodeError("Expecting value", text, stop.value) from None
    except RecursionError as exc:  # absurdly deep nesting is bad input, not a crash
        raise ValueError("JSON nested too deeply") from exc
    end = _BLANK_RUN(text, end).end()  # type: ignore[union-attr]
    if end != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


# ``JSONEncoder.encode`` builds its C encoder anew on every call; one built once, with no
# cycle check (a cycle ends in RecursionError, answered alike), writes the same text in a
# third of the time. Every rescued call's arguments go through here.
_MAKE_C_ENCODER: Final[Callable[..., Callable[[Any, int], Iterable[str]]] | None] = getattr(json.encoder, "c_make_encoder", None)
_C_ENCODER: Final = (
    _MAKE_C_ENCODER(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    if _MAKE_C_ENCODER is not None
    else None
)


def compact_json(value: Any) -> str | None:
    """The one-line JSON text of a value, or None if it has no JSON form."""
    try:
        if _C_ENCODER is not None:
            return "".join(_C_ENCODER(value, 0))
        return _ENCODER.encode(value)  # pragma: no cover - Pythons without the C accelerator
    except (TypeError, ValueError, RecursionError):
        return None


def _decode(stripped: str) -> Any:
    try:
        return loads_json(stripped)
    except ValueError:
        return _NOT_DECODED


def _as_type(raw: str, wanted: str) -> Any:
    """``raw`` as a value of JSON Schema type ``wanted``, or _NOT_DECODED."""
    if wanted == "string":
        return raw
    value: Any = _decode(raw.strip())
    if value is _NOT_DECODED:
        return _NOT_DECODED
    if wanted == "integer":
        if isinstance(value, bool):
            return _NOT_DECODED
        if isinstance(value, int):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        return _NOT_DECODED
    if wanted == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return _NOT_DECODED
        return value if not isinstance(value, float) or math.isfinite(value) else _NOT_DECODED
    if wanted == "boolean":
        return value if isinstance(value, bool) else _NOT_DECODED
    if wanted == "null":
        return value if value is None else _NOT_DECODED
    if wanted == "object":
        return value if isinstance(value, dict) and compact_json(value) is not None else _NOT_DECODED
    if wanted == "array":
        return value if isinstance(value, list) and compact_json(value) is not None else _NOT_DECODED
    return _NOT_DECODED


def schema_types(schema: Mapping[str, Any] | None) -> list[str]:
    """The types a schema allows, in the order written (``type`` lists, then anyOf/oneOf)."""
    if schema is None:
        return []
    out: list[str] = []
    declared = schema.get("type")
    if isinstance(declared, str):
        out.append(declared)
    elif isinstance(declared, list):
        out.extend(t for t in declared if isinstance(t, str))
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            for option in options:
                if isinstance(option, Mapping):
                    out.extend(schema_types(option))
    return out


def untyped_value(raw: str) -> Any:
    """Kiro-Go PR #114 rule: bool/int/float/null literals are typed, all else is kept verbatim."""
    stripped = raw.strip()
    if stripped in _LITERALS:
        return _LITERALS[stripped]
    if _INTEGER.fullmatch(stripped):
        return int(stripped)
    if _FLOAT.fullmatch(stripped):
        number = float(stripped)
        if math.isfinite(number):
            return number
    return raw


def typed_value(raw: str, schema: Mapping[str, Any] | None) -> Any:
    """A raw parameter text as the JSON value its schema asks for.

    Each allowed type is tried in order; ``string`` always succeeds with the raw text.
    A value that fits none of them is kept as the raw string, so nothing is invented.
    """
    types = schema_types(schema)
    if not types:
        return untyped_value(raw)
    for wanted in types:
        value = _as_type(raw, wanted)
        if value is not _NOT_DECODED:
            return value
    return raw
