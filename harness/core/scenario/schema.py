"""The scenario schema, and its errors located: file, line and field an author can act on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

import jsonschema
import jsonschema_rs

from harness.core.errors import ScenarioProblem
from harness.core.scenario.yaml_source import Lines

# --------------------------------------------------------------------------- schema


@cache
def scenario_schema() -> dict[str, Any]:
    text = resources.files("harness").joinpath("schemas/scenario.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        scenario_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


# --------------------------------------------------------------------------- schema problems


def dotted(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


@cache
def _compiled() -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(scenario_schema())


def schema_errors(data: Any) -> list[jsonschema.ValidationError]:
    """Every schema error in ``data``, ordered by path. A valid document (nearly every one a run
    loads or the mock is armed with) is told apart by the compiled validator, a hundred times
    faster; only an invalid one is walked by ``jsonschema`` for errors an author can locate.
    The two agree on the library and on its mutations (``tests/core/test_schema_fast_path.py``)."""
    try:
        if _compiled().is_valid(data):
            return []
    except ValueError:  # a value JSON has no word for (a YAML date, a non-string key): the full check says so
        pass
    return sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))


def located(
    errors: Iterable[jsonschema.ValidationError], where: str, lines: Lines, base: list[str | int]
) -> list[ScenarioProblem]:
    """Turn schema errors into problems an author can act on: unknown keys named one by
    one at their own line, missing keys at their parent's line, frames by their kind."""
    out: list[ScenarioProblem] = []
    for e in errors:
        path = [*base, *e.relative_path]
        if e.validator == "oneOf" and "frames" in path:
            out.extend(_frame_problems(e, where, lines, path))
        elif e.validator == "additionalProperties" and isinstance(e.instance, dict):
            schema = e.schema if isinstance(e.schema, dict) else {}
            allowed = sorted(schema.get("properties", {}))
            for extra in sorted(set(e.instance) - set(allowed)):
                out.append(
                    ScenarioProblem(
                        where,
                        lines.line([*path, extra], key=True),
                        dotted([*path, extra]),
                        f"unknown key '{extra}' (allowed: {', '.join(allowed)})",
                    )
                )
        else:
            missing = re.findall(r"'([^']+)' is a required property", e.message)
            if e.validator == "required" and missing:
                problem = ScenarioProblem(
                    where, lines.line(path, key=bool(path)), dotted(path), f"missing required key '{missing[0]}'"
                )
            else:
                own = e.schema.get("errorMessage") if isinstance(e.schema, dict) else None
                problem = ScenarioProblem(where, lines.line(path), dotted(path), own or e.message)
            out.append(problem)
    return out


_FRAME_KINDS = ("content", "tool_call", "raw", "tool_use")  # the schema's frame branches after the plain string


def _frame_problems(
    error: jsonschema.ValidationError, where: str, lines: Lines, path: list[str | int]
) -> list[ScenarioProblem]:
    """A frame matched no branch: when its keys say which kind it meant, report that
    branch's own errors rather than the noise of the other branches."""
    frame = error.instance
    kinds = [k for k in _FRAME_KINDS if isinstance(frame, dict) and k in frame]
    if len(kinds) == 1:
        branch = _FRAME_KINDS.index(kinds[0]) + 1  # branch 0 is the plain string
        own = [c for c in error.context or () if c.schema_path and c.schema_path[0] == branch]
        if own:
            return located(own, where, lines, path)
    message = (
        "a frame is a string (one content delta) or a mapping with exactly one of "
        "'content', 'tool_call', 'tool_use' or 'raw' (plus optional 'delay_ms')"
    )
    if isinstance(frame, dict):
        message += f"; found key(s) {', '.join(repr(k) for k in frame)}"
    return [ScenarioProblem(where, lines.line(path), dotted(path), message)]


def broken_paths(errors: Iterable[jsonschema.ValidationError]) -> list[tuple[str | int, ...]]:
    """Where the schema found the data broken, as deep as it is known: a missing or
    unknown key at the key itself, so its siblings still count as sound."""
    out: list[tuple[str | int, ...]] = []
    for e in errors:
        path = tuple(e.absolute_path)
        if e.validator == "required" and isinstance(e.instance, dict) and isinstance(e.validator_value, list):
            out.extend((*path, key) for key in e.validator_value if key not in e.instance)
        elif e.validator == "additionalProperties" and isinstance(e.instance, dict) and isinstance(e.schema, dict):
            out.extend((*path, key) for key in e.instance if key not in e.schema.get("properties", {}))
        else:
            out.append(path)
    return out
