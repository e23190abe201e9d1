"""The compiled validator that answers "valid" before jsonschema looks for problems agrees with
jsonschema on every answer the mock streams and on those answers broken at random: a chunk it
passes that jsonschema would fault is a schema rule that can no longer fail."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.json_values import places
from support.library import load_library

from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES
from harness.core.dialects.script import serve_as, upstream_dialects
from harness.core.replay.planned import wire_events
from harness.core.scenario.model import Scenario
from harness.judge.rules.schemas import SchemaName, _surely_valid, schema_problems, validator

STREAM_SCHEMAS: dict[Any, SchemaName] = {OPENAI: "chat_completion_chunk", ANTHROPIC: "anthropic_stream_event",
                                         RESPONSES: "responses_stream_event"}


def _served() -> Iterator[Scenario]:
    """The library's streamed scenarios as written, and as a Responses upstream would send them."""
    for scenario in load_library():
        if scenario.streams:
            yield scenario
            if upstream_dialects(scenario).get(RESPONSES, "") is None and scenario.backend.dialect is not RESPONSES:
                yield serve_as(scenario, RESPONSES)


def _payloads() -> Iterator[tuple[SchemaName, Any]]:
    """Every JSON event the mock streams for the library's scenarios of the three SSE dialects."""
    for scenario in _served():
        name = STREAM_SCHEMAS.get(scenario.backend.dialect)
        if name is None:
            continue
        for event in wire_events(scenario):
            for line in event.data.decode("utf-8", "replace").splitlines():
                if line.startswith("data:"):
                    try:
                        yield name, json.loads(line[5:])
                    except ValueError:
                        continue  # a fault's broken event: no JSON to validate


# Words a schema checks against a list (kept in a shape); any other string is free text.
_NAMED = frozenset({"type", "object", "role", "finish_reason", "stop_reason", "status"})


def _shape(value: Any, key: str = "") -> Any:
    """``value`` with its free text and numbers reduced to their types: events of one shape
    ask the same questions of a validator."""
    if isinstance(value, dict):
        return {k: _shape(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v, key) for v in value]
    return value if key in _NAMED or value is None or isinstance(value, bool) else type(value).__name__


def _distinct(payloads: Iterator[tuple[SchemaName, Any]]) -> list[tuple[SchemaName, Any]]:
    """One event of each shape."""
    seen: dict[str, tuple[SchemaName, Any]] = {}
    for name, instance in payloads:
        seen.setdefault(json.dumps([name, _shape(instance)], sort_keys=True), (name, instance))
    return list(seen.values())


PAYLOADS = _distinct(_payloads())


def _agree(instance: Any, name: SchemaName) -> None:
    faulted = any(True for _ in validator(name).iter_errors(instance))
    assert _surely_valid(instance, name) is not faulted, (name, instance)
    assert (schema_problems(instance, name) == []) is not faulted


def test_the_library_streams_events_of_each_schema() -> None:
    assert {name for name, _ in PAYLOADS} == set(STREAM_SCHEMAS.values())
    assert len(PAYLOADS) > 100


def test_every_event_the_mock_streams_gets_the_same_answer() -> None:
    for name, instance in PAYLOADS:
        _agree(instance, name)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _broken(instance: Any, path: tuple[Any, ...], replacement: Any, drop: bool) -> Any:
    """``instance`` with the value at ``path`` replaced (or dropped from its object or array)."""
    if not path:
        return replacement
    copy = json.loads(json.dumps(instance))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = replacement
    return copy


@pytest.mark.parametrize("name", sorted(set(STREAM_SCHEMAS.values())))
@settings(max_examples=300)
@given(data=st.data(), replacement=JSON, drop=st.booleans())
def test_an_event_broken_anywhere_gets_the_same_answer(name: SchemaName, data: st.DataObject, replacement: Any,
                                                       drop: bool) -> None:
    instance = data.draw(st.sampled_from([p for n, p in PAYLOADS if n == name]))
    path = data.draw(st.sampled_from(list(places(instance))))
    _agree(_broken(instance, path, replacement, drop and bool(path)), name)
