"""How the harness tags a request so the mock knows which scenario run it belongs to.

Proxies rename models, inject or drop system messages, rewrite the first or the last
user message, drop fields and drop headers they do not know. The nonce therefore
travels four ways at once: a header, the user-id field (OpenAI ``user``, Anthropic
``metadata.user_id``), and a line in both the *first* and the *last* user message
(one line when they are the same message). The mock searches header values and the
raw body for the pattern, so any one surviving copy is enough.

Placing is idempotent: a body that already carries a nonce line or user id of an
earlier run (a reused conversation) gets the new nonce in their place, never a
second line, so the mock is not misled by a stale copy.
"""

from __future__ import annotations

import copy
import re
import secrets
from collections.abc import Callable, Mapping
from typing import Any

from harness.core.dialects import OPENAI, WireDialect

NONCE_HEADER = "X-Conformance-Nonce"
_PREFIX = "tcc-"
_NONCE = re.escape(_PREFIX) + "[0-9a-f]{32}"  # 16 random bytes, in hex
_LINE_HEAD, _LINE_TAIL = "[conformance run ", "]"  # around the nonce in a user message
NONCE_RE = re.compile(_NONCE.encode())
_NONCE_TEXT = re.compile(_NONCE)
_LINE_RE = re.compile(re.escape(_LINE_HEAD) + _NONCE + re.escape(_LINE_TAIL))


def new_nonce() -> str:
    return _PREFIX + secrets.token_hex(16)


def nonce_line(nonce: str) -> str:
    """The text placed in user messages."""
    return _LINE_HEAD + nonce + _LINE_TAIL


def place_nonce(body: Mapping[str, Any], nonce: str, dialect: WireDialect = OPENAI) -> dict[str, Any]:
    """A copy of a request body carrying ``nonce`` in its user-id field (the dialect's
    ``user_id_path``: OpenAI ``user``, Anthropic ``metadata.user_id``; a value the client
    set itself is kept unless it is an old nonce) and in the first and last user messages
    (string content, or a text part added to a list of parts/blocks, which have the same
    shape in both dialects)."""
    out = copy.deepcopy(dict(body))
    *outer, key = dialect.requests.user_id_path
    holder: Any = out
    for name in outer:  # a missing object is made; a value the client set that is no object is left alone
        if holder.get(name) is None:
            holder[name] = {}
        holder = holder[name]
        if not isinstance(holder, dict):
            break
    if isinstance(holder, dict):
        _set_id(holder, key, nonce)
    messages = out.get("messages")
    if isinstance(messages, list):
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        for message in {id(m): m for m in (*users[:1], *users[-1:])}.values():
            _mark(message, nonce_line(nonce))
    return out


def _set_id(holder: dict[str, Any], key: str, nonce: str) -> None:
    current = holder.get(key)
    if current is None or (isinstance(current, str) and _NONCE_TEXT.fullmatch(current)):
        holder[key] = nonce


def _mark(message: dict[str, Any], line: str) -> None:
    """Put ``line`` in a message once: in place of an earlier run's line, else appended.
    Content that is neither text nor a list of parts is left as the client wrote it."""
    content = message.get("content")
    if isinstance(content, list):
        old = [i for i, part in enumerate(content) if _is_line_part(part)]
        if old:
            first = old[0]
            message["content"] = [
                {**part, "text": line} if i == first else part for i, part in enumerate(content) if i not in old[1:]
            ]
        else:
            message["content"] = [*content, {"type": "text", "text": line}]
    elif content is None or isinstance(content, str):
        text = content or ""
        if _LINE_RE.search(text):
            head, *rest = _LINE_RE.split(text)
            message["content"] = head + line + "".join(rest)
        else:
            message["content"] = f"{text}\n\n{line}" if text else line


def _is_line_part(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
        and _LINE_RE.fullmatch(part["text"]) is not None
    )


def find_nonce(headers: Mapping[str, str], body: bytes, armed: Callable[[str], bool] | None = None) -> str | None:
    """The nonce a request carries: of every nonce in the header values and the body,
    the first that ``armed`` accepts (a stale copy left by an earlier run must not win),
    else the first found (so the answer can name it), else None."""
    found: dict[str, None] = {}
    for value in headers.values():
        for match in NONCE_RE.findall(value.encode("latin-1", "replace")):
            found[match.decode()] = None
    for match in NONCE_RE.findall(body):
        found[match.decode()] = None
    if armed is not None:
        for nonce in found:
            if armed(nonce):
                return nonce
    return next(iter(found), None)
