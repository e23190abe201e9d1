"""Secrets out of everything the harness writes or prints.

A run sends the proxy the user's ``--proxy-header`` values (an ``Authorization: Bearer
sk-...`` say) and the proxy forwards them to the mock backend; a capture to import
holds whatever credentials the client sent. None of that may reach a HAR file, a
report, a failure transcript or an imported scenario. One ``Redactor`` decides what
is secret, for every writer:

* credential headers: ``Authorization``, ``Proxy-Authorization``, ``x-api-key``,
  ``api-key``, ``x-goog-api-key``, ``Cookie``, ``Set-Cookie`` and any header whose
  name holds ``token``, ``secret``, ``key`` or ``auth``;
* the values the harness knows to be secret (``Redactor.known``: every
  ``--proxy-header`` value, whatever the header's name), wherever they appear;
* key-looking query parameters of a URL (``key=``, ``api_key=``, ``token=``, ...);
* string values of key-named JSON fields (``api_key``, ``apiKey``, ``token``,
  ``secret``, ``password``, ``authorization``, ...);
* strings shaped like well-known keys: ``sk-...``, ``sk-ant-...``, ``AIza...``,
  ``ghp_...``, ``xox?-...``, ``AKIA...``, JWT-like ``eyJ....``, ``Bearer <x>``.

A redacted value becomes ``REDACTED``; a scheme word stays (``Bearer REDACTED``) so
a reader still sees the shape. Pure: values in, values out; nothing here touches
what is sent on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

REDACTED = "REDACTED"
MIN_KNOWN = 8  # a known value shorter than this is no key, and replacing it everywhere would mangle the output

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie", "set-cookie",
    "anthropic-api-key",
})
_SECRET_NAME_PARTS = ("token", "secret", "key", "auth", "password", "cookie")
_SCHEMES = ("bearer", "basic", "token", "digest")

# Exact JSON field names (lowercase, '-' and '_' dropped) whose string value is a secret.
_SECRET_FIELDS = frozenset({
    "apikey", "xapikey", "googapikey", "xgoogapikey", "token", "accesstoken", "refreshtoken", "idtoken",
    "authtoken", "sessiontoken", "bearertoken", "secret", "clientsecret", "secretkey", "secretaccesskey",
    "awssecretaccesskey", "privatekey", "password", "passwd", "authorization", "proxyauthorization", "auth",
    "cookie", "setcookie",
})
# Query parameters (same normalisation) whose value is a secret.
_SECRET_PARAMS = _SECRET_FIELDS | frozenset({"key", "sig", "signature", "code"})

# Strings shaped like well-known keys; a scheme word before a token keeps the word.
KEY_SHAPES = re.compile(
    r"\bsk-(?:ant-)?[A-Za-z0-9_-]{8,}"  # OpenAI, Anthropic
    r"|\bAIza[0-9A-Za-z_-]{20,}"  # Google
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{16,}|\bgithub_pat_[A-Za-z0-9_]{16,}"  # GitHub
    r"|\bxox[abprsoe]-[A-Za-z0-9-]{8,}"  # Slack
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key id
    r"|\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"  # JWT-like
)
_SCHEME_TOKEN = re.compile(
    r"(?i)\b(bearer)(\s+)([A-Za-z0-9._~+/=:-]{8,})"
    r"|\b(basic)(\s+)((?=[A-Za-z+/]*[0-9+/=])[A-Za-z0-9+/]{8,}={0,2})"
)

# In running text: a key-named query parameter's value, and a URL's user info.
_QUERY_SECRET = re.compile(
    r"(?i)([?&](?:key|sig|signature|code|[\w.-]*(?:token|secret|key|auth|password|passwd)[\w.-]*)=)([^&\s\"'#<>]+)"
)
_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")


def _norm(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "")


def is_credential_header(name: str) -> bool:
    """Whether a header of this name carries a credential."""
    lowered = name.lower()
    return lowered in CREDENTIAL_HEADERS or any(part in lowered for part in _SECRET_NAME_PARTS)


def _secret_param(name: str) -> bool:
    return _norm(name) in _SECRET_PARAMS or is_credential_header(name)


def is_secret_field(name: str) -> bool:
    """Whether a JSON field of this name holds a secret (``api_key``, ``apiKey``, ``token``, ...)."""
    return _norm(name) in _SECRET_FIELDS


def looks_like_key(text: str) -> bool:
    """Whether ``text`` holds something shaped like a well-known key or a ``Bearer`` token."""
    return KEY_SHAPES.search(text) is not None or _SCHEME_TOKEN.search(text) is not None


def secret_pieces(value: str) -> list[str]:
    """The parts of a credential value to redact wherever they recur: the whole value and
    each word of it but a scheme word (``Bearer``), those long enough to be keys; a value
    that starts with a scheme word is redacted word by word, so the word stays."""
    words = re.split(r"[\s,;=]+", value)
    whole = [] if words[0].lower() in _SCHEMES else [value.strip()]  # so "Bearer <key>" keeps its word
    pieces = [*whole, *words]
    return [p for p in dict.fromkeys(pieces) if len(p) >= MIN_KNOWN and p.lower() not in _SCHEMES]


def known_values(*groups: Iterable[str]) -> tuple[str, ...]:
    """The secret pieces of every value of ``groups``, longest first (so a value is
    replaced whole before any piece of it)."""
    pieces = {p for group in groups for value in group for p in secret_pieces(value)}
    return tuple(sorted(pieces, key=lambda p: (-len(p), p)))


@dataclass(frozen=True)
class Redactor:
    """Redacts secrets from what is written or printed; ``known`` are values known to be secret."""

    known: tuple[str, ...] = ()
    marker: str = REDACTED

    @classmethod
    def for_headers(cls, headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> Redactor:
        """A redactor that knows every value of ``headers`` (the user's ``--proxy-header``s) is secret."""
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        return cls(known_values(v for _, v in pairs))

    def knowing(self, values: Iterable[str]) -> Redactor:
        """This redactor, knowing ``values`` are secret as well."""
        return Redactor(known_values(self.known, values), self.marker)

    # ------------------------------------------------------------------ values

    def text(self, text: str) -> str:
        """``text`` with known values, ``Bearer`` tokens, key-named query parameters and user
        info of URLs, and key-shaped strings redacted."""
        for secret in self.known:
            if secret in text:
                text = text.replace(secret, self.marker)
        text = _SCHEME_TOKEN.sub(self._keep_scheme, text)
        if "=" in text:
            text = _QUERY_SECRET.sub(lambda m: m.group(1) + (m.group(2) if m.group(2) == self.marker else self.marker),
                                     text)
        if "@" in text:
            text = _USER_INFO.sub(lambda m: f"{m.group(1)}{self.marker}@", text)
        return KEY_SHAPES.sub(self.marker, text)

    def _keep_scheme(self, m: re.Match[str]) -> str:
        scheme, space, token = (m.group(1), m.group(2), m.group(3)) if m.group(1) else m.group(4, 5, 6)
        return m.group(0) if token.startswith(self.marker) else f"{scheme}{space}{self.marker}"

    def header(self, name: str, value: str) -> str:
        """A header's value as it may be written: a credential's keeps only its scheme word."""
        if is_credential_header(name):
            scheme, space, rest = value.strip().partition(" ")
            if space and rest and scheme.lower() in _SCHEMES:
                return f"{scheme} {self.marker}"
            return self.marker if value else value
        return self.text(value)

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {name: self.header(name, value) for name, value in headers.items()}

    def url(self, url: str) -> str:
        """``url`` with key-named query parameters, user info and known values redacted."""
        try:
            parts = urlsplit(url)
        except ValueError:
            return self.text(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{self.marker}@{netloc.rpartition('@')[2]}"
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            if any(_secret_param(k) for k, _ in pairs):
                query = "&".join(f"{quote(k, safe='')}={self.marker if _secret_param(k) else quote(v, safe='')}"
                                 for k, v in pairs)
        return self.text(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))

    def json(self, value: Any) -> Any:
        """A JSON value with secret-named fields' strings and every secret-looking string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {k: (self.marker if isinstance(k, str) and isinstance(v, str) and v and is_secret_field(k)
                        else self.json(v)) for k, v in value.items()}
        return value

    def body(self, text: str) -> str:
        """A request or response body as text: a JSON document, SSE or anything else; its
        form is kept when nothing in it is secret."""
        stripped = text.strip()
        if stripped[:1] in ("{", "["):
            try:
                parsed = json.loads(stripped)
            except (ValueError, RecursionError):
                pass
            else:
                cleaned = self.json(parsed)
                return text if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)
        return "\n".join(self._line(line) for line in text.split("\n"))

    def _line(self, line: str) -> str:
        head, colon, rest = line.partition(":")
        if colon and head == "data" and rest.strip()[:1] in ("{", "["):
            try:
                parsed = json.loads(rest)
            except (ValueError, RecursionError):
                return self.text(line)
            cleaned = self.json(parsed)
            return line if cleaned == parsed else f"data: {json.dumps(cleaned, ensure_ascii=False)}"
        return self.text(line)


NO_KNOWN = Redactor()


def redact_text(text: str, redactor: Redactor = NO_KNOWN) -> str:
    return redactor.text(text)


def redact_headers(headers: Mapping[str, str], redactor: Redactor = NO_KNOWN) -> dict[str, str]:
    return redactor.headers(headers)


def redact_url(url: str, redactor: Redactor = NO_KNOWN) -> str:
    return redactor.url(url)


def redact_json(value: Any, redactor: Redactor = NO_KNOWN) -> Any:
    return redactor.json(value)
