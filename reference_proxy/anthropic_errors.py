"""Errors in the shape Anthropic clients parse: ``{"type": "error", "error": {"type", "message"}}``.

The proxy raises one kind of error (``ProxyError``, whose body is in the OpenAI shape)
on every path; the Messages routes render it here. An upstream answer that already
is a Messages error passes unchanged; anything else is wrapped, its message kept, with
the error ``type`` the Messages API uses for the status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reference_proxy.errors import ProxyError

#: The error ``type`` the Messages API reports with each status.
TYPE_BY_STATUS: Mapping[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
ERROR_TYPES = frozenset(TYPE_BY_STATUS.values())
#: The status a non-streaming client gets when the upstream reported an error inside its stream.
STATUS_BY_TYPE: Mapping[str, int] = {t: s for s, t in TYPE_BY_STATUS.items()}
_TYPE_BY_CODE: Mapping[str, str] = {"upstream_timeout": "timeout_error"}


def error_type_for(status: int) -> str:
    """The Messages error type of ``status``: other 4xx are invalid_request_error, other 5xx api_error."""
    return TYPE_BY_STATUS.get(status, "api_error" if status >= 500 else "invalid_request_error")


def anthropic_error(type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": type, "message": message}}


def is_anthropic_error(payload: Any) -> bool:
    """Whether ``payload`` already is a Messages error body."""
    if not isinstance(payload, Mapping) or payload.get("type") != "error":
        return False
    error = payload.get("error")
    return (
        isinstance(error, Mapping)
        and isinstance(error.get("type"), str)
        and bool(error["type"])
        and isinstance(error.get("message"), str)
        and bool(error["message"])
    )


def _message(error: Mapping[str, Any]) -> str:
    message = error.get("message")
    return message if isinstance(message, str) and message else "upstream error"


def render_error(error: ProxyError) -> dict[str, Any]:
    """The body a Messages client gets for ``error`` (its status and headers stay the error's)."""
    if is_anthropic_error(error.upstream):
        return dict(error.upstream)
    inner = error.body.get("error")
    inner = inner if isinstance(inner, Mapping) else {}
    kind = inner.get("type")
    if not (isinstance(kind, str) and kind in ERROR_TYPES):
        kind = error_type_for(error.status)
    return anthropic_error(kind, _message(inner) if inner else error.message)


def stream_error(error: Mapping[str, Any]) -> dict[str, Any]:
    """The data of the ``error`` event that ends a started stream, from an error object
    (a Messages ``error`` member, or an OpenAI-shaped one from the relay)."""
    kind = error.get("type")
    if not (isinstance(kind, str) and kind in ERROR_TYPES):
        code = error.get("code")
        kind = _TYPE_BY_CODE.get(code, "api_error") if isinstance(code, str) else "api_error"
    return anthropic_error(kind, _message(error))


def status_for(error: Mapping[str, Any], default: int = 502) -> int:
    """The status of an answer that failed with the Messages ``error`` object ``error``."""
    kind = error.get("type")
    status = STATUS_BY_TYPE.get(kind) if isinstance(kind, str) else None
    return status if status is not None and status >= 400 else default
