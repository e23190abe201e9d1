"""MiniMax M3's namespaced XML, read as vLLM's ``minimax_m3`` parser fixtures write it
(https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_minimax_m3_tool_parser.py)
and as ml-explore/mlx-lm#1416 quotes the model's output, whole and cut at every character."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from reference_proxy.rescue import ToolSpec
from support.rescue import check_events, feed_frames, outcome, same_calls

NS = "]<]minimax[>["

ORDER = ToolSpec("create_order", {"type": "object", "properties": {
    "user_id": {"type": "integer"},
    "urgent": {"type": "boolean"},
    "note": {"type": "string"},
    "shipping": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "integer"}}},
    "items": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}}}},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
    "duplicate_demo": {"type": "object"},
}})
WEATHER = ToolSpec("get_weather", {"type": "object", "properties": {
    "location": {"type": "string"}, "days": {"type": "integer"}}})

ORDER_CALL = (
    f"{NS}<tool_call>\n"
    f'{NS}<invoke name="create_order">'
    f"{NS}<user_id>42{NS}</user_id>{NS}<urgent>true{NS}</urgent>"
    f"{NS}<note>Please leave at front desk.{NS}</note>"
    f"{NS}<shipping>{NS}<city>Singapore{NS}</city>{NS}<zip>018956{NS}</zip>{NS}</shipping>"
    f"{NS}<items>{NS}<item>{NS}<sku>book-001{NS}</sku>{NS}<qty>2{NS}</qty>{NS}</item>"
    f"{NS}<item>{NS}<sku>pen-007{NS}</sku>{NS}<qty>5{NS}</qty>{NS}</item>{NS}</items>"
    f"{NS}<metadata>{NS}<source>mobile{NS}</source>{NS}<campaign>may-launch{NS}</campaign>{NS}</metadata>"
    f"{NS}<duplicate_demo>{NS}<tag>a{NS}</tag>{NS}<tag>b{NS}</tag>{NS}</duplicate_demo>"
    f"{NS}</invoke>\n"
    f"{NS}</tool_call>"
)
ORDER_ARGUMENTS = {
    "user_id": 42, "urgent": True, "note": "Please leave at front desk.",
    "shipping": {"city": "Singapore", "zip": 18956},
    "items": [{"sku": "book-001", "qty": 2}, {"sku": "pen-007", "qty": 5}],
    "metadata": {"source": "mobile", "campaign": "may-launch"},
    "duplicate_demo": {"tag": ["a", "b"]},
}


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    visible: str
    calls: tuple[tuple[str, dict[str, Any]], ...]


CASES = [
    Case("vllm-nested-order", "I will create it.\n" + ORDER_CALL, "I will create it.",
         (("create_order", ORDER_ARGUMENTS),)),
    Case("vllm-two-invokes-one-wrapper",
         f'{NS}<tool_call>\n{NS}<invoke name="create_order">{NS}<user_id>1{NS}</user_id>{NS}</invoke>\n'
         f'{NS}<invoke name="create_order">{NS}<user_id>2{NS}</user_id>{NS}</invoke>\n{NS}</tool_call>',
         "", (("create_order", {"user_id": 1}), ("create_order", {"user_id": 2}))),
    Case("mlx-each-tag-on-its-line",
         f'I\'ll check the time.{NS}<tool_call>\n{NS}<invoke name="get_weather">\n{NS}<location>Paris{NS}</location>\n'
         f"{NS}<days>3{NS}</days>\n{NS}</invoke>\n{NS}</tool_call>",
         "I'll check the time.", (("get_weather", {"location": "Paris", "days": 3}),)),
    Case("vllm-partial-opener-is-text", f"plain {NS}<tool_ca", f"plain {NS}<tool_ca", ()),
    Case("vllm-stray-closer-is-no-call", f"{NS}<tool_call>\n{NS}</user_id> after error",
         f"{NS}<tool_call>\n{NS}</user_id> after error", ()),
    Case("closer-quoted-in-a-value-stays",
         f'{NS}<tool_call>\n{NS}<invoke name="get_weather">{NS}<location>a {NS}</location> b{NS}</location>'
         f"{NS}</invoke>\n{NS}</tool_call>",
         "", (("get_weather", {"location": f"a {NS}</location> b"}),)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_minimax_m3_whole_and_cut_anywhere(case: Case) -> None:
    cuts = [[case.text], list(case.text)] + [[case.text[:k], case.text[k:]] for k in range(1, len(case.text))]
    for frames in cuts:
        _, events = feed_frames(frames, (ORDER, WEATHER))
        check_events(events)
        visible, calls = outcome(events)
        assert visible.strip() == case.visible, frames
        assert same_calls(calls, case.calls), (frames, calls)
