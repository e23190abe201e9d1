"""The request checks the Responses API makes before it generates anything: pure, no I/O.

``input`` is required (a string, or a list of items); an item's role must be one the API
knows; a ``function_call_output`` answers a ``function_call`` item earlier in the same
input (without a stored previous response, the API refuses it with "No tool call found
for function call output with call_id …").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mock_backends.validation import RequestProblem

ROLES = frozenset({"user", "assistant", "system", "developer"})


def check_responses(body: Mapping[str, Any]) -> RequestProblem | None:
    """The first reason the Responses API refuses ``body``, or None."""
    items = body.get("input")
    if items is None:
        return RequestProblem("Missing required parameter: 'input'.", "missing_required_parameter", "input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return RequestProblem("Invalid type for 'input': expected a string or an array of input items.",
                              "invalid_type", "input")
    call_ids: set[str] = set()
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return RequestProblem(f"Invalid type for 'input[{i}]': expected an object.", "invalid_type", "input")
        kind = item.get("type", "message")
        if kind == "message":
            if item.get("role") not in ROLES:
                return RequestProblem(
                    f"Invalid value for 'input[{i}].role': {item.get('role')!r}. Supported values are: 'user', "
                    "'assistant', 'system' and 'developer'.", "invalid_value", "input")
        elif kind == "function_call":
            if isinstance(item.get("call_id"), str):
                call_ids.add(item["call_id"])
        elif kind == "function_call_output":
            answered = item.get("call_id")
            # With previous_response_id it may answer a call of the stored response, which the mock does not keep.
            if (not isinstance(answered, str) or answered not in call_ids) and not body.get("previous_response_id"):
                return RequestProblem(f"No tool call found for function call output with call_id {answered}.",
                                      "invalid_value", "input")
    return None
