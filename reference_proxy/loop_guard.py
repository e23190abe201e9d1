"""The loop guard: a conversation that keeps calling tools is stopped without asking the model.

vllm-tool-proxy's safety net against repetition loops burning tokens: past the limit of
``tool`` messages the proxy answers by itself with a short assistant message and
``finish_reason: "stop"``, streamed or not as the client asked.
"""

from __future__ import annotations

import time
from typing import Any

from reference_proxy.openai_stream import DONE, ChunkEmitter, new_completion_id
from reference_proxy.pipeline import ZERO_USAGE


def stop_message(tool_messages: int, limit: int) -> str:
    return (
        f"I stopped here: this conversation already holds {tool_messages} tool results "
        f"(the limit is {limit}), which looks like a loop. Please review the results so far "
        "and tell me how to continue."
    )


def stop_stream(text: str, model: str, *, include_usage: bool) -> str:
    emitter = ChunkEmitter(model)
    parts = [emitter.role(), emitter.content(text), emitter.finish("stop")]
    if include_usage:
        parts.append(emitter.usage(ZERO_USAGE))
    parts.append(DONE)
    return "".join(parts)


def stop_completion(text: str, model: str) -> dict[str, Any]:
    return {
        "id": new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": dict(ZERO_USAGE),
    }
