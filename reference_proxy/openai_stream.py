"""The OpenAI ``chat.completion.chunk`` events the proxy writes, as SSE text.

Every chunk of one response shares ``id``, ``created`` and ``model``; that envelope
is serialized once per choice and only the delta is serialized per event, so
the per-frame cost is one small ``json.dumps``.
"""

from __future__ import annotations

import json
import secrets
import string
import time
from collections.abc import Mapping
from typing import Any

DONE = "data: [DONE]\n\n"

_ALPHANUMERIC = string.ascii_letters + string.digits
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def dumps(value: Any) -> str:
    """Compact JSON, non-ASCII written as is."""
    return _encode(value)


def is_plain(text: str) -> bool:
    """Printable text without quotes or backslashes, most of what a model writes: the
    same between the quotes of a JSON string literal (nothing to escape or unescape)."""
    return '"' not in text and "\\" not in text and text.isprintable()


def string_literal(text: str) -> str:
    """``dumps`` of a string, without the encoder for plain text."""
    return f'"{text}"' if is_plain(text) else _encode(text)


def to_wire(text: str) -> bytes:
    """UTF-8 bytes of SSE text. A lone surrogate (from a ``\\udXXX`` escape upstream)
    can only sit inside a JSON string, so writing it back as that escape is exact."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def new_completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(16)


def new_call_id() -> str:
    """``call_`` and 24 random alphanumerics: unique across requests, not only within one."""
    return "call_" + "".join(secrets.choice(_ALPHANUMERIC) for _ in range(24))


def sse(payload: Mapping[str, Any]) -> str:
    return f"data: {dumps(payload)}\n\n"


class ChunkEmitter:
    """Writes the chunks of one streamed response."""

    __slots__ = ("completion_id", "created", "model", "_envelope", "_heads")

    def __init__(self, model: str, *, completion_id: str | None = None, created: int | None = None) -> None:
        self.completion_id = completion_id or new_completion_id()
        self.created = int(time.time()) if created is None else created
        self.model = model
        self._envelope = (
            f'data: {{"id":{dumps(self.completion_id)},"object":"chat.completion.chunk",'
            f'"created":{self.created},"model":{dumps(model)}'
        )
        self._heads: dict[int, str] = {}

    def _head(self, choice: int) -> str:
        head = self._heads.get(choice)
        if head is None:
            head = self._heads[choice] = f'{self._envelope},"choices":[{{"index":{choice},"delta":'
        return head

    def _delta(self, choice: int, delta_json: str) -> str:
        return f'{self._head(choice)}{delta_json},"finish_reason":null}}]}}\n\n'

    def role(self, choice: int = 0) -> str:
        return self._delta(choice, '{"role":"assistant"}')

    def content(self, text: str, choice: int = 0) -> str:
        return self._delta(choice, f'{{"content":{string_literal(text)}}}')

    def tool_start(self, index: int, call_id: str, name: str, choice: int = 0) -> str:
        """A call's first delta: index, id, type and the whole name, empty arguments."""
        return self._delta(
            choice,
            f'{{"tool_calls":[{{"index":{index},"id":{dumps(call_id)},"type":"function",'
            f'"function":{{"name":{dumps(name)},"arguments":""}}}}]}}',
        )

    def tool_arguments(self, index: int, fragment: str, choice: int = 0) -> str:
        """A later delta of a call: only index and an arguments fragment."""
        return self._delta(choice, f'{{"tool_calls":[{{"index":{index},"function":{{"arguments":{dumps(fragment)}}}}}]}}')

    def finish(self, reason: str, choice: int = 0) -> str:
        return f'{self._head(choice)}{{}},"finish_reason":{dumps(reason)}}}]}}\n\n'

    def usage(self, usage: Mapping[str, Any]) -> str:
        return f'{self._envelope},"choices":[],"usage":{dumps(usage)}}}\n\n'


def error_event(error: Mapping[str, Any]) -> str:
    """An error after the stream started: ``data: {"error": {...}}`` (openai-python raises APIError on it)."""
    return sse({"error": error})
