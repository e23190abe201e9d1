"""Secrets never enter an imported scenario: credential headers dropped, API-key-looking values redacted."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"

# --------------------------------------------------------------------------- secrets


SECRET_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie", "openai-organization",
    "openai-project", "anthropic-api-key", "x-goog-api-key",
})
TRANSPORT_HEADERS = frozenset({
    "host", "content-length", "content-type", "content-encoding", "accept", "accept-encoding", "accept-language",
    "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "origin", "referer", "priority",
    "cache-control", "pragma", "dnt", "via", "forwarded", "x-real-ip", "expect",
})
TRANSPORT_PREFIXES = (":", "sec-", "x-forwarded-", "x-stainless-", "x-amzn-", "cf-")
_SECRET_NAME_PARTS = ("auth", "token", "secret", "api-key", "apikey", "api_key", "password", "session", "cookie")
_SECRET_VALUE = re.compile(
    r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}|\bbasic\s+[A-Za-z0-9+/=]{8,}|\bsk-[A-Za-z0-9_-]{8,}"
)
_SECRET_BODY_KEYS = frozenset({"api_key", "apikey", "api-key", "authorization", "password", "secret", "access_token"})


def _looks_secret(name: str, value: str) -> bool:
    lowered = name.lower()
    return (
        lowered in SECRET_HEADERS
        or any(part in lowered for part in _SECRET_NAME_PARTS)
        or _SECRET_VALUE.search(value) is not None
    )


def _is_transport(name: str) -> bool:
    lowered = name.lower()
    return lowered in TRANSPORT_HEADERS or lowered.startswith(TRANSPORT_PREFIXES)


@dataclass
class _Secrets:
    """Credential values seen while reading one exchange, to redact wherever they recur."""

    names: list[str] = field(default_factory=list)
    values: list[str] = field(default_factory=list)
    redactions: int = 0

    def note(self, name: str, value: str) -> None:
        self.names.append(name)
        for piece in re.split(r"[\s,;=]+", value):
            if len(piece) >= 8 and piece.lower() not in ("bearer", "basic"):
                self.values.append(piece)

    def scrub(self, value: Any) -> Any:
        """``value`` with every secret-looking string replaced; secret-named keys dropped."""
        if isinstance(value, str):
            out = value
            for secret in self.values:
                if secret in out:
                    out = out.replace(secret, REDACTED)
            out = _SECRET_VALUE.sub(REDACTED, out)
            if out != value:
                self.redactions += 1
            return out
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            kept: dict[str, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and k.lower() in _SECRET_BODY_KEYS:
                    self.redactions += 1
                    continue
                kept[k] = self.scrub(v)
            return kept
        return value


def clean_headers(pairs: Iterable[tuple[str, str]], secrets: _Secrets | None = None) -> dict[str, str]:
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


def _secrets_warning(origin: str, secrets: _Secrets) -> list[str]:
    out: list[str] = []
    if secrets.names:
        names = ", ".join(sorted({n.title() if n.islower() else n for n in secrets.names}))
        out.append(f"{origin}: dropped credential header(s) {names}")
    if secrets.redactions:
        out.append(f"{origin}: redacted {secrets.redactions} secret-looking value(s) in the request body")
    return out
