"""The declared tools, as the parser consults them.

Only declared tools are ever extracted, so every family asks this one object whether
a name it read is a call, and what type a parameter should have.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from reference_proxy.rescue.events import ToolSpec

_SCHEMAS_KEPT: Final = 256


class Toolbox:
    """Name resolution and parameter schemas for the tools of one request."""

    __slots__ = ("_specs", "_schemas")

    def __init__(self, tools: Sequence[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for tool in tools:
            self._specs.setdefault(tool.name, tool)
        # Parameters' schemas once looked up (its ``Mapping`` checks are abstract-class
        # checks, which cost more than the rest of typing a short value); at most
        # ``_SCHEMAS_KEPT``, as the names come from the model's text.
        self._schemas: dict[tuple[str, str], Mapping[str, Any] | None] = {}

    def __bool__(self) -> bool:
        return bool(self._specs)

    def resolve(self, written: str) -> str | None:
        """The declared tool a written name refers to, or None.

        Names are compared exactly; a namespaced name (``ns:tool:read_file``) also
        matches after dropping everything up to its last colon.
        """
        name = written.strip()
        if name in self._specs:
            return name
        if ":" in name:
            bare = name.rsplit(":", 1)[1]
            if bare in self._specs:
                return bare
        return None

    def property_schema(self, tool: str, parameter: str) -> Mapping[str, Any] | None:
        """The JSON Schema of one parameter, if the tool declares it."""
        key = (tool, parameter)
        schemas = self._schemas
        if key in schemas:
            return schemas[key]
        schema = self._property_schema(tool, parameter)
        if len(schemas) < _SCHEMAS_KEPT:
            schemas[key] = schema
        return schema

    def _property_schema(self, tool: str, parameter: str) -> Mapping[str, Any] | None:
        spec = self._specs.get(tool)
        if spec is None or spec.parameters is None:
            return None
        properties = spec.parameters.get("properties")
        if not isinstance(properties, Mapping):
            return None
        schema = properties.get(parameter)
        return schema if isinstance(schema, Mapping) else None
