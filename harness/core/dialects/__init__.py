"""The wire dialects, one object each (``WireDialect``), and serving a scenario's
backend script in any of them (``serve_as``)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.base import DialectName, Finish, NativeCall, NotPortable, RequestShape, ToolChoice, WireDialect
from harness.core.dialects.openai import OPENAI
from harness.core.dialects.request import NeutralRequest
from harness.core.dialects.responses import RESPONSES

DIALECTS: Mapping[str, WireDialect] = MappingProxyType({d.name: d for d in (OPENAI, ANTHROPIC, RESPONSES)})
DIALECT_NAMES: tuple[DialectName, ...] = ("openai", "anthropic", "responses")


def dialect(name: str) -> WireDialect:
    """The dialect called ``name``; ``ValueError`` naming the choices."""
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r} (choose from {', '.join(DIALECTS)})") from None


def posted_to(path: str) -> WireDialect | None:
    """The dialect whose endpoint a request was posted to (``/v1/messages``: Anthropic), if any."""
    tail = path.rstrip("/")
    return next((d for d in DIALECTS.values() if tail.endswith(d.endpoint)), None)


__all__ = ["ANTHROPIC", "DIALECTS", "DIALECT_NAMES", "DialectName", "Finish", "NativeCall", "NeutralRequest",
           "NotPortable", "OPENAI", "RESPONSES", "RequestShape", "ToolChoice", "WireDialect", "clients",
           "dialect", "posted_to", "profiles", "request", "responses", "script"]
