"""OpenAI Responses (``POST /responses``): a native call is one ``function_call`` output
item whose arguments stream as ``response.function_call_arguments.delta`` events.

A call is an item of its own, as an Anthropic ``tool_use`` block is, so a backend
script writes it as the same one-call-whole frame; errors are OpenAI's shape. The
API has no finish reason: an answer is ``completed`` (with calls or without) or
``incomplete`` for ``max_output_tokens``; a script names which with the words below.
"""

from __future__ import annotations

from harness.dialects.anthropic import ToolUseCodec
from harness.dialects.base import WireDialect
from harness.dialects.openai import OPENAI

# The finish words of a Responses backend script, and the status each ends with on the wire.
STATUS = {"completed": "completed", "function_calls": "completed", "max_output_tokens": "incomplete"}

RESPONSES = WireDialect(
    name="responses",
    title="OpenAI Responses",
    endpoint="/responses",
    default_finish="completed",
    finish_names={"completed": "end", "function_calls": "tool", "max_output_tokens": "length"},
    error_types=OPENAI.error_types,
    client_error_type=OPENAI.client_error_type,
    server_error_type=OPENAI.server_error_type,
    calls=ToolUseCodec("OpenAI Responses"),
    errors=OPENAI.errors,
    usage_names={"input": "input_tokens", "output": "output_tokens"},
    finish_aliases={"stop-sequence": "completed"},
)
