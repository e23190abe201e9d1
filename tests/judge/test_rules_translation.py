"""The rules on what a request upstream keeps of the client's (UP-004 to UP-008), case by
case, in every pair of dialects.

Each case is a client's conversation (a system prompt, tools with nested schemas, an
assistant's calls and their results, a ``tool_choice``), the request a proxy sent
upstream in some dialect, and the rules that must fail. A request relayed unchanged, the
reference proxy's own translations, and translations that differ where the backend cannot
tell (ids rewritten consistently, schemas with ``additionalProperties`` or ``$schema``,
descriptions trimmed, content as parts, the features' rewrites) break nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import messages_answers as messages
from support.library import load_library
from support.rule_family import Family

from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.dialects.script import upstream_dialects
from harness.core.exchange import Exchange, RecordedRequest
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.rules import RULES, Options, evaluate
from reference_proxy.responses_requests import chat_to_responses_request
from reference_proxy.translate.requests import chat_to_messages, messages_to_chat

EDIT = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File to change."},
        "edits": {"type": "array", "items": {"type": "object", "properties": {
            "old": {"type": "string"}, "new": {"type": "string"}}, "required": ["old", "new"]}},
        "options": {"type": "object", "properties": {"dry_run": {"type": "boolean"},
                                                     "mode": {"type": "string", "enum": ["fast", "safe"]}}},
    },
    "required": ["path", "edits"],
}
READ = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
EDIT_ARGS = {"path": "a.py", "edits": [{"old": "x = 1", "new": "x = 2"}], "options": {"dry_run": False}}
SYSTEM = "You are a careful coding assistant."

CHAT_TOOLS = [{"type": "function", "function": {"name": "edit_file", "description": "Edit a file in place.",
                                                 "parameters": EDIT}},
              {"type": "function", "function": {"name": "read_file", "parameters": READ}}]
CHAT_MESSAGES = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "Read a.py, then set x to 2."},
    {"role": "assistant", "content": "Reading it first.", "tool_calls": [
        {"id": "call_r1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}]},
    {"role": "tool", "tool_call_id": "call_r1", "content": "x = 1\n"},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_e1", "type": "function", "function": {"name": "edit_file", "arguments": json.dumps(EDIT_ARGS)}}]},
    {"role": "tool", "tool_call_id": "call_e1", "content": "1 edit applied"},
    {"role": "user", "content": "Done?"},
]
MESSAGES_TOOLS = [{"name": "edit_file", "description": "Edit a file in place.", "input_schema": EDIT},
                  {"name": "read_file", "input_schema": READ}]
MESSAGES_TURNS = [
    {"role": "user", "content": "Read a.py, then set x to 2."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading it first."},
                                      {"type": "tool_use", "id": "toolu_r1", "name": "read_file",
                                       "input": {"path": "a.py"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_r1", "content": "x = 1\n"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_e1", "name": "edit_file", "input": EDIT_ARGS}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_e1",
                                  "content": [{"type": "text", "text": "1 edit applied"}]},
                                 {"type": "text", "text": "Done?"}]},
]


def chat_scenario(**request: Any) -> Scenario:
    return parse_scenario({
        "id": "translation-case", "title": "translation rule case", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["Hello world"]},
        "client": {"request": {"model": "m", "stream": True, "messages": CHAT_MESSAGES, "tools": CHAT_TOOLS,
                               **request}},
        "expect": {"content": "Hello world", "finish_reason": "stop"},
    })


def messages_scenario(**request: Any) -> Scenario:
    return parse_scenario({
        "id": "translation-case", "title": "translation rule case", "source": "synthetic",
        "backend": {"dialect": "anthropic", "frames": ["Hello world"]},
        "client": {"profile": "anthropic", "request": {
            "model": "claude-test", "max_tokens": 1024, "stream": True, "system": SYSTEM,
            "messages": MESSAGES_TURNS, "tools": MESSAGES_TOOLS, **request}},
        "expect": {"content": "Hello world", "finish_reason": "end_turn"},
    })


C_AUTO = chat_scenario()
C_REQUIRED = chat_scenario(tool_choice="required")
C_NAMED = chat_scenario(tool_choice={"type": "function", "function": {"name": "edit_file"}})
C_NONE = chat_scenario(tool_choice="none")
M_AUTO = messages_scenario()
M_ANY = messages_scenario(tool_choice={"type": "any"})
M_NAMED = messages_scenario(tool_choice={"type": "tool", "name": "read_file"})
M_NONE = messages_scenario(tool_choice={"type": "none"})
UNTYPED_TOOLS = copy.deepcopy(MESSAGES_TOOLS)
del UNTYPED_TOOLS[0]["input_schema"]["properties"]["options"]["type"]
M_UNTYPED = messages_scenario(tools=UNTYPED_TOOLS)
QUOTED_TURNS = copy.deepcopy(MESSAGES_TURNS)
QUOTED_TURNS[2]["content"][0]["content"] = 'name = "café"\n'
M_QUOTED = messages_scenario(messages=QUOTED_TURNS)  # a result whose JSON form escapes its text

CHAT_ANSWER = "".join(
    f"data: {json.dumps({'id': 'c', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'm', 'choices': [c]})}\n\n"
    for c in ({"index": 0, "delta": {"role": "assistant", "content": "Hello world"}, "finish_reason": None},
              {"index": 0, "delta": {}, "finish_reason": "stop"})) + "data: [DONE]\n\n"
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "responses": "/v1/responses"}


def request(sc: Scenario) -> dict[str, Any]:
    return copy.deepcopy(dict(sc.client.request))


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Case:
    id: str
    scenario: Scenario
    exchange: Exchange
    fails: frozenset[str] = frozenset()
    profile: Profile = CLIENTS["openai"]
    features: frozenset[str] = field(default_factory=frozenset)


def case(id: str, sc: Scenario, upstream_dialect: str, body: Mapping[str, Any], fails: tuple[str, ...] = (),
         *, features: tuple[str, ...] = ()) -> Case:
    profile: Profile = CLIENTS["anthropic"] if sc.client.profile.name == "anthropic" else CLIENTS["openai"]
    raw = messages.TEXT_STREAM if profile.name == "anthropic" else CHAT_ANSWER
    sent = RecordedRequest("POST", PATHS[upstream_dialect], "", {"content-type": "application/json"}, dict(body),
                           None, 0.0)
    ex = Exchange(scenario_id=sc.id, profile=profile, stream=True, request_body=request(sc), request_headers={},
                  status=200, response_headers={"content-type": "text/event-stream"}, raw=raw.encode(),
                  upstream=(sent,))
    return Case(id, sc, ex, frozenset(fails), profile, frozenset(features))


def edited(body: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    out = copy.deepcopy(body)
    change(out)
    return out


def to_responses(body: Mapping[str, Any]) -> dict[str, Any]:
    return chat_to_responses_request(body, True)


def _rename_ids(body: dict[str, Any]) -> None:
    """Every call id rewritten, on the calls and on their results alike."""
    for m in body["messages"]:
        for call in m.get("tool_calls") or ():
            call["id"] = "fresh_" + call["id"]
        if m["role"] == "tool":
            m["tool_call_id"] = "fresh_" + m["tool_call_id"]


def _normalised_schemas(body: dict[str, Any]) -> None:
    """What a careful translator may do to a schema: add strictness markers, drop annotations."""
    for tool in body["tools"]:
        schema = tool["input_schema"]
        schema["additionalProperties"] = False
        schema["$schema"] = "http://json-schema.org/draft-07/schema#"
        tool.pop("description", None)
        for prop in schema["properties"].values():
            prop.pop("description", None)
        schema["properties"]["path"]["minLength"] = 1  # a constraint one API takes and another drops


def _blocks_as_json(body: dict[str, Any]) -> None:
    """Each tool message's content given as the JSON of the Messages blocks it came from."""
    for m in body["messages"]:
        if m["role"] == "tool":
            m["content"] = json.dumps([{"type": "text", "text": m["content"]}], ensure_ascii=True)


