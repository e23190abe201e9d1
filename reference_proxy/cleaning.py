"""Remove the vendor-only fields of a non-streaming answer that strict clients trip over.

The list is vllm-tool-proxy's: vLLM adds these to ``chat.completion`` bodies, and clients
that validate responses (OpenClaw) reject or mis-handle them.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

TOP_LEVEL = ("prompt_logprobs", "prompt_token_ids", "kv_transfer_params", "service_tier", "system_fingerprint")
CHOICE = ("stop_reason", "token_ids")
MESSAGE = ("reasoning", "reasoning_content", "refusal", "annotations", "audio", "function_call")
USAGE = ("prompt_tokens_details",)


def _drop(mapping: MutableMapping[str, Any], keys: tuple[str, ...]) -> None:
    for key in keys:
        mapping.pop(key, None)


def clean_completion(body: MutableMapping[str, Any]) -> None:
    """Strip vendor fields from a ``chat.completion`` body, in place."""
    _drop(body, TOP_LEVEL)
    usage = body.get("usage")
    if isinstance(usage, MutableMapping):
        _drop(usage, USAGE)
    for choice in body.get("choices") or ():
        if not isinstance(choice, MutableMapping):
            continue
        _drop(choice, CHOICE)
        message = choice.get("message")
        if isinstance(message, MutableMapping):
            _drop(message, MESSAGE)
            if not message.get("tool_calls") and "tool_calls" in message:
                del message["tool_calls"]
