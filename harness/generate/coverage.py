"""What a proxy claims to do, and the coverage that follows from it.

A proxy that does not rescue some text format says so (``--conformance-formats``), as it
says which optional features it has (``--features``): the scenarios of a format it does
not claim are reported as not claimed, counted in the score card's coverage line
("rescues 3 of 7 formats"), never as failures and never as passes.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any

NOT_CLAIMED = "not claimed: "

# The scenario families whose cases are text a model wrote in one tool-call format.
_FALLBACK_FORMAT_FAMILIES = ("cline-xml", "hermes", "invoke-xml", "qwen-coder", "qwen-tools", "tool-code")


def format_families() -> tuple[str, ...]:
    """Every family of text-format cases: those of the format writers when the harness has
    them (``harness.generate.formats``), else the library's own."""
    try:
        formats: Any = getattr(importlib.import_module("harness.generate.formats"), "FORMATS", {})
    except ImportError:
        return _FALLBACK_FORMAT_FAMILIES
    families = {str(f.family) for f in formats.values()}
    return tuple(sorted(families | set(_FALLBACK_FORMAT_FAMILIES)))


def parse_formats(values: Iterable[str]) -> frozenset[str] | None:
    """``--conformance-formats a,b`` (repeatable); None when not given (every format claimed)."""
    names = [part.strip() for value in values for part in value.split(",")]
    return frozenset(n for n in names if n) if names else None


def unclaimed_reason(family: str, claimed: frozenset[str] | None, rescues: Iterable[str] = ()) -> str | None:
    """Why a case of ``family`` (whose verdict also relies on rescuing the ``rescues`` formats) is not
    played for a proxy that claims ``claimed`` formats, or None."""
    if claimed is None:
        return None
    known = format_families()
    for needed in (family, *rescues):
        if needed in known and needed not in claimed:
            return (f"{NOT_CLAIMED}the proxy does not claim to rescue the {needed} format "
                    "(add it to --conformance-formats if it does)")
    return None


def coverage_line(families: Sequence[tuple[str, bool]]) -> str:
    """``families``: (format family, claimed) for each format family the run had cases of."""
    claimed = sorted({f for f, c in families if c})
    not_claimed = sorted({f for f, c in families if not c})
    if not not_claimed:
        return ""
    total = len(claimed) + len(not_claimed)
    # Counted over the formats this run has cases of (a client profile plays only some), and "(none)"
    # never follows a 0: the line says once what is claimed and what is not.
    shown = f" ({', '.join(claimed)})" if claimed else ""
    return (f"coverage: rescues {len(claimed)} of the {total} formats this run has cases of{shown}; "
            f"not claimed: {', '.join(not_claimed)}")
