"""What a fuzz run can be asked for, read from the user's words: the formats to write calls
in and how long to go on. Shared by the ``fuzz`` command and the plugin's fuzz items."""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.generate.formats import FORMATS
from harness.generate.fuzz.case import NATIVE

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``10m`` or ``1.5h`` as seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"--max-time {text!r}: expected seconds or a number with s, m or h (e.g. 10m)")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]


def all_formats() -> list[str]:
    """Every text format the library has writers for, and native calls."""
    return [*FORMATS, NATIVE]


def parse_formats(values: Sequence[str]) -> tuple[str, ...]:
    known = all_formats()
    chosen = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [f for f in chosen if f not in known]
    if unknown:
        raise ValueError(f"--formats: unknown format(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return tuple(dict.fromkeys(chosen)) or tuple(known)