def _results_trimmed(body: dict[str, Any]) -> None:
    for m in body["messages"]:
        if m["role"] == "tool":
            m["content"] = m["content"].strip()


def _parts(body: dict[str, Any]) -> None:
    for m in body["messages"]:
        if isinstance(m.get("content"), str):
            m["content"] = [{"type": "text", "text": m["content"]}]


def _chat_results_fresh_ids(body: dict[str, Any]) -> None:
    """Results given fresh ids, their calls left with theirs: the link is lost."""
    for m in body["messages"]:
        if m["role"] == "tool":
            m["tool_call_id"] = "call_" + "0" * 24


def _schema_dropped(body: dict[str, Any]) -> None:
    body["tools"][0]["function"]["parameters"] = {"type": "object", "properties": {}}


def _enum_lost(body: dict[str, Any]) -> None:
    del body["tools"][0]["function"]["parameters"]["properties"]["options"]["properties"]["mode"]["enum"]


def _nested_type_changed(body: dict[str, Any]) -> None:
    body["tools"][0]["input_schema"]["properties"]["edits"]["items"]["properties"]["old"]["type"] = "number"


def _results_swapped(body: dict[str, Any]) -> None:
    tool = [m for m in body["messages"] if m["role"] == "tool"]
    tool[0]["tool_call_id"], tool[1]["tool_call_id"] = tool[1]["tool_call_id"], tool[0]["tool_call_id"]


