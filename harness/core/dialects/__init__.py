"""The wire dialects, one object each (``WireDialect``), and serving a scenario's
backend script in any of them (``serve_as``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.base import Finish, NativeCall, NotPortable, RequestShape, ToolChoice, WireDialect
from harness.core.dialects.kiro import KIRO
from harness.core.dialects.ollama import OLLAMA
from harness.core.dialects.openai import OPENAI
from harness.core.dialects.request import NeutralRequest
from harness.core.dialects.responses import RESPONSES

#: Every wire dialect by name: the one list of dialect names (scenario files, options and
#: reports name a dialect; everything between them holds the object).
DIALECTS: Mapping[str, WireDialect] = MappingProxyType({d.name: d for d in (OPENAI, ANTHROPIC, RESPONSES, KIRO, OLLAMA)})


def dialect_choices(conjunction: str | None = None) -> str:
    """Every dialect name, for a message that offers them: ``a, b, c``, or with a
    ``conjunction`` ("or") before the last, ``a, b or c``."""
    names = list(DIALECTS)
    if conjunction is None or len(names) < 2:
        return ", ".join(names)
    return f"{', '.join(names[:-1])} {conjunction} {names[-1]}"


def dialect(name: str) -> WireDialect:
    """The dialect called ``name``; ``ValueError`` naming the choices."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r} (choose from {dialect_choices()})") from None


def posted_to(path: str) -> WireDialect | None:
    """The dialect whose endpoint a request was posted to (``/v1/messages``: Anthropic), if any."""
    tail = path.rstrip("/")
    return next((d for d in DIALECTS.values() if tail.endswith(d.endpoint)), None)


__all__ = ["ANTHROPIC", "DIALECTS", "Finish", "KIRO", "NativeCall", "NeutralRequest", "NotPortable", "OLLAMA",
           "OPENAI", "RESPONSES", "RequestShape", "ToolChoice", "WireDialect", "clients", "dialect", "dialect_choices", "frames",
           "habits", "kiro", "ollama", "posted_to", "profiles", "request", "responses", "responses_request", "script", "servers"]
