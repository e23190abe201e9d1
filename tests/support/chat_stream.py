"""Reading a chat-completions stream as a client does: the payloads of its SSE text, and
the fold of its chunks with every assertion of the chunk grammar clients rely on."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

CALL_ID = re.compile(r"^call_[A-Za-z0-9]{24}$")


def parse_sse(text: str) -> list[Any]:
    """The payloads of the pipeline's SSE text ("[DONE]" kept as the string)."""
    assert text.endswith("\n\n") or text == ""
    out: list[Any] = []
    for block in text.split("\n\n"):
        if not block:
            continue
        assert block.startswith("data: ") and "\n" not in block, block
        data = block[len("data: ") :]
        out.append(data if data == "[DONE]" else json.loads(data))
    return out


@dataclass
class Folded:
    content: str = ""
    calls: list[tuple[str, Any]] = field(default_factory=list)
    finish: str | None = None
    usage: Any = None
    error: Any = None
    done: bool = False


def check_and_fold(payloads: list[Any]) -> Folded:
    """Fold a chunk sequence, asserting the shape every client relies on."""
    folded = Folded()
    ids: list[str] = []
    envelope: set[tuple[Any, Any, Any]] = set()
    seen_role = False
    args: dict[int, list[str]] = {}
    for i, p in enumerate(payloads):
        if p == "[DONE]":
            assert i == len(payloads) - 1, "[DONE] must be last"
            folded.done = True
            continue
        if "error" in p:
            assert set(p["error"]) >= {"message", "type", "param", "code"}
            folded.error = p["error"]
            continue
        assert p["object"] == "chat.completion.chunk"
        envelope.add((p["id"], p["created"], p["model"]))
        if not p["choices"]:
            assert "usage" in p and folded.finish is not None
            folded.usage = p["usage"]
            continue
        assert folded.usage is None, "the usage chunk comes last"
        (choice,) = p["choices"]
        delta = choice["delta"]
        if i == 0:
            assert delta == {"role": "assistant"}
            seen_role = True
            continue
        assert "role" not in delta, "one role chunk only"
        assert folded.finish is None, "nothing after the finish chunk"
        if choice["finish_reason"] is not None:
            assert delta == {}
            folded.finish = choice["finish_reason"]
            continue
        if "content" in delta:
            assert isinstance(delta["content"], str) and delta["content"]
            folded.content += delta["content"]
        for tc in delta.get("tool_calls", ()):
            if "id" in tc:
                assert CALL_ID.match(tc["id"]) and tc["id"] not in ids
                assert tc["type"] == "function" and tc["function"]["arguments"] == ""
                assert tc["index"] == len(ids), "indices 0..n-1 in order"
                ids.append(tc["id"])
                folded.calls.append((tc["function"]["name"], None))
                args[tc["index"]] = []
            else:
                assert set(tc) == {"index", "function"} and set(tc["function"]) == {"arguments"}
                args[tc["index"]].append(tc["function"]["arguments"])
    assert seen_role or folded.error is not None
    assert len(envelope) <= 1, "one id, created and model for the whole stream"
    folded.calls = [(name, json.loads("".join(args[i]))) for i, (name, _) in enumerate(folded.calls)]
    return folded
