"""The Responses reading offers a ``namespace`` tool's functions as tools (the model calls them as
any other), so UP-004 holds a proxy to offering them upstream; hosted tools are not functions."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.responses import RESPONSES


def _fn(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}


@pytest.mark.parametrize(("tools", "names"), [
    ([_fn("a"), {"type": "namespace", "name": "ns", "tools": [_fn("b"), _fn("c")]}, {"type": "web_search"}],
     ["a", "b", "c"]),
    ([{"type": "namespace", "name": "ns", "tools": [{"type": "custom", "name": "free"}, "junk"]}], []),
    ([{"type": "namespace", "name": "ns"}], []),
], ids=["functions-and-namespace", "no-function-inside", "no-tools-inside"])
def test_a_namespace_s_functions_are_offered_tools(tools: list[Any], names: list[str]) -> None:
    read = RESPONSES.requests.read({"model": "m", "input": "hi", "tools": tools})
    assert [t.name for t in read.tools] == names


def test_codex_s_request_offers_its_namespace_s_functions() -> None:
    codex = CLIENTS["codex"]
    body = codex.body({"model": "m", "messages": [{"role": "user", "content": "hi"}],
                       "tools": [{"type": "function", "function": _fn("case_tool") | {"type": None}}]})
    names = {t.name for t in RESPONSES.requests.read(body).tools}
    inner = {t["name"] for tool in codex.shape.tools if tool.get("type") == "namespace" for t in tool["tools"]}
    assert inner and inner <= names and "web_search" not in names
