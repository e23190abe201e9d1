"""When a client retries a refused request, as the official SDKs do, so a verdict is what such a client sees.

openai-python and the Anthropic SDK retry a request the server asks them to try again, at most twice
by default (``DEFAULT_MAX_RETRIES = 2``), waiting what ``retry-after-ms`` or ``Retry-After``
(seconds, or an HTTP date) says when that is positive and bounded (openai-python: up to 120 s), and
an exponential back-off from 0.5 s (capped at 8 s) otherwise: ``_calculate_retry_timeout`` and
``_should_retry`` in https://github.com/openai/openai-python/blob/main/src/openai/_base_client.py
and https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/_base_client.py
(openai 3.57.0, anthropic 2.14.0).

The harness retries only a 429 or 503 that carries such a header: the server's own word that the
request will succeed later (a proxy's circuit breaker, a rate limit). A client rule is then judged on
the answer the SDK would have handed the application, and the verdict says that it retried.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from dataclasses import dataclass

MAX_RETRIES = 2  # the SDKs' DEFAULT_MAX_RETRIES
MAX_RETRY_AFTER = 60.0  # seconds: a longer wait is no longer worth a conformance run (openai-python: 120)
RETRIED_STATUSES = frozenset({429, 503})
_INITIAL_DELAY = 0.5
_MAX_DELAY = 8.0


@dataclass(frozen=True)
class Retry:
    """One retry the harness made: the status that asked for it, the header, and the wait."""

    status: int
    header: str  # "retry-after-ms: 1500", "retry-after: 2"
    delay: float

    def describe(self) -> str:
        return f"HTTP {self.status} with {self.header}: retried after {self.delay:.1f} s, as the official SDKs do"


def retry_after(headers: Mapping[str, str], now: float) -> tuple[str, float] | None:
    """The header that asks for a retry and the seconds it says (``headers``' names lower-cased), or None.
    ``retry-after-ms`` wins over ``retry-after``; an HTTP date counts from ``now`` (epoch seconds)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return f"{name}: {value}", float(value) / divisor
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return f"retry-after: {value}", float(email.utils.mktime_tz(parsed)) - now


def plan_retry(status: int | None, headers: Mapping[str, str], done: int, now: float) -> Retry | None:
    """The retry an SDK client would make after ``done`` retries on an answer of ``status``, or None."""
    if status not in RETRIED_STATUSES or done >= MAX_RETRIES:
        return None
    asked = retry_after(headers, now)
    if asked is None:
        return None
    header, seconds = asked
    if seconds > MAX_RETRY_AFTER:
        return None  # the SDKs give up on a wait past their bound rather than hang
    delay = seconds if seconds > 0 else min(_INITIAL_DELAY * 2.0**done, _MAX_DELAY)
    return Retry(status, header, delay)
