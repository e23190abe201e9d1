"""The Responses stream rules (RESP-*) and the shared rules as they judge a Responses
client, on hand-written answers: each broken answer next to correct ones it must not
be confused with. Streams are written here event by event from the API reference,
never produced by the mock or the proxy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from support.rule_family import Family

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.rules import RULES, Options, evaluate

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}}
PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
PARIS_JSON = '{"city": "Paris"}'


def scenario(expect: Mapping[str, Any], *, stream: bool = True) -> Scenario:
    return parse_scenario({
        "id": "case", "title": "responses rule case", "source": "synthetic",
        "backend": {"dialect": "openai", "frames": ["x"]},
        "client": {"request": {"model": "m", "stream": stream, "tools": [WEATHER, TIME],
                               "messages": [{"role": "user", "content": "weather in Paris?"}]}},
        "expect": dict(expect),
    })


S_TEXT_CALL = scenario({"tool_calls": [PARIS], "content": "Let me check.", "finish_reason": "tool_calls"})
S_TWO = scenario({"tool_calls": [PARIS, {"name": "get_time", "arguments": {}}], "finish_reason": "tool_calls"})
S_TEXT = scenario({"content": "Hello world", "finish_reason": "stop"})
S_SINGLE = scenario({"tool_calls": [PARIS], "content": "Let me check."}, stream=False)


def response(status: str = "completed", output: Sequence[Mapping[str, Any]] = (), **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": status, "error": None,
            "incomplete_details": None, "model": "m", "output": list(output), "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": [], "usage": None, **extra}


def message(ident: str, text: str) -> dict[str, Any]:
    return {"id": ident, "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call(ident: str, call_id: str | None, name: str, arguments: str) -> dict[str, Any]:
    item = {"id": ident, "type": "function_call", "status": "completed", "name": name, "arguments": arguments}
    return item if call_id is None else {**item, "call_id": call_id}


def text_item(index: int, ident: str, *pieces: str) -> list[dict[str, Any]]:
    where = {"item_id": ident, "output_index": index, "content_index": 0}
    text = "".join(pieces)
    return [
        {"type": "response.output_item.added", "output_index": index,
         "item": {"id": ident, "type": "message", "status": "in_progress", "role": "assistant", "content": []}},
        {"type": "response.content_part.added", **where, "part": {"type": "output_text", "text": "", "annotations": []}},
        *({"type": "response.output_text.delta", **where, "delta": p, "logprobs": []} for p in pieces),
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": {"type": "output_text", "text": text, "annotations": []}},
        {"type": "response.output_item.done", "output_index": index, "item": message(ident, text)},
    ]


def call_item(index: int, ident: str, call_id: str | None, name: str, *pieces: str) -> list[dict[str, Any]]:
    arguments = "".join(pieces)
    added = {**call(ident, call_id, name, ""), "status": "in_progress"}
    return [
        {"type": "response.output_item.added", "output_index": index, "item": added},
        *({"type": "response.function_call_arguments.delta", "item_id": ident, "output_index": index, "delta": p}
          for p in pieces),
        {"type": "response.function_call_arguments.done", "item_id": ident, "output_index": index,
         "arguments": arguments},
        {"type": "response.output_item.done", "output_index": index, "item": call(ident, call_id, name, arguments)},
    ]


def done_items(events: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [dict(e["item"]) for e in events if e["type"] == "response.output_item.done"]


def stream(*parts: Mapping[str, Any] | list[dict[str, Any]], completed: bool = True, numbered: bool = True) -> str:
    """The events, numbered from 0, each with its ``event:`` line; created first and, unless
    told, completed last with the items closed on the way."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response("in_progress")}]
    for part in parts:
        events.extend(part if isinstance(part, list) else [dict(part)])
    if completed:
        events.append({"type": "response.completed", "response": response("completed", done_items(events))})
    out = []
    for n, e in enumerate(events):
        payload = {**e, "sequence_number": n} if numbered and "sequence_number" not in e else e
        out.append(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n")
    return "".join(out)


TEXT_CALL = [*text_item(0, "msg_1", "Let me ", "check."), *call_item(1, "fc_1", "call_1", "get_weather", '{"city": ',
                                                                       '"Paris"}')]
TEXT_CALL_STREAM = stream(TEXT_CALL)
TWO = [*call_item(0, "fc_1", "call_1", "get_weather", PARIS_JSON), *call_item(1, "fc_2", "call_2", "get_time", "{}")]


def exchange(sc: Scenario, raw: str) -> Exchange:
    is_stream = bool(sc.client.request.get("stream"))
    return Exchange(scenario_id=sc.id, profile=CLIENTS["responses"], stream=is_stream, request_body=dict(sc.client.request),
                    request_headers={}, status=200,
                    response_headers={"content-type": "text/event-stream" if is_stream else "application/json"},
                    raw=raw.encode())


@dataclass(frozen=True)
class Case:
    id: str
    scenario: Scenario
    exchange: Exchange
    fails: frozenset[str]


def case(id: str, sc: Scenario, raw: str, fails: Sequence[str] = ()) -> Case:
    return Case(id, sc, exchange(sc, raw), frozenset(fails))


def _renumbered(raw: str, numbers: Sequence[int]) -> str:
    blocks = [b for b in raw.split("\n\n") if b]
    out = []
    for block, n in zip(blocks, numbers):
        head, data = block.split("\ndata: ")
        payload = json.loads(data)
        payload["sequence_number"] = n
        out.append(f"{head}\ndata: {json.dumps(payload)}\n\n")
    return "".join(out)


def _completed_without_calls(events: list[dict[str, Any]]) -> str:
    items = [i for i in done_items(events) if i["type"] != "function_call"]
    return stream(events, {"type": "response.completed", "response": response("completed", items)}, completed=False)


ACCEPTABLE: list[Case] = [
    case("ok-text-then-call", S_TEXT_CALL, TEXT_CALL_STREAM),
    case("ok-two-calls", S_TWO, stream(TWO)),
    case("ok-text", S_TEXT, stream(text_item(0, "msg_1", "Hello", " world"))),
    case("ok-one-delta-per-arguments", S_TEXT_CALL,
         stream(text_item(0, "msg_9", "Let me check."), call_item(1, "fc_9", "c-0", "get_weather", PARIS_JSON))),
    case("ok-extra-fields-and-gaps-in-numbers", S_TEXT_CALL,
         _renumbered(TEXT_CALL_STREAM.replace('"delta": ', '"obfuscation": "x1", "delta": '),
                     [0, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610])),
    case("ok-in-progress-and-empty-arguments-deltas", S_TEXT_CALL, stream(
        {"type": "response.in_progress", "response": response("in_progress")},
        *text_item(0, "msg_1", "Let me check."), *call_item(1, "fc_1", "call_1", "get_weather", "", PARIS_JSON, ""))),
    case("ok-single-response", S_SINGLE, json.dumps(response("completed", [
        message("msg_1", "Let me check."), call("fc_1", "call_1", "get_weather", PARIS_JSON)]))),
]

_COLLIDED = [*text_item(0, "msg_1", "Let me check."), *call_item(0, "fc_1", "call_1", "get_weather", PARIS_JSON)]
_UNCLOSED = [e for e in TEXT_CALL if not (e["type"] == "response.output_item.done" and e["output_index"] == 1)]
_WRONG_ID = [{**e, "item_id": "fc_other"} if e["type"] == "response.function_call_arguments.delta" else e
             for e in TEXT_CALL]
_ARGS_AT_MESSAGE = [{**e, "item_id": "msg_1", "output_index": 0}
                    if e["type"] == "response.function_call_arguments.delta" else e for e in TEXT_CALL]
_ARGS_DONE_AT_MESSAGE = [{**e, "output_index": 0} if e["type"] == "response.function_call_arguments.done" else e
                         for e in TEXT_CALL]
_TEXT_BEFORE_ITEM = [{**e, "output_index": 7} if e["type"] == "response.output_text.delta" else e for e in TEXT_CALL]
_TEXT_DONE_AT_CALL = [{**e, "output_index": 0} if e["type"] == "response.output_text.done" else e
                      for e in [*call_item(0, "fc_1", "call_1", "get_weather", PARIS_JSON),
                                *text_item(1, "msg_1", "Let me check.")]]
_DONE_OTHER_ID = [{**e, "item": {**e["item"], "id": "msg_other"}}
                  if e["type"] == "response.output_item.done" and e["output_index"] == 0 else e for e in TEXT_CALL]
_ARGS_DONE_DIFFER = [{**e, "arguments": '{"city": "Lyon"}'} if e["type"] == "response.function_call_arguments.done"
                     else e for e in TEXT_CALL]
_TEXT_LOST = [e for e in TEXT_CALL if e["type"] != "response.output_text.delta"]

BROKEN: list[Case] = [
    case("sequence-number-goes-back", S_TEXT_CALL, _renumbered(TEXT_CALL_STREAM, [0, 1, 2, 3, 4, 5, 6, 7, 3, 9, 10, 11,
                                                                                  12, 13]), ["RESP-001"]),
    case("no-sequence-numbers", S_TEXT_CALL, stream(TEXT_CALL, numbered=False), ["RESP-001"]),
    case("call-added-at-the-messages-index", S_TEXT_CALL, stream(_COLLIDED),
         ["RESP-002", "RESP-007", "RESP-009", "TEXT-001"]),
    case("call-never-closed", S_TEXT_CALL, stream(_UNCLOSED, {"type": "response.completed", "response": response(
        "completed", done_items(TEXT_CALL))}, completed=False), ["RESP-002"]),
    case("arguments-delta-at-the-messages-index", S_TEXT_CALL, stream(_ARGS_AT_MESSAGE),
         ["RESP-003", "RESP-004", "RESP-009"]),
    case("text-delta-before-its-item", S_TEXT_CALL, stream(_TEXT_BEFORE_ITEM), ["RESP-003", "RESP-006", "RESP-009"]),
    case("text-done-at-the-calls-index", S_TEXT_CALL, stream(_TEXT_DONE_AT_CALL), ["RESP-003", "RESP-009", "RESP-013"]),
    case("item-done-with-another-id", S_TEXT_CALL, stream(_DONE_OTHER_ID), ["RESP-003", "RESP-009"]),
    case("delta-names-another-item", S_TEXT_CALL, stream(_WRONG_ID), ["RESP-013"]),
    case("arguments-done-at-the-messages-index", S_TEXT_CALL, stream(_ARGS_DONE_AT_MESSAGE), ["RESP-013"]),
    case("arguments-done-differ-from-deltas", S_TEXT_CALL, stream(_ARGS_DONE_DIFFER), ["RESP-004"]),
    case("call-without-call-id", S_TEXT_CALL,
         stream(text_item(0, "msg_1", "Let me check."), call_item(1, "fc_1", None, "get_weather", PARIS_JSON)),
         ["RESP-005", "RESP-011"]),
    case("call-ids-repeated", S_TWO, stream(call_item(0, "fc_1", "call_1", "get_weather", PARIS_JSON),
                                            call_item(1, "fc_2", "call_1", "get_time", "{}")),
         ["RESP-005", "RESP-009"]),
    case("text-deltas-lost", S_TEXT_CALL, stream(_TEXT_LOST), ["RESP-006"]),
    case("completed-output-without-the-calls", S_TEXT_CALL, _completed_without_calls(TEXT_CALL),
         ["RESP-007", "RESP-012"]),
    case("no-response-completed", S_TEXT_CALL, stream(TEXT_CALL, completed=False),
         ["RESP-008", "RESP-009", "CALLS-003"]),
    case("error-as-a-bare-string", S_TEXT_CALL, stream(
        TEXT_CALL, {"type": "response.failed", "response": response("failed", error="upstream broke")},
        completed=False), ["RESP-010", "RESP-011", "RESP-012", "CALLS-003"]),
]

ALL = ACCEPTABLE + BROKEN
FAMILY: Family = (ACCEPTABLE, BROKEN, lambda c: Options(profile=CLIENTS["responses"], strict=True))


def _client_rules(ids: frozenset[str]) -> set[str]:
    return {i for i in ids if RULES[i].severity == "client"}


@pytest.mark.parametrize("c", ALL, ids=[c.id for c in ALL])
def test_rule_case(c: Case) -> None:
    strict = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["responses"], strict=True))
    default = evaluate(c.scenario, c.exchange, Options(profile=CLIENTS["responses"]))
    detail = "\n".join(f"  {f}" for f in strict)
    assert {f.rule_id for f in strict} == set(c.fails), f"strict failures:\n{detail}"
    assert {f.rule_id for f in default} == _client_rules(c.fails)
    for f in strict:
        assert f.message and "could not be evaluated" not in f.message


def test_every_responses_rule_is_broken_by_some_case() -> None:
    ours = {i for i in RULES if i.startswith("RESP-")}
    assert ours and ours - set().union(*(c.fails for c in BROKEN)) == set()


def test_a_responses_exchange_is_judged_as_responses_whatever_the_options_say() -> None:
    c = next(c for c in BROKEN if c.id == "call-without-call-id")
    for profile in (CLIENTS["openai"], CLIENTS["xml-client"], CLIENTS["anthropic"]):
        assert {f.rule_id for f in evaluate(c.scenario, c.exchange, Options(profile=profile))} == {"RESP-005"}
        assert {f.rule_id for f in evaluate(c.scenario, c.exchange, Options(profile=profile, strict=True))} == {
            "RESP-005", "RESP-011"}
