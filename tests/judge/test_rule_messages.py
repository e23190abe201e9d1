"""The messages of different rules on one answer agree with each other and with the answer: every rule
runs on every answer of the rule case files, and no message says what another one (or the answer) denies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from rule_proofs import families

from harness.core.dialects.clients import CLIENTS
from harness.core.errors import ConformanceFailure
from harness.core.exchange import Exchange
from harness.judge.rules import Options, compare_answers, evaluate
from support.library import load_library


def _answers() -> Iterator[Any]:
    for name, (acceptable, broken, options) in families().items():
        for case in (*broken, *acceptable):
            if hasattr(case, "exchange"):
                yield pytest.param(case, options(case), id=f"{name}:{case.id}")


ANSWERS = list(_answers())


def _error_object(raw: bytes) -> bool:
    try:
        body = json.loads(raw)
    except ValueError:
        return False
    return isinstance(body, dict) and "error" in body


def _received_counts(failures: list[ConformanceFailure]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in failures:
        if f.rule_id in ("CALLS-001",):
            match = re.match(r"expected \d+ call\(s\), got (\d+)", f.message)
            if match:
                counts[f.rule_id] = int(match.group(1))
    return counts


@pytest.mark.parametrize(("case", "options"), ANSWERS)
def test_messages_on_one_answer_do_not_contradict(case: Any, options: Any) -> None:
    failures = list(evaluate(case.scenario, case.exchange, options))
    messages = {f.rule_id: f.message for f in failures}
    counted = _received_counts(failures)
    for rule_id, message in messages.items():
        # A rule that says no call arrived, beside one that counts the calls that did.
        if re.search(r"\bno call arrived\b|\bneither as a call\b", message):
            assert not any(n > 0 for n in counted.values()), (rule_id, message, counted)
        # "Reports no error" of a body that is an error object, whatever its status.
        if "a body that reports no error" in message:
            assert not _error_object(case.exchange.raw), (rule_id, message)
    # A rule that counts the calls received agrees with the calls the answer holds.
    for rule_id, n in counted.items():
        lost = messages.get("TEXT-004", "")
        if n and lost:
            assert "no call arrived" not in lost, (rule_id, lost)


def _answer(stream: bool, name: str, arguments: str) -> Exchange:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    if stream:
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
        events = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, **call}]},
                                        "finish_reason": None}]},
                  {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}]
        raw = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        headers = {"content-type": "text/event-stream"}
    else:
        raw = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": "m",
                          "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                                       "finish_reason": "tool_calls"}]})
        headers = {"content-type": "application/json"}
    return Exchange(scenario_id=SCENARIO.id, profile=CLIENTS["openai"], stream=stream,
                    request_body={**SCENARIO.client.request, "stream": stream}, request_headers={}, status=200,
                    response_headers=headers, raw=raw.encode())


SCENARIO = {s.id: s for s in load_library()}["plain-native-single"]


@pytest.mark.parametrize(("streamed", "plain"), [
    (("get_weather", '{"city": "Paris"}'), ("get_forecast", '{"city": "Paris"}')),
    (("get_weather", '{"city": "Paris"}'), ("get_weather", '{"city": "Oslo", "days": 2}')),
])
def test_equivalence_never_calls_one_of_two_answers_expected(streamed: tuple[str, str], plain: tuple[str, str]) -> None:
    """EQ-001 compares two answers of the proxy, neither of them the expected one: its words name both sides."""
    failures = compare_answers(SCENARIO, _answer(True, *streamed), _answer(False, *plain),
                               Options(profile=CLIENTS["openai"]))
    said = [f.message for f in failures if f.rule_id == "EQ-001"]
    assert said and all("expected" not in m and "streamed" in m for m in said), said


def test_an_error_object_under_200_is_not_called_a_body_without_error() -> None:
    """FAULT-001 on a body that does say "error", under a 200 every client reads as an answer."""
    fault = {s.id: s for s in load_library()}["faults-openai-http-500"]
    body = {"error": {"message": "upstream failed", "type": "server_error", "param": None, "code": None}}
    answer = Exchange(scenario_id=fault.id, profile=CLIENTS["openai"], stream=False,
                      request_body={**fault.client.request, "stream": False}, request_headers={}, status=200,
                      response_headers={"content-type": "application/json"}, raw=json.dumps(body).encode())
    said = [f.message for f in evaluate(fault, answer, Options(profile=CLIENTS["openai"])) if f.rule_id == "FAULT-001"]
    assert len(said) == 1 and "reports no error" not in said[0] and "`error` object in its body" in said[0], said
