"""A Responses client's ``namespace`` tools (Codex CLI's sub-agent and MCP functions) in front of a
chat upstream: their functions are offered by name, a call of one is answered with its namespace,
and the tools only a Responses server runs are named in the proxy's log."""

from __future__ import annotations

from typing import Any

import pytest

from reference_proxy.responses_answers import call_item, completion_to_response
from reference_proxy.responses_requests import hosted_tools, namespaced, responses_to_chat, unoffered_note
from reference_proxy.upstreams import REGISTRY, Upstream


def _fn(name: str) -> dict[str, Any]:
    return {"type": "function", "name": name, "parameters": {"type": "object", "properties": {}}}


CODEX_TOOLS = [_fn("exec_command"),
               {"type": "namespace", "name": "multi_agent_v1", "description": "sub-agents",
                "tools": [_fn("spawn_agent"), _fn("close_agent"), _fn("exec_command")]},
               {"type": "web_search", "external_web_access": True}]


@pytest.mark.parametrize(("tools", "expected"), [
    (CODEX_TOOLS, {"spawn_agent": "multi_agent_v1", "close_agent": "multi_agent_v1"}),
    ([_fn("a")], {}),
    ([{"type": "namespace", "name": "n", "tools": "not a list"}, {"type": "namespace", "tools": [_fn("b")]}], {}),
    ([{"type": "namespace", "name": "one", "tools": [_fn("x")]},
      {"type": "namespace", "name": "two", "tools": [_fn("x")]}], {"x": "one"}),
], ids=["codex", "no-namespace", "malformed", "first-namespace-keeps-a-name"])
def test_the_functions_a_namespace_groups(tools: list[Any], expected: dict[str, str]) -> None:
    assert namespaced({"tools": tools}) == expected


def test_a_namespace_s_functions_reach_a_chat_upstream_by_name() -> None:
    chat = responses_to_chat({"model": "m", "input": "hi", "tools": CODEX_TOOLS, "tool_choice": "auto"})
    assert [t["function"]["name"] for t in chat["tools"]] == ["exec_command", "spawn_agent", "close_agent"]
    assert chat["tool_choice"] == "auto"


@pytest.mark.parametrize(("tools", "expected"), [
    (CODEX_TOOLS, ["web_search"]),
    ([_fn("a"), {"type": "namespace", "name": "n", "tools": []}], []),
    ([{"type": "file_search"}, {"type": "web_search"}, "junk"], ["file_search", "web_search"]),
], ids=["codex", "callable-only", "several"])
def test_the_tools_only_a_responses_server_runs(tools: list[Any], expected: list[str]) -> None:
    assert hosted_tools({"tools": tools}) == expected


@pytest.mark.parametrize(("name", "namespace"), [("spawn_agent", "multi_agent_v1"), ("exec_command", None),
                                                 ("unknown", None)])
def test_a_call_of_a_namespaced_function_names_its_namespace(name: str, namespace: str | None) -> None:
    item = call_item("fc_1", "call_1", name, "{}", request={"tools": CODEX_TOOLS})
    assert item.get("namespace") == namespace
    completion = {"model": "m", "choices": [{"finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": "{}"}}]}}]}
    [call] = completion_to_response(completion, {"model": "m", "tools": CODEX_TOOLS})["output"]
    assert call.get("namespace") == namespace and call["name"] == name


@pytest.mark.parametrize("upstream", list(REGISTRY.values()), ids=list(REGISTRY))
def test_the_proxy_names_the_tools_it_cannot_offer(upstream: type[Upstream]) -> None:
    note = unoffered_note({"tools": CODEX_TOOLS}, upstream.name, upstream.runs_hosted_tools)
    said = upstream.name != "responses"  # only a Responses server runs them itself
    assert (note is not None and "web_search" in note and upstream.name in note) if said else note is None
    assert unoffered_note({"tools": [_fn("a")]}, upstream.name, upstream.runs_hosted_tools) is None