def _result_text_lost(body: dict[str, Any]) -> None:
    body["messages"][2]["content"][0]["content"] = ""


def _arguments_string_in_string(body: dict[str, Any]) -> None:
    call = body["messages"][4]["tool_calls"][0]["function"]
    call["arguments"] = json.dumps(call["arguments"])


def _call_dropped(body: dict[str, Any]) -> None:
    body["input"] = [i for i in body["input"] if i.get("name") != "edit_file"]


def _system_as_user(body: dict[str, Any]) -> None:
    system = body.pop("system")
    body["messages"][0]["content"] = f"{system}\n\n{body['messages'][0]['content']}"


def _system_lost(body: dict[str, Any]) -> None:
    body["messages"] = [m for m in body["messages"] if m["role"] != "system"]


def _tool_choice(value: Any) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        if value is None:
            body.pop("tool_choice", None)
        else:
            body["tool_choice"] = value
    return change


def _emulated(body: dict[str, Any]) -> None:
    """tool_choice taken over by the proxy: removed upstream, a directive added to the last user turn."""
    body.pop("tool_choice")
    body["messages"][-1]["content"].append({"type": "text", "text": "[Tool use required]"})


ACCEPTABLE: list[Case] = [
    # relayed unchanged, in each client's own dialect
    case("ok-chat-relayed", C_REQUIRED, "openai", request(C_REQUIRED)),
    case("ok-messages-relayed", M_ANY, "anthropic", request(M_ANY)),
    case("ok-chat-auto-relayed", C_AUTO, "openai", request(C_AUTO)),
    case("ok-messages-none-relayed", M_NONE, "anthropic", request(M_NONE)),
    # the reference proxy's translations, every pair
    case("ok-chat-to-messages", C_REQUIRED, "anthropic", chat_to_messages(request(C_REQUIRED))),
    case("ok-chat-named-to-messages", C_NAMED, "anthropic", chat_to_messages(request(C_NAMED))),
    case("ok-chat-none-to-messages", C_NONE, "anthropic", chat_to_messages(request(C_NONE))),
    case("ok-chat-to-responses", C_REQUIRED, "responses", to_responses(request(C_REQUIRED))),
    case("ok-chat-named-to-responses", C_NAMED, "responses", to_responses(request(C_NAMED))),
    case("ok-messages-to-chat", M_ANY, "openai", messages_to_chat(request(M_ANY))),
    case("ok-messages-named-to-chat", M_NAMED, "openai", messages_to_chat(request(M_NAMED))),
    case("ok-messages-auto-to-responses", M_AUTO, "responses", to_responses(messages_to_chat(request(M_AUTO)))),
    # different, and right
    case("ok-ids-rewritten-on-both-sides", C_AUTO, "openai", edited(request(C_AUTO), _rename_ids)),
    case("ok-schemas-normalised", M_AUTO, "anthropic", edited(request(M_AUTO), _normalised_schemas)),
    case("ok-content-as-parts", C_AUTO, "openai", edited(request(C_AUTO), _parts)),
    case("ok-auto-said-explicitly", C_AUTO, "anthropic", {**chat_to_messages(request(C_AUTO)),
                                                          "tool_choice": {"type": "auto"}}),
    case("ok-none-as-no-tools", M_NONE, "openai", edited(messages_to_chat(request(M_AUTO)),
                                                         lambda b: b.pop("tools"))),
    case("ok-tool-choice-emulated", M_ANY, "anthropic", edited(request(M_ANY), _emulated), features=("tool-choice",)),
    case("ok-system-moved-to-user", M_AUTO, "anthropic", edited(request(M_AUTO), _system_as_user),
         features=("system-to-user",)),
    case("ok-results-trimmed", C_AUTO, "anthropic", chat_to_messages(edited(request(C_AUTO), _results_trimmed))),
    # `type: object` said upstream where the client's nested schema had properties but left it unsaid
    case("ok-object-type-added", M_UNTYPED, "openai", messages_to_chat(request(M_AUTO))),
    case("ok-named-tool-alone-offered", M_NAMED, "openai", edited(messages_to_chat(request(M_NAMED)),
                                                                  lambda b: b["tools"].pop(0))),
    case("ok-none-emulated", C_NONE, "anthropic", edited(chat_to_messages(request(C_NONE)), _tool_choice(None)),
         features=("tool-choice",)),
    case("ok-result-blocks-as-json-text", M_QUOTED, "openai", edited(messages_to_chat(request(M_QUOTED)),
                                                                     _blocks_as_json)),
    case("ok-tool-added", C_AUTO, "openai", {**request(C_AUTO), "tools": [
        *CHAT_TOOLS, {"type": "function", "function": {"name": "exit_tool", "parameters": {"type": "object"}}}]}),
]

