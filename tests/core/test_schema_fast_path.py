"""The compiled schema validator decides alone whether a scenario is valid (jsonschema only
walks an invalid one, for its located errors), so the two must agree: on every file of the
library, and on documents broken one way at a time at every place of a few differing cases."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.json_values import places

from harness.core.scenario.loading import bundled_scenarios_dir, scenario_files
from harness.core.scenario.schema import _compiled, _validator
from harness.core.scenario.yaml_source import load_yaml

LIBRARY = sorted(scenario_files([bundled_scenarios_dir()]))
# Cases that reach different parts of the schema: plain frames, native calls, raw bytes, Kiro
# events, a fault, upstream assertions, an isolation round, a client body of its own.
SHAPES = ("plain/native-single.yaml", "faults/openai-stall-mid-call.yaml", "faults/openai-malformed-event.yaml",
          "bad-input/openai-truncated-body.yaml", "kiro/late-tool-use-id.yaml", "features/system-to-user.yaml",
          "isolation/hermes-in-flight.yaml", "anthropic/native-duplicate.yaml", "translation/anthropic-conversation.yaml",
          "ollama/parallel-calls-index-zero.yaml")
OTHER: dict[type, Any] = {str: 7, int: "7", float: "7", bool: "yes", list: {"k": 1}, dict: ["x"], type(None): []}


def _read(path: Path) -> Any:
    return load_yaml(path.read_text("utf-8"), str(path))


def _mutants(doc: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """The document with one thing wrong: a key dropped, an unknown key added, a value of another type."""
    for path in list(places(doc))[1:]:
        parent_path, last = path[:-1], path[-1]
        for how in ("drop", "retype", "add"):
            out = copy.deepcopy(doc)
            parent = out
            for part in parent_path:
                parent = parent[part]
            if how == "drop":
                del parent[last]
            elif how == "retype":
                parent[last] = OTHER.get(type(parent[last]), None)
            elif isinstance(parent[last], dict):
                parent[last]["not_a_field"] = 1
            else:
                continue
            yield f"{how} {'/'.join(map(str, path))}", out


def _agree(doc: Any) -> tuple[bool, bool]:
    return _compiled().is_valid(doc), not any(True for _ in _validator().iter_errors(doc))


def test_every_library_file_is_valid_to_both() -> None:
    disagree = [str(p) for p in LIBRARY if _agree(_read(p)) != (True, True)]
    assert disagree == []


@pytest.mark.parametrize("shape", SHAPES)
def test_both_validators_judge_each_broken_document_alike(shape: str) -> None:
    path = bundled_scenarios_dir() / shape
    mutants = list(_mutants(_read(path)))
    assert len(mutants) > 20
    verdicts = {label: _agree(doc) for label, doc in mutants}
    assert {label: v for label, v in verdicts.items() if v[0] != v[1]} == {}
    assert any(not fast for fast, _ in verdicts.values())  # the mutations did break documents
