"""The mock's Kiro answer is written as Kiro writes it, byte for byte where gateways look: each
call opens with ``{"name","toolUseId"}``, its fragments are ``{"input","name","toolUseId"}`` and
it closes with ``{"name","stop","toolUseId"}``, every payload's keys in alphabetical order
(live captures kept as fixtures by the Kiro gateways). jwadow/kiro-gateway reads an event's kind
from its first key (``EVENT_PATTERNS``: ``{"input":`` is a fragment, ``{"name":`` opens a call),
so a payload written in another order split its calls into ``{}`` although it read Kiro's
own stream right."""

from __future__ import annotations

from typing import Any

import pytest

from harness.core.eventstream import Decoder
from harness.core.replay import kiro as kiro_replay
from harness.core.scenario.loading import parse_scenario

TOOLS = [{"type": "function", "function": {"name": "Read", "parameters": {"type": "object"}}}]


def payload_bytes(frames: list[Any]) -> list[bytes]:
    scenario = parse_scenario({
        "id": "kiro-order", "title": "t", "source": "synthetic",
        "backend": {"dialect": "kiro", "frames": frames},
        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}},
        "expect": {},
    })
    replay = kiro_replay.prepare(scenario.backend)
    events = kiro_replay.stream_events(replay, kiro_replay.KiroReply("m", "0" * 20))
    decoder = Decoder()
    return [m.payload for e in events for m in decoder.feed(e.data)]


CASES = {
    "a call in fragments": (
        [{"tool_use": {"id": "tooluse_a", "name": "Read", "input_json": ['{"file_', 'path": "a"}']}}],
        [b'{"name":"Read","toolUseId":"tooluse_a"}',
         b'{"input":"{\\"file_","name":"Read","toolUseId":"tooluse_a"}',
         b'{"input":"path\\": \\"a\\"}","name":"Read","toolUseId":"tooluse_a"}',
         b'{"name":"Read","stop":true,"toolUseId":"tooluse_a"}']),
    "a call without arguments": (
        [{"tool_use": {"id": "tooluse_b", "name": "Read", "input_json": []}}],
        [b'{"name":"Read","toolUseId":"tooluse_b"}',
         b'{"input":"{}","name":"Read","toolUseId":"tooluse_b"}',
         b'{"name":"Read","stop":true,"toolUseId":"tooluse_b"}']),
    "an event frame written in another order": (
        [{"event": "toolUseEvent", "payload": {"toolUseId": "tooluse_c", "name": "Read", "input": "{}"}}],
        [b'{"input":"{}","name":"Read","toolUseId":"tooluse_c"}']),
}


@pytest.mark.parametrize("frames, expected", CASES.values(), ids=CASES.keys())
def test_tool_use_events_are_written_as_kiro_writes_them(frames: list[Any], expected: list[bytes]) -> None:
    written = payload_bytes(frames)
    assert written[:len(expected)] == expected
    assert written[len(expected):] == [b'{"contextUsagePercentage":1.5}',
                                       b'{"stopReason":"end_turn","tokenUsage":{"inputTokens":0,"outputTokens":0}}']