BROKEN: list[Case] = [
    case("up-004-tool-dropped", M_AUTO, "openai", edited(messages_to_chat(request(M_AUTO)),
                                                         lambda b: b["tools"].pop(0)), ("UP-004",)),
    case("up-004-schema-dropped", C_AUTO, "openai", edited(request(C_AUTO), _schema_dropped), ("UP-004",)),
    case("up-004-nested-type-changed", M_AUTO, "anthropic", edited(request(M_AUTO), _nested_type_changed),
         ("UP-004",)),
    case("up-004-enum-lost", C_AUTO, "anthropic", chat_to_messages(edited(request(C_AUTO), _enum_lost)), ("UP-004",)),
    case("up-004-required-lost", C_AUTO, "responses", edited(to_responses(request(C_AUTO)),
                                                             lambda b: b["tools"][1]["parameters"].pop("required")),
         ("UP-004",)),
    case("up-004-named-tool-withheld", M_NAMED, "openai", edited(messages_to_chat(request(M_NAMED)),
                                                                 lambda b: b["tools"].pop(1)), ("UP-004",)),
    case("up-004-none-but-some-tools-left", M_NONE, "openai", edited(messages_to_chat(request(M_NONE)),
                                                                     lambda b: b["tools"].pop(0)), ("UP-004",)),
    case("up-005-results-fresh-ids", M_AUTO, "openai", edited(messages_to_chat(request(M_AUTO)),
                                                              _chat_results_fresh_ids), ("UP-005",)),
    case("up-005-results-swapped", C_AUTO, "openai", edited(request(C_AUTO), _results_swapped), ("UP-005",)),
    case("up-005-result-text-lost", M_AUTO, "anthropic", edited(request(M_AUTO), _result_text_lost), ("UP-005",)),
    case("up-006-arguments-string-in-string", C_AUTO, "openai", edited(request(C_AUTO), _arguments_string_in_string),
         ("UP-006", "UP-005")),
    case("up-006-call-dropped", C_AUTO, "responses", edited(to_responses(request(C_AUTO)), _call_dropped),
         ("UP-006", "UP-005")),
    case("up-007-any-became-auto", M_ANY, "openai", edited(messages_to_chat(request(M_ANY)),
                                                           _tool_choice("auto")), ("UP-007",)),
    case("up-007-any-emulated-as-auto", M_ANY, "anthropic", edited(edited(request(M_ANY), _emulated),
                                                                   _tool_choice({"type": "auto"})),
         ("UP-007",), features=("tool-choice",)),
    case("up-007-required-dropped", C_REQUIRED, "anthropic", edited(chat_to_messages(request(C_REQUIRED)),
                                                                    _tool_choice(None)), ("UP-007",)),
    case("up-007-named-lost", M_NAMED, "responses", edited(to_responses(messages_to_chat(request(M_NAMED))),
                                                           _tool_choice("required")), ("UP-007",)),
    case("up-007-none-dropped", C_NONE, "anthropic", edited(chat_to_messages(request(C_NONE)), _tool_choice(None)),
         ("UP-007",)),
    case("up-008-system-lost", C_AUTO, "openai", edited(request(C_AUTO), _system_lost), ("UP-008",)),
    case("up-008-system-in-user-without-the-feature", M_AUTO, "anthropic", edited(request(M_AUTO), _system_as_user),
         ("UP-008",)),
]
ALL = ACCEPTABLE + BROKEN


