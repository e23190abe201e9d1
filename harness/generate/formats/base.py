"""What a text format is: how a model writes tool calls as text.

The suite's writers are its own, independent of any proxy's parser (the reference
proxy's included): a bug shared by a writer and a parser would make both agree on
the wrong text. Each writer produces the bytes a model really emits, as its public
chat template renders an assistant turn holding these calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Call:
    """One tool call: the tool's name and its arguments (JSON-compatible values)."""

    name: str
    arguments: Mapping[str, Any]


class TextFormat(Protocol):
    """A way models write tool calls into their text."""

    id: str
    """Stable format id, e.g. ``hermes``, ``qwen-coder``."""
    family: str
    """The ``scenarios/<family>/`` folder its cases live in."""
    model: str
    """A model name that emits it (used as ``request.model``)."""
    delimiters: tuple[str, ...]
    """Every literal marker the format writes (openers, closers, separators)."""

    def write(self, calls: Sequence[Call]) -> str:
        """The text a model writes for these calls."""
        ...


class FormatError(ValueError):
    """These calls cannot be written in this format (e.g. an argument named like the
    format's own name key)."""


def json_text(value: Any) -> str:
    """JSON as the chat templates write it (Jinja's ``tojson``: ``", "`` and ``": "``
    separators, non-ASCII kept as it is)."""
    return json.dumps(value, ensure_ascii=False)


def bare_value(value: Any) -> str:
    """A value written as bare text between tags (Qwen3-Coder, invoke XML, Cline XML):
    strings as they are, everything else as JSON, which the schema types back."""
    return value if isinstance(value, str) else json_text(value)


def require_calls(calls: Sequence[Call]) -> None:
    if not calls:
        raise FormatError("a tool-call text needs at least one call")
