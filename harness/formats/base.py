"""The interface of a text-format writer: how a model writes tool calls as text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Call:
    name: str
    arguments: Mapping[str, Any]


class TextFormat(Protocol):
    id: str
    family: str
    model: str
    delimiters: tuple[str, ...]

    def write(self, calls: Sequence[Call]) -> str: ...