def _options(c: Case, strict: bool) -> Options:
    return Options(profile=c.profile, strict=strict, features=c.features)


# Judged with every rule on; ``rule_proofs.families()`` counts these cases towards rule coverage.
FAMILY: Family = (ACCEPTABLE, BROKEN, lambda c: _options(c, True))


@pytest.mark.parametrize("c", ALL, ids=[c.id for c in ALL])
def test_rule_case(c: Case) -> None:
    strict = evaluate(c.scenario, c.exchange, _options(c, True))
    default = evaluate(c.scenario, c.exchange, _options(c, False))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == {i for i in c.fails if RULES[i].severity != "spec"}
    for f in strict:
        assert f.message and "→" in f.message, f.message  # each names the pair of dialects


@pytest.mark.parametrize(("case_id", "needle"), [
    ("up-004-schema-dropped", "parameter(s) path, edits, options missing"),
    ("up-004-nested-type-changed", 'parameter edits: '),
    ("up-004-tool-dropped", "the client's tool edit_file is not offered upstream (Anthropic Messages → OpenAI Chat"),
    ("up-005-results-fresh-ids", "which no call of the upstream conversation has"),
    ("up-005-results-swapped", "answering another call, edit_file("),
    ("up-007-any-became-auto", "the client asked tool_choice required (Anthropic any); upstream it is auto"),
])
def test_failure_messages_say_what_was_lost(case_id: str, needle: str) -> None:
    c = next(c for c in ALL if c.id == case_id)
    assert needle in "\n".join(f.message for f in evaluate(c.scenario, c.exchange, _options(c, True)))


def test_an_xml_client_proxy_may_rewrite_the_conversation() -> None:
    """For the xml-client profile the conversation rules stand aside; the tools still count."""
    broken = next(c for c in BROKEN if c.id == "up-005-results-swapped")
    options = Options(profile=CLIENTS["xml-client"], strict=True, features=frozenset({"xml-client"}))
    assert evaluate(broken.scenario, broken.exchange, options) == []
    dropped = next(c for c in BROKEN if c.id == "up-004-schema-dropped")
    assert {f.rule_id for f in evaluate(dropped.scenario, dropped.exchange, options)} == {"UP-004"}


