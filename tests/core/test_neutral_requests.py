"""Each dialect's reading of a request body as a neutral request (``WireDialect.requests``):
the real shapes of each API, odd but valid ones, broken ones (read as something, never
raised on), and one conversation said in the three APIs reading the same."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.dialects import ANTHROPIC, DIALECTS, OPENAI, RESPONSES, WireDialect, posted_to
from harness.core.dialects.request import NeutralRequest, Tool, ToolCall, ChoiceIntent, ToolResult, Turn
from reference_proxy.responses_requests import chat_to_responses_request
from reference_proxy.translate.requests import chat_to_messages, messages_to_chat

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

# One conversation: a system prompt, a question, a call with its result, and a follow-up.
CHAT = {
    "model": "m", "stream": True, "tool_choice": "required",
    "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file.", "parameters": SCHEMA}}],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in a.txt?"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "hello"},
        {"role": "user", "content": "And?"},
    ],
}
MESSAGES = {
    "model": "m", "max_tokens": 100, "stream": True, "system": "Be brief.", "tool_choice": {"type": "any"},
    "tools": [{"name": "read", "description": "Read a file.", "input_schema": SCHEMA}],
    "messages": [
        {"role": "user", "content": "What is in a.txt?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a.txt"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "hello"},
                                     {"type": "text", "text": "And?"}]},
    ],
}
RESPONSES_BODY = {
    "model": "m", "stream": True, "instructions": "Be brief.", "tool_choice": "required",
    "tools": [{"type": "function", "name": "read", "description": "Read a file.", "parameters": SCHEMA}],
    "input": [
        {"role": "user", "content": "What is in a.txt?"},
        {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": '{"path": "a.txt"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "hello"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "And?"}]},
    ],
}
READ = ToolCall("call_1", "read", {"path": "a.txt"})
EXPECTED = NeutralRequest(
    system=("Be brief.",),
    turns=(Turn("user", ("What is in a.txt?",)), Turn("assistant", calls=(READ,)),
           Turn("user", ("And?",), results=(ToolResult("call_1", ("hello",)),))),
    tools=(Tool("read", SCHEMA, "Read a file."),),
    tool_choice=ChoiceIntent("required"),
    stream=True,
)


@pytest.mark.parametrize(("dialect", "body"), [(OPENAI, CHAT), (ANTHROPIC, MESSAGES), (RESPONSES, RESPONSES_BODY)],
                         ids=["openai", "anthropic", "responses"])
def test_one_conversation_reads_the_same_in_every_api(dialect: WireDialect, body: dict[str, Any]) -> None:
    assert dialect.requests.read(body) == EXPECTED


def _calls_results_tools(request: NeutralRequest) -> tuple[Any, ...]:
    return request.system, request.calls, request.results, request.tools, request.tool_choice


@pytest.mark.parametrize(("reader", "body", "translate"), [
    (ANTHROPIC, CHAT, chat_to_messages),
    (OPENAI, MESSAGES, messages_to_chat),
    (RESPONSES, CHAT, lambda body: chat_to_responses_request(body, True)),
], ids=["chat-to-messages", "messages-to-chat", "chat-to-responses"])
def test_the_reference_proxys_translation_reads_as_the_request_it_translated(
        reader: WireDialect, body: dict[str, Any], translate: Any) -> None:
    """What a correct translator sends reads as what the client sent (the reference proxy's own
    translations, an independent implementation of both shapes)."""
    assert _calls_results_tools(reader.requests.read(translate(body))) == _calls_results_tools(EXPECTED)


# (id, dialect, body, what the reading holds: attribute -> value)
CASES: list[tuple[str, WireDialect, Any, dict[str, Any]]] = [
    ("chat-content-as-parts", OPENAI,
     {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}},
                                                {"type": "text", "text": "b"}]}]},
     {"turns": (Turn("user", ("a", "b")),)}),
    ("chat-developer-is-system", OPENAI,
     {"messages": [{"role": "developer", "content": [{"type": "text", "text": "rules"}]},
                   {"role": "system", "content": "more"}]},
     {"system": ("rules", "more"), "turns": ()}),
    ("chat-tool-results-in-a-row-are-one-user-turn", OPENAI,
     {"messages": [{"role": "tool", "tool_call_id": "a", "content": "1"},
                   {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "2"}]}]},
     {"turns": (Turn("user", results=(ToolResult("a", ("1",)), ToolResult("b", ("2",)))),)}),
    ("chat-empty-arguments-are-none", OPENAI,
     {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "now", "arguments": ""}}]}]},
     {"calls": (ToolCall("c", "now", {}),)}),
    ("chat-arguments-that-are-no-json-stay-text", OPENAI,
     {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{bad"}}]}]},
     {"calls": (ToolCall("c", "f", "{bad"),)}),
    ("chat-call-without-a-name-is-no-call", OPENAI,
     {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {"input": "x"}}]}]},
     {"calls": ()}),
    ("chat-arguments-nested-too-deep-stay-text", OPENAI,
     {"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
                                                                             "arguments": "[" * 100_000}}]}]},
     {"calls": (ToolCall("c", "f", "[" * 100_000),)}),
    ("chat-named-tool-choice", OPENAI, {"tool_choice": {"type": "function", "function": {"name": "read"}}},
     {"tool_choice": ChoiceIntent("named", "read")}),
    ("chat-none", OPENAI, {"tool_choice": "none"}, {"tool_choice": ChoiceIntent("none")}),
    ("chat-allowed-tools-is-another-form", OPENAI,
     {"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}},
     {"tool_choice": ChoiceIntent("other")}),
    ("chat-function-without-parameters", OPENAI, {"tools": [{"type": "function", "function": {"name": "now"}}]},
     {"tools": (Tool("now", None),)}),
    ("chat-custom-tool-is-no-function", OPENAI, {"tools": [{"type": "custom", "custom": {"name": "patch"}}]},
     {"tools": ()}),
    ("messages-system-as-blocks", ANTHROPIC,
     {"system": [{"type": "text", "text": "one", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "two"}]},
     {"system": ("one", "two")}),
    ("messages-system-message-inside-the-conversation", ANTHROPIC,  # Claude Code's <system-reminder>
     {"system": "top", "messages": [{"role": "user", "content": "hi"},
                                    {"role": "system", "content": [{"type": "text", "text": "reminder 1"}]},
                                    {"role": "assistant", "content": "ok"},
                                    {"role": "system", "content": "reminder 2"}]},
     {"system": ("top", "reminder 1", "reminder 2"), "turns": (Turn("user", ("hi",)), Turn("assistant", ("ok",)))}),
    ("messages-tool-result-as-blocks", ANTHROPIC,
     {"messages": [{"role": "user", "content": [
         {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "x"},
                                                                 {"type": "image", "source": {}}]}]}]},
     {"results": (ToolResult("t", ("x",)),)}),
    ("messages-text-and-calls-in-one-turn", ANTHROPIC,
     {"messages": [{"role": "assistant", "content": [
         {"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "Let me look."},
         {"type": "tool_use", "id": "t1", "name": "a", "input": {}}, {"type": "tool_use", "id": "t2", "name": "b",
                                                                        "input": {"x": [1]}}]}]},
     {"turns": (Turn("assistant", ("Let me look.",), (ToolCall("t1", "a", {}), ToolCall("t2", "b", {"x": [1]}))),)}),
    ("messages-server-tool-is-no-function", ANTHROPIC,
     {"tools": [{"type": "web_search_20250305", "name": "web_search"}, {"type": "custom", "name": "f",
                                                                         "input_schema": {"type": "object"}}]},
     {"tools": (Tool("f", {"type": "object"}),)}),
    ("messages-named-tool", ANTHROPIC, {"tool_choice": {"type": "tool", "name": "f"}},
     {"tool_choice": ChoiceIntent("named", "f")}),
    ("messages-none", ANTHROPIC, {"tool_choice": {"type": "none"}}, {"tool_choice": ChoiceIntent("none")}),
    ("messages-auto", ANTHROPIC, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
     {"tool_choice": ChoiceIntent("auto")}),
    ("responses-input-as-string", RESPONSES, {"input": "hi"}, {"turns": (Turn("user", ("hi",)),)}),
    ("responses-system-message-and-instructions", RESPONSES,
     {"instructions": "a", "input": [{"type": "message", "role": "developer", "content": "b"}]},
     {"system": ("a", "b")}),
    ("responses-named-function", RESPONSES, {"tool_choice": {"type": "function", "name": "f"}},
     {"tool_choice": ChoiceIntent("named", "f")}),
    ("responses-hosted-tools-are-no-functions", RESPONSES,
     {"tools": [{"type": "web_search"}, {"type": "function", "name": "f", "parameters": SCHEMA}],
      "tool_choice": {"type": "web_search"}},
     {"tools": (Tool("f", SCHEMA),), "tool_choice": ChoiceIntent("other")}),
    ("responses-output-as-parts", RESPONSES,
     {"input": [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "r"}]},
                {"type": "reasoning", "summary": []}]},
     {"results": (ToolResult("c", ("r",)),)}),
]


@pytest.mark.parametrize(("dialect", "body", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_odd_but_valid_shapes(dialect: WireDialect, body: Any, expected: dict[str, Any]) -> None:
    read = dialect.requests.read(body)
    assert {key: getattr(read, key) for key in expected} == expected


BROKEN: list[Any] = [None, [], "text", {"messages": "x", "tools": {"a": 1}, "tool_choice": ["auto"], "system": 3,
                                        "input": 5, "instructions": [1]},
                     {"messages": [None, {"role": ["user"], "content": 1}, {"role": "assistant", "tool_calls": [3]}],
                      "tools": [None, {"function": "x"}, {"name": 3}]}]


@pytest.mark.parametrize("dialect", list(DIALECTS.values()), ids=list(DIALECTS))
@pytest.mark.parametrize("body", BROKEN, ids=range(len(BROKEN)))
def test_a_broken_body_reads_as_something(dialect: WireDialect, body: Any) -> None:
    assert isinstance(dialect.requests.read(body), NeutralRequest)


@pytest.mark.parametrize(("path", "name"), [("/v1/chat/completions", "openai"), ("/openai/v1/messages/", "anthropic"),
                                            ("/responses", "responses"), ("/v1/models", None),
                                            ("/v1/messages/count_tokens", None)])
def test_the_dialect_a_request_was_posted_to(path: str, name: str | None) -> None:
    found = posted_to(path)
    assert (found.name if found is not None else None) == name


# Kiro's request has no tool_choice and keeps its tools inside the conversation (tests/core/test_kiro_dialect.py).
CHOOSING = [d for d in DIALECTS.values() if d.requests.tool_choice("auto") is not None]


@pytest.mark.parametrize("dialect", CHOOSING, ids=[d.name for d in CHOOSING])
@pytest.mark.parametrize(("kind", "intent"), [("auto", ChoiceIntent("auto")), ("any", ChoiceIntent("required")),
                                              ("one", ChoiceIntent("named", "read"))])
def test_what_a_dialect_writes_it_reads_back(dialect: WireDialect, kind: Any, intent: ChoiceIntent) -> None:
    """A tool and a tool_choice as the dialect's request shape writes them read as what was meant."""
    body = {"tools": [dialect.requests.tool("read", SCHEMA, "Read a file.")],
            "tool_choice": dialect.requests.tool_choice(kind, "read")}
    read = dialect.requests.read(body)
    assert read.tools == (Tool("read", SCHEMA, "Read a file."),) and read.tool_choice == intent
