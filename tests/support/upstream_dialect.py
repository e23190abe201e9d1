"""What the end-to-end tests of the dialects only an upstream speaks (Kiro, Ollama) share: the
gateway's Chat Completions request the reference proxy translates, a scenario whose backend
speaks the dialect, the library served in it, and the proxy's reading of the dialect's bytes
however they are cut."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from harness.core.dialects import NotPortable, WireDialect
from harness.core.dialects.script import serve_as
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from support.library import load_library

TOOLS = [{"type": "function", "function": {"name": "Read", "parameters": {
    "type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}}]


def gateway_chat(model: str, user: Any = "Read a.txt", **fields: Any) -> dict[str, Any]:
    """A gateway's Chat Completions request: system text, a question (``user``), a call and its
    result, and the next question."""
    return {"model": model, "tools": TOOLS, **fields, "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": user},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": '{"file_path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        {"role": "user", "content": "And now?"},
    ]}


def dialect_scenario(dialect: WireDialect, frames: list[Any], **backend: Any) -> Scenario:
    """A scenario whose backend speaks ``dialect`` and sends ``frames``."""
    return parse_scenario({
        "id": f"{dialect.name}-mock", "title": "t", "source": "synthetic",
        "backend": {"dialect": dialect.name, "frames": frames, **backend},
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}},
        "expect": {},
    })


def portable(dialect: WireDialect) -> list[Scenario]:
    """Every library scenario that can be served in ``dialect``, served in it."""
    out = []
    for s in load_library():
        try:
            out.append(serve_as(s, dialect))
        except NotPortable:
            pass
    return out


class ChunkReader(Protocol):
    """The proxy's reader of one upstream dialect's items, writing Chat Completions chunks."""

    def read(self, item: str) -> list[Any]: ...

    def finish(self) -> list[Any]: ...


def proxy_chunks(data: bytes, cuts: list[int], items: Callable[[bytes], Iterable[str]],
                 reader: ChunkReader) -> list[Any]:
    """What ``reader`` makes of ``data`` arriving in pieces cut at ``cuts`` (``items`` takes each
    piece and gives the whole items it completes): each chunk as ``(delta, finish_reason)``,
    ``[DONE]`` as it is."""
    out: list[Any] = []
    last = 0
    for cut in sorted({c for c in cuts if 0 < c < len(data)}) + [len(data)]:
        for item in items(data[last:cut]):
            out += reader.read(item)
        last = cut
    out += reader.finish()
    return [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) if isinstance(c, dict) else c for c in out]