def test_a_request_of_no_known_api_or_a_client_of_its_own_bytes_is_not_judged() -> None:
    c = next(c for c in BROKEN if c.id == "up-004-schema-dropped")
    elsewhere = RecordedRequest("POST", "/v1/generate", "", {}, c.exchange.upstream[-1].body, None, 0.0)
    ex = Exchange(**{**c.exchange.__dict__, "upstream": (elsewhere,)})
    assert evaluate(c.scenario, ex, _options(c, True)) == []


def _client_reading(sc: Scenario) -> Any:
    return sc.client.dialect.requests.read(sc.client.request)


def test_the_translation_family_plays_in_every_dialect_pair() -> None:
    """Its cases carry no upstream assertion nor anything else that keeps a case to one
    dialect, and speak for both clients: the rules above judge them in every pair."""
    family = [s for s in load_library() if s.family == "translation"]
    assert {s.client.profile.name for s in family} == {"openai", "anthropic"}
    for s in family:
        assert not s.expect.upstream, s.id
        assert upstream_dialects(s) == {wire: None for wire in DIALECTS.values()}, s.id
        assert _client_reading(s).tools and _client_reading(s).system, s.id
    conversations = [s for s in family if s.id.endswith("-conversation")]
    assert len(conversations) == 2 and all(len(_client_reading(s).results) >= 2 for s in conversations)


# --------------------------------------------------------------------------- any conversation, translated right

_WORD = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x17F), min_size=1, max_size=12)
_VALUE = st.one_of(_WORD, st.integers(-1000, 1000), st.booleans(), st.lists(_WORD, max_size=3))


@st.composite
def chat_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A chat request: a system prompt, some tools, and turns of calls answered by results."""
    names = draw(st.lists(st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True), min_size=1, max_size=3, unique=True))
    tools = [{"type": "function", "function": {"name": n, "parameters": {
        "type": "object", "properties": {p: {"type": "string"} for p in draw(st.lists(_WORD, max_size=3))}}}}
        for n in names]
    messages: list[dict[str, Any]] = [{"role": "system", "content": draw(_WORD)},
                                      {"role": "user", "content": draw(_WORD)}]
    for turn in range(draw(st.integers(0, 3))):
        calls = [{"id": f"call_{turn}_{i}", "type": "function", "function": {
            "name": draw(st.sampled_from(names)),
            "arguments": json.dumps(draw(st.dictionaries(_WORD, _VALUE, max_size=3)))}}
            for i in range(draw(st.integers(1, 2)))]
        messages.append({"role": "assistant", "content": draw(st.one_of(st.none(), _WORD)), "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": draw(_WORD)} for c in calls]
    messages.append({"role": "user", "content": draw(_WORD)})
    choice = draw(st.sampled_from([None, "auto", "required", "none", {"type": "function",
                                                                      "function": {"name": names[0]}}]))
    return {"model": "m", "stream": True, "messages": messages, "tools": tools,
            **({"tool_choice": choice} if choice is not None else {})}


@settings(max_examples=40, deadline=None)
@given(chat_requests(), st.sampled_from(["anthropic", "responses", "round-trip"]))
def test_a_conversation_translated_by_the_reference_proxy_breaks_no_up_rule(body: dict[str, Any], to: str) -> None:
    """Whatever the conversation, the reference proxy's translation of it (to the Messages API,
    to the Responses API, or to Messages and back) keeps what UP-004 to UP-008 ask."""
    sc = parse_scenario({"id": "translation-case", "title": "t", "source": "synthetic",
                         "backend": {"dialect": "openai", "frames": ["Hello world"]},
                         "client": {"request": body}, "expect": {"content": "Hello world", "finish_reason": "stop"}})
    sent = {"anthropic": chat_to_messages, "responses": to_responses,
            "round-trip": lambda b: messages_to_chat(chat_to_messages(b))}[to](body)
    c = case("generated", sc, "openai" if to == "round-trip" else to, sent)
    kept = {"UP-004", "UP-005", "UP-006", "UP-007", "UP-008"}  # the round trip adds the max_tokens Messages needs
    found = evaluate(c.scenario, c.exchange, _options(c, True))
    assert [f"{f.rule_id}: {f.message}" for f in found if f.rule_id in kept] == []
