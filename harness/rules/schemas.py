"""The wire schemas (OpenAI and Anthropic) the rules validate against, JSON Schema files beside the scenario schema."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

import jsonschema

SchemaName = Literal[
    "chat_completion_chunk",
    "chat_completion",
    "openai_error",
    "anthropic_stream_event",
    "anthropic_message",
    "anthropic_error",
]


@cache
def validator(name: SchemaName) -> jsonschema.Draft202012Validator:
    text = resources.files("harness").joinpath(f"schemas/{name}.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return jsonschema.Draft202012Validator(schema)


def schema_errors(instance: Any, name: SchemaName, limit: int = 3) -> list[str]:
    """Up to ``limit`` readable problems of ``instance`` against schema ``name``."""
    out: list[str] = []
    for error in sorted(validator(name).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        where = "/" + "/".join(str(p) for p in error.absolute_path)
        message = error.message if len(error.message) <= 160 else error.message[:159] + "…"
        out.append(f"{where}: {message}")
        if len(out) >= limit:
            break
    return out
