"""When a call arrives twice, once leaked as text and once natively, the tool must run once.

Two calls are the same when their names match and their arguments are equal as
JSON values: key order and white space are free, numbers compare by value, a
boolean never equals a number. Each copy from one source cancels at most one
copy from the other, so a model that really calls a tool twice keeps both calls.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable
from decimal import Decimal
from typing import Any


def _canonical(value: Any) -> Hashable:
    if isinstance(value, dict):
        return ("o", frozenset((k, _canonical(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("a", tuple(_canonical(v) for v in value))
    if isinstance(value, bool) or value is None:
        return ("k", value)
    if isinstance(value, Decimal):
        return ("n", value.normalize() if value.is_finite() else str(value))
    return ("s", value)


def call_key(name: str, arguments: str) -> Hashable:
    """A value equal for equal calls; unparsable arguments compare as trimmed text."""
    try:
        parsed = json.loads(arguments or "{}", parse_float=Decimal, parse_int=Decimal)
    except (ValueError, RecursionError):
        return (name, ("t", arguments.strip()))
    return (name, _canonical(parsed))


class CallLedger:
    """The calls already delivered to the client, by source."""

    __slots__ = ("_rescued", "_native")

    def __init__(self) -> None:
        self._rescued: Counter[Hashable] = Counter()
        self._native: Counter[Hashable] = Counter()

    def admit_rescued(self, name: str, arguments: str) -> bool:
        """Record a rescued call; False when it repeats a native call already delivered."""
        return self._admit(call_key(name, arguments), self._rescued, self._native)

    def admit_native(self, name: str, arguments: str) -> bool:
        """Record a native call; False when it repeats a rescued call already delivered."""
        return self._admit(call_key(name, arguments), self._native, self._rescued)

    @staticmethod
    def _admit(key: Hashable, mine: Counter[Hashable], other: Counter[Hashable]) -> bool:
        if other[key] > 0:
            other[key] -= 1
            return False
        mine[key] += 1
        return True
