"""The rule catalogue: what each rule says and who it breaks, kept as data beside its check.

A group module's rules are described in the YAML file of the same name (``text.yaml`` beside
``text.py``), keyed by rule id: the statement, the severity, the real clients a ``client`` rule
breaks (``breaks``: clients, how, source, versions) and the spec pages a rule comes from
(``source``). A source is a public https URL or the name of one in ``citations.SOURCES``, so a
page cited by many rules is written once. The module's decorators keep only what is behaviour
(the check, its stage, profiles, features). Each file is checked against ``SCHEMA`` when its
group is imported, and a bad entry is refused naming the file, the rule and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Literal

import jsonschema
import jsonschema_rs
import yaml

from harness.core.errors import ConformanceError
from harness.judge.rules.citations import CLIENTS, SOURCES, Breaks

# The C loader reads the catalogue several times faster, where PyYAML was built with libyaml.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# client: a named client breaks (the rule cites it: ``Breaks``); spec: the API's documentation
# says so (judged with --strict); feature: a promise only some proxies make, judged when the
# user claims it.
Severity = Literal["client", "spec", "feature"]

_SOURCES = {"type": "array", "items": {"anyOf": [{"type": "string", "pattern": "^https://"},
                                                 {"enum": sorted(SOURCES)}]}}
# A client rule names the real clients it breaks and how; only a client rule makes that claim
# (a rule no named client breaks on is spec, a feature, or no rule).
SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "propertyNames": {"pattern": r"^[A-Z]+-\d{3}$"},
    "additionalProperties": {
        "type": "object",
        "additionalProperties": False,
        "required": ["statement", "severity"],
        "properties": {
            "statement": {"type": "string", "pattern": r"\S"},
            "severity": {"enum": ["client", "spec", "feature"]},
            "source": _SOURCES,
            "breaks": {
                "type": "object",
                "additionalProperties": False,
                "required": ["clients", "how"],
                "properties": {
                    "clients": {"type": "array", "minItems": 1, "items": {"enum": list(CLIENTS)}},
                    "how": {"type": "string", "pattern": r"\S"},
                    "source": _SOURCES,
                    "versions": {"type": "string"},
                },
            },
        },
        "if": {"properties": {"severity": {"const": "client"}}},
        "then": {"required": ["breaks"]},
        "else": {"not": {"required": ["breaks"]}},
    },
}


# The compiled schema tells a valid file apart in a fraction of a millisecond; jsonschema then
# locates the problem of an invalid one.
_VALID = jsonschema_rs.validator_for(dict(SCHEMA))
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


# Clearer words than the schema's, for the two mistakes its own words would only restate.
_ONLY_CLIENT_RULES_CITE = ("only a 'client' rule cites the clients it breaks (breaks); a spec or feature rule "
                           "gives its spec pages as source")
_A_SOURCE = "a source is a public https URL or the name of one in harness/judge/rules/citations.py"


class RuleCatalogueError(ConformanceError):
    """A rule catalogue file is unreadable, breaks ``SCHEMA``, or misses a registered rule."""


@dataclass(frozen=True)
class Described:
    """What a rule's catalogue entry says about it."""

    statement: str
    severity: Severity
    breaks: Breaks | None
    source: tuple[str, ...]


def _urls(names: list[str]) -> tuple[str, ...]:
    return tuple(SOURCES.get(name, name) for name in names)


def _described(entry: Mapping[str, Any]) -> Described:
    cited = entry.get("breaks")
    breaks = None if cited is None else Breaks(tuple(cited["clients"]), cited["how"],
                                               _urls(cited.get("source", [])), cited.get("versions", ""))
    return Described(entry["statement"], entry["severity"], breaks, _urls(entry.get("source", [])))


def parse(data: Any, where: str) -> Mapping[str, Described]:
    """The rules described by ``data`` (one catalogue file read as YAML), or the first problem
    in it, located by rule id and field."""
    if not _VALID.is_valid(data):
        problem = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(data))
        if problem is None:  # pragma: no cover - the two validators read one schema alike
            raise RuleCatalogueError(f"{where}: does not match the catalogue schema")
        field = ".".join(str(part) for part in problem.absolute_path) or "(top level)"
        said = problem.message if problem.validator != "not" else _ONLY_CLIENT_RULES_CITE
        if problem.parent is not None and problem.parent.validator == "anyOf":
            said += f" ({_A_SOURCE})"
        raise RuleCatalogueError(f"{where}: {field}: {said}")
    return {rule_id: _described(entry) for rule_id, entry in data.items()}


def load(name: str) -> Mapping[str, Described]:
    """The catalogue of the group module ``name`` (``harness/judge/rules/<name>.yaml``)."""
    where = f"harness/judge/rules/{name}.yaml"
    try:
        text = files("harness.judge.rules").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
        data = yaml.load(text, Loader=_LOADER)
    except (OSError, yaml.YAMLError) as exc:
        raise RuleCatalogueError(f"{where}: {exc}") from exc
    return parse(data, where)
