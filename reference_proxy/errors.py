"""Errors in the shape every OpenAI client parses: ``{"error": {message, type, param, code}}``.

The proxy never lets a traceback or a framework's own error format reach a client;
everything that can go wrong is turned into one of these, with a status code that
says whose fault it was (400 the client's, 502/504 the upstream's).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INVALID_REQUEST = "invalid_request_error"
UPSTREAM_ERROR = "upstream_error"
SERVER_ERROR = "server_error"


def error_body(message: str, *, type: str, code: str | int | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


class ProxyError(Exception):
    """An answer the proxy gives instead of forwarding: status, OpenAI error body, headers."""

    def __init__(
        self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None, *, upstream: Any = None
    ) -> None:
        self.status = status
        self.body = body
        self.headers: Mapping[str, str] = headers or {}
        self.upstream = upstream  # the upstream's own error payload, when the error is the upstream's answer
        super().__init__(status, self.message)

    @property
    def message(self) -> str:
        error = self.body.get("error")
        return str(error.get("message")) if isinstance(error, Mapping) else str(self.body)


def invalid_request(message: str, *, param: str | None = None, code: str | None = None) -> ProxyError:
    return ProxyError(400, error_body(message, type=INVALID_REQUEST, param=param, code=code))


def request_timeout(seconds: float) -> ProxyError:
    return ProxyError(
        408,
        error_body(
            f"the request body did not arrive: the client paused for more than {seconds:g} s while sending it",
            type=INVALID_REQUEST,
            code="request_timeout",
        ),
    )


def upstream_unreachable(detail: str) -> ProxyError:
    return ProxyError(
        502, error_body(f"upstream unreachable: {detail}", type=UPSTREAM_ERROR, code="upstream_unreachable")
    )


def upstream_timeout(detail: str) -> ProxyError:
    return ProxyError(504, error_body(f"upstream timed out: {detail}", type=UPSTREAM_ERROR, code="upstream_timeout"))


def upstream_bad_response(detail: str) -> ProxyError:
    return ProxyError(502, error_body(f"upstream sent an invalid response: {detail}", type=UPSTREAM_ERROR, code="bad_upstream_response"))


def internal_error() -> ProxyError:
    return ProxyError(500, error_body("internal proxy error", type=SERVER_ERROR, code="internal_error"))


def as_openai_error(payload: Any, *, fallback_message: str, fallback_code: str | int | None) -> dict[str, Any]:
    """An upstream's error payload in the OpenAI shape.

    Already-OpenAI bodies pass unchanged; vLLM's older flat shape
    (``{"object": "error", "message": ..., "type": ..., "code": ...}``), FastAPI's
    ``{"detail": ...}`` and plain text are wrapped, keeping their message.
    """
    if isinstance(payload, Mapping):
        error = payload.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return {
                "error": {
                    "message": error["message"],
                    "type": error.get("type") if isinstance(error.get("type"), str) else UPSTREAM_ERROR,
                    "param": error.get("param"),
                    "code": error.get("code"),
                    **{k: v for k, v in error.items() if k not in ("message", "type", "param", "code")},
                }
            }
        if isinstance(error, str):
            return error_body(error, type=UPSTREAM_ERROR, code=fallback_code)
        if isinstance(payload.get("message"), str):
            kind = payload.get("type")
            param = payload.get("param")
            return error_body(
                payload["message"],
                type=kind if isinstance(kind, str) else UPSTREAM_ERROR,
                code=payload.get("code", fallback_code),
                param=param if isinstance(param, str) else None,
            )
        if "detail" in payload:
            detail = payload["detail"]
            text = detail if isinstance(detail, str) else json.dumps(detail, ensure_ascii=False)
            return error_body(text, type=UPSTREAM_ERROR, code=fallback_code)
    if isinstance(payload, str) and payload.strip():
        return error_body(payload.strip()[:2000], type=UPSTREAM_ERROR, code=fallback_code)
    return error_body(fallback_message, type=UPSTREAM_ERROR, code=fallback_code)


def upstream_status_error(status: int, raw: bytes, retry_after: str | None) -> ProxyError:
    """The upstream's own 4xx/5xx answer, passed on with its status (and ``Retry-After``)."""
    text = raw.decode("utf-8", "replace")
    try:
        payload: Any = json.loads(text)
    except ValueError:
        payload = text
    body = as_openai_error(payload, fallback_message=f"upstream answered HTTP {status}", fallback_code=status)
    headers = {"retry-after": retry_after} if retry_after else {}
    return ProxyError(status, body, headers, upstream=payload)
