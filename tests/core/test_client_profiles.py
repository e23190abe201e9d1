"""The real clients' profiles: each lays a case's request out as its client sends it; the strict
upstream refuses what strict chat templates refuse; the reference proxy puts system text first
when such an upstream asks; Roo Code 3.37 on is served native calls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES
from harness.core.dialects.clients import CLIENTS, REAL_CLIENTS, ClientProfile
from harness.core.dialects.profiles import choose_profile
from harness.core.scenario.loading import load_scenario
from mock_backends.strict import MAX_TOOLS, TEMPLATE_ERROR, check_chat_strict
from reference_proxy.translate.system_first import late_system, system_first
from reference_proxy.xml_client import is_xml_client

ROOT = Path(__file__).resolve().parents[2]
SEVEN = ("copilot-chat", "copilot-responses", "claude-code", "codex", "opencode", "cline", "roo")

CHAT_CASE: dict[str, Any] = {
    "model": "m", "stream": True, "max_tokens": 100,
    "messages": [{"role": "system", "content": "Case system."}, {"role": "user", "content": "Weather in Bergen?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
}
MESSAGES_CASE: dict[str, Any] = {
    "model": "m", "stream": True, "max_tokens": 100, "system": "Case system.",
    "messages": [{"role": "user", "content": "Run the tests."}],
    "tools": [{"name": "Bash", "description": "the case's own Bash", "input_schema": {"type": "object"}}],
}


def _tool_names(profile: ClientProfile, body: dict[str, Any]) -> list[str]:
    return [t.get("name") or t.get("function", {}).get("name") or t.get("type") for t in body.get("tools", [])]


def test_the_seven_real_clients_are_registered_with_their_sources() -> None:
    assert tuple(p.name for p in REAL_CLIENTS) == SEVEN
    for profile in REAL_CLIENTS:
        assert CLIENTS[profile.name] is profile and profile.real and profile.shape is not None
        assert profile.shape.sources and profile.shape.data["version"], profile.name
        assert profile.judged_as is profile.base and not profile.judged_as.real


def test_the_shapes_are_current_and_small() -> None:
    """Rewritten from the fixtures, the shapes read from captured requests are as committed."""
    done = subprocess.run([sys.executable, "scripts/client_shapes.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    for path in (ROOT / "harness" / "core" / "dialects" / "client_data").glob("*.json"):
        assert path.stat().st_size < 56_000, path.name  # tool descriptions trimmed, indent kept


@pytest.mark.parametrize(("name", "answers"), [("copilot-chat", OPENAI), ("opencode", OPENAI), ("roo", OPENAI),
                                               ("cline", OPENAI), ("copilot-responses", RESPONSES),
                                               ("codex", RESPONSES), ("claude-code", ANTHROPIC)])
def test_each_client_speaks_its_dialect(name: str, answers: object) -> None:
    assert CLIENTS[name].answers is answers


@pytest.mark.parametrize("name", ["copilot-chat", "opencode", "roo", "cline"])
def test_a_chat_client_keeps_the_case_and_adds_its_own(name: str) -> None:
    profile = CLIENTS[name]
    body = profile.body(CHAT_CASE)
    messages = body["messages"]
    assert messages[0]["role"] == "system" and "Case system." in messages[0]["content"]
    assert messages[0]["content"].index("Case system.") > 0  # the client's own text first
    assert "Weather in Bergen?" in json.dumps(messages[-1])
    names = _tool_names(profile, body)
    assert names[-1] == "get_weather" and names.count("get_weather") == 1
    assert len(names) == len(profile.shape.tools) + 1 if profile.shape else False


def test_copilot_sends_a_second_system_message_after_a_user_message_and_its_fields() -> None:
    body = CLIENTS["copilot-chat"].body(CHAT_CASE)
    assert late_system(body["messages"])
    assert [m["role"] for m in body["messages"]] == ["system", "user", "system", "user"]
    assert body["messages"][0]["copilot_cache_control"] == {"type": "ephemeral"}
    assert "<userRequest>" in body["messages"][-1]["content"]
    assert body["n"] == 1 and body["stream_options"] == {"include_usage": True} and "max_tokens" not in body
    assert CLIENTS["copilot-chat"].headers["Copilot-Integration-Id"] == "vscode-chat"


def test_claude_code_asks_with_its_query_reminders_and_a_system_message_inside_messages() -> None:
    profile = CLIENTS["claude-code"]
    assert profile.endpoint == "/messages?beta=true"
    body = profile.body(MESSAGES_CASE)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "system"]
    assert "<system-reminder>" in body["messages"][0]["content"][0]["text"]
    assert body["system"][-1] == {"type": "text", "text": "Case system."}
    assert body["thinking"] == {"type": "adaptive"} and "context_management" in body
    assert body["max_tokens"] == 100  # the case's own kept
    names = _tool_names(profile, body)
    assert names.count("Bash") == 1 and body["tools"][-1]["description"] == "the case's own Bash"
    assert "mid-conversation-system-2026-04-07" in profile.headers["anthropic-beta"]


def test_codex_asks_with_developer_items_and_tools_no_chat_upstream_can_call() -> None:
    body = CLIENTS["codex"].body(CHAT_CASE)
    roles = [i.get("role") for i in body["input"]]
    assert roles[:3] == ["developer", "developer", "system"]  # its own first, then the case's system text
    assert {t["type"] for t in body["tools"]} >= {"function", "namespace", "web_search"}
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 100


def test_a_case_without_tools_is_not_meaningful_under_a_client_that_always_sends_its_own() -> None:
    no_tools = load_scenario(ROOT / "scenarios" / "hermes" / "hermes.no-tools.yaml")
    assert not no_tools.client.request.get("tools")
    _, skip = choose_profile(no_tools, CLIENTS["copilot-chat"], frozenset())
    assert skip is not None and "declares none" in skip


@pytest.mark.parametrize(("messages", "refused"), [
    ([{"role": "system", "content": "a"}, {"role": "user", "content": "b"}], False),
    ([{"role": "system", "content": "a"}, {"role": "developer", "content": "b"}, {"role": "user", "content": "c"}],
     False),
    ([{"role": "user", "content": "a"}, {"role": "system", "content": "b"}], True),
    ([{"role": "system", "content": "a"}, {"role": "user", "content": "b"}, {"role": "assistant", "content": "c"},
      {"role": "system", "content": "d"}, {"role": "user", "content": "e"}], True),
])
def test_the_strict_upstream_refuses_a_system_message_after_a_turn(messages: list[Any], refused: bool) -> None:
    problem = check_chat_strict({"messages": messages})
    assert (problem is not None) is refused
    if problem is not None:
        assert problem.message == TEMPLATE_ERROR


def test_the_strict_upstream_refuses_more_tools_than_openai_takes() -> None:
    tool = {"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}
    messages = [{"role": "user", "content": "a"}]
    assert check_chat_strict({"messages": messages, "tools": [tool] * MAX_TOOLS}) is None
    problem = check_chat_strict({"messages": messages, "tools": [tool] * (MAX_TOOLS + 1)})
    assert problem is not None and "maximum length 128" in problem.message


def test_system_text_first_keeps_every_text_in_order_and_the_turns() -> None:
    body = CLIENTS["copilot-chat"].body(CHAT_CASE)
    first = system_first(body)
    assert not late_system(first["messages"])
    assert [m["role"] for m in first["messages"]] == ["system", "user", "user"]
    system = first["messages"][0]["content"]
    assert system.index("Case system.") < system.index("custom instructions")
    assert system_first(CHAT_CASE) == CHAT_CASE  # nothing to move: as it came


@pytest.mark.parametrize(("agent", "xml"), [
    ("RooCode/3.53.0", False), ("RooCode/3.37.0", False), ("RooCode/3.36.16", True), ("RooCode/3", True),
    ("roo-cline/3.3.0", True), ("Cline/3.38.0", True), ("Kilo-Code/4.1", True), ("Groovy/1.0", False),
])
def test_roo_code_reads_native_calls_from_3_37_on(agent: str, xml: bool) -> None:
    from reference_proxy.config import ProxyConfig

    assert is_xml_client(agent, ProxyConfig(upstream="http://h:1/v1").xml_client_patterns) is xml
