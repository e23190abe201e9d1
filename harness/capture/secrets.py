"""Secrets never enter an imported scenario: credential headers dropped, API-key-looking values redacted.

What is secret is the core redactor's call (``harness.core.redact``); this module adds
what an import does with it: drop credential and transport headers, drop secret-named
fields of the request body, and count what it did for the import's warnings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.core.redact import Redactor, is_credential_header, is_secret_field, known_values, looks_like_key

REDACTED = "[redacted]"

# --------------------------------------------------------------------------- secrets

# Headers that name the account, though they are no credential.
IDENTIFYING_HEADERS = frozenset({"openai-organization", "openai-project"})
TRANSPORT_HEADERS = frozenset({
    "host", "content-length", "content-type", "content-encoding", "accept", "accept-encoding", "accept-language",
    "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "origin", "referer", "priority",
    "cache-control", "pragma", "dnt", "via", "forwarded", "x-real-ip", "expect",
})
TRANSPORT_PREFIXES = (":", "sec-", "x-forwarded-", "x-stainless-", "x-amzn-", "cf-")


def _looks_secret(name: str, value: str) -> bool:
    lowered = name.lower()
    return (
        is_credential_header(name)
        or lowered in IDENTIFYING_HEADERS
        or "session" in lowered
        or looks_like_key(value)
    )


def _is_transport(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRANSPORT_HEADERS or lowered.startswith(TRANSPORT_PREFIXES)


@dataclass
class Secrets:
    """Credential values seen while reading one exchange, to redact wherever they recur."""

    names: list[str] = field(default_factory=list)
    values: tuple[str, ...] = ()
    redactions: int = 0

    def note(self, name: str, value: str) -> None:
        self.names.append(name)
        self.values = known_values(self.values, (value,))

    @property
    def redactor(self) -> Redactor:
        return Redactor(self.values, marker=REDACTED)

    def scrub(self, value: Any) -> Any:
        """``value`` with every secret-looking string redacted; secret-named fields dropped."""
        return self._scrub(value, self.redactor)

    def _scrub(self, value: Any, redactor: Redactor) -> Any:
        if isinstance(value, str):
            out = redactor.text(value)
            if out != value:
                self.redactions += 1
            return out
        if isinstance(value, list):
            return [self._scrub(v, redactor) for v in value]
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and is_secret_field(k):
                    self.redactions += 1
                    continue
                kept[k] = self._scrub(v, redactor)
            return kept
        return value

    def warnings(self, origin: str) -> list[str]:
        """What reading the exchange dropped and redacted, for the import's warnings."""
        out: list[str] = []
        if self.names:
            names = ", ".join(sorted({n.title() if n.islower() else n for n in self.names}))
            out.append(f"{origin}: dropped credential header(s) {names}")
        if self.redactions:
            out.append(f"{origin}: redacted {self.redactions} secret-looking value(s) in the request body")
        return out


def clean_headers(pairs: Iterable[tuple[str, str]], secrets: Secrets | None = None) -> dict[str, str]:
    """Request headers minus credentials (noted in ``secrets``) and transport headers."""
    kept: dict[str, str] = {}
    for name, value in pairs:
        if not isinstance(name, str) or not isinstance(value, str):
            continue
        if _is_transport(name):
            continue
        if _looks_secret(name, value):
            if secrets is not None:
                secrets.note(name, value)
            continue
        kept[name] = value
    return kept
