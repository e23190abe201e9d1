"""Tool-call markup that must never reach a client as visible text.

A proxy that misses a call, or cuts a tag at a frame edge, leaks pieces of the
backend's markup into the content. Leaks are counted against what the scenario's
own expectation legitimately holds (prose about tags, a call cut off by the length
limit), so only markup the client should not see is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_MARKERS: tuple[str, ...] = (
    "<tools>",
    "</tools>",
    "<tool_call>",
    "</tool_call>",
    "<function_calls>",
    "</function_calls>",
    "<invoke",
    "</invoke>",
    "<parameter",
    "</parameter>",
    "<function=",
    "```tool_code",
)


@dataclass(frozen=True, slots=True)
class Leak:
    marker: str
    offset: int  # first occurrence in the text judged
    found: int  # occurrences in the text
    allowed: int  # occurrences the expectation accounts for


def find_leaks(text: str, markers: Iterable[str] = DEFAULT_MARKERS, allowed: str = "") -> list[Leak]:
    """Markers occurring in ``text`` more often than in ``allowed`` (the part of the
    expected answer that may hold them)."""
    leaks: list[Leak] = []
    seen: set[str] = set()
    for marker in markers:
        if not marker or marker in seen:
            continue
        seen.add(marker)
        found = text.count(marker)
        if not found:
            continue
        permitted = allowed.count(marker)
        if found > permitted:
            leaks.append(Leak(marker, text.find(marker), found, permitted))
    return leaks
