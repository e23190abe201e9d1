"""How the harness tags a request so the mock knows which scenario run it belongs to.

Proxies rename models, inject or drop system messages, rewrite the last user
message and drop headers they do not know. The nonce therefore travels three ways
at once: a header, the user-id field, and a line appended to the *first* user
message. The mock searches header values and the raw body for the pattern, so any
one surviving copy is enough.
"""

from __future__ import annotations

import copy
import re
import secrets
from collections.abc import Mapping
from typing import Any

NONCE_HEADER = "X-Conformance-Nonce"
NONCE_RE = re.compile(rb"tcc-[0-9a-f]{32}")


def new_nonce() -> str:
    return "tcc-" + secrets.token_hex(16)


def place_nonce(body: Mapping[str, Any], nonce: str, dialect: str = "openai") -> dict[str, Any]:
    """A copy of a request body carrying ``nonce`` in its user-id field (OpenAI ``user``,
    Anthropic ``metadata.user_id``) and in the first user message (string content or a
    list of text parts/blocks, which have the same shape in both dialects)."""
    out = copy.deepcopy(dict(body))
    if dialect == "anthropic":
        metadata = out.get("metadata")
        if metadata is None:
            out["metadata"] = {"user_id": nonce}
        elif isinstance(metadata, dict):
            metadata.setdefault("user_id", nonce)
    else:
        out.setdefault("user", nonce)
    for message in out.get("messages") or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                message["content"] = [*content, {"type": "text", "text": f"[conformance run {nonce}]"}]
            else:
                message["content"] = f"{content or ''}\n\n[conformance run {nonce}]"
            break
    return out


def find_nonce(headers: Mapping[str, str], body: bytes) -> str | None:
    """The first nonce in the header values or the body, or None."""
    for value in headers.values():
        m = NONCE_RE.search(value.encode("latin-1", "replace"))
        if m:
            return m.group().decode()
    m = NONCE_RE.search(body)
    return m.group().decode() if m else None
