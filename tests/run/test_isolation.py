"""Isolation between exchanges: the mock's lockstep release and several choices, the
tagging of exchanges, and the round rules judging what several exchanges got."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.exchange import Exchange
from harness.core.nonce import place_nonce
from harness.core.replay.wire import Event
from harness.judge.rules import Options, compare_round
from harness.judge.rules.iso import EXCHANGE_MARK, Played, Round
from harness.run.isolation import breakers, tag
from mock_backends.app import create_app
from mock_backends.control import Lockstep, MockControl
from mock_backends.lockstep import Lockstep as Group
from mock_backends.streaming import ReplayStream
from support.library import load_library

LIBRARY = {s.id: s for s in load_library()}
IN_FLIGHT = LIBRARY["isolation-hermes-in-flight"]


# --------------------------------------------------------------------------- lockstep


async def _replay(stream: ReplayStream, name: str, log: list[tuple[str, bytes]]) -> None:
    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()  # the client never hangs up
        return {"type": "http.disconnect"}

    async def send(message: Mapping[str, Any]) -> None:
        if message.get("body"):
            log.append((name, message["body"]))
        await asyncio.sleep(0)  # let the others run, as a socket write would

    await stream({"type": "http"}, receive, send)


def _events(count: int) -> list[Event]:
    return [Event(f"e{i}".encode()) for i in range(count)]


@pytest.mark.parametrize("pause", [0.0, 0.001])
async def test_lockstep_sends_step_k_of_every_answer_before_step_k_plus_1_of_any(pause: float) -> None:
    group = Group("g", 3, patience=5.0, pause=pause)
    log: list[tuple[str, bytes]] = []
    await asyncio.gather(*(_replay(ReplayStream(_events(5), lockstep=group), name, log) for name in "abc"))
    steps = [int(body[1:]) for _, body in log]
    assert steps == sorted(steps) and len(log) == 15
    assert not group.broken


async def test_a_member_that_ends_early_stops_holding_the_others() -> None:
    """A dropped answer leaves the group; the longer ones go on in step without it."""
    group = Group("g", 2, patience=5.0)
    log: list[tuple[str, bytes]] = []
    short = ReplayStream(_events(2), lockstep=group, abort=True)
    await asyncio.gather(_replay(short, "short", log), _replay(ReplayStream(_events(6), lockstep=group), "long", log))
    assert [name for name, _ in log].count("long") == 6 and not group.broken


async def test_a_member_that_never_comes_releases_the_group_after_its_patience() -> None:
    group = Group("g", 2, patience=0.05)
    log: list[tuple[str, bytes]] = []
    await _replay(ReplayStream(_events(3), lockstep=group), "alone", log)
    assert len(log) == 3 and group.broken


@pytest.mark.parametrize("spec", [
    {"size": 2}, {"group": "", "size": 2}, {"group": "g", "size": 0}, {"group": "g", "size": True},
    {"group": "g", "size": 2, "patience": 0}, {"group": "g", "size": 2, "pause": -1}, "g",
])
def test_the_control_api_refuses_a_bad_lockstep_group(spec: Any, servers: Any) -> None:
    url = servers(create_app()).url
    answer = httpx.post(f"{url}/_mock/runs", json={"scenario": IN_FLIGHT.to_mapping(), "lockstep": spec})
    assert answer.status_code == 400 and "lockstep" in answer.json()["error"]["message"]


def test_runs_armed_in_one_group_all_answer_in_full(servers: Any) -> None:
    """Through the real mock: three streams of one group, read at once, each get every event."""
    url = servers(create_app()).url
    scenario = tag(IN_FLIGHT, "xqtest")
    with MockControl(url) as mock:
        nonces = [mock.arm(scenario, lockstep=Lockstep("g1", 3, patience=5.0)) for _ in range(3)]

    async def read(nonce: str) -> bytes:
        body = place_nonce({**scenario.client.request, "stream": True}, nonce)
        async with httpx.AsyncClient() as client:
            answer = await client.post(f"{url}/v1/chat/completions", json=body)
            return answer.content

    async def everyone() -> list[bytes]:
        return list(await asyncio.gather(*(read(n) for n in nonces)))

    answers = asyncio.run(everyone())
    for answer in answers:
        assert answer.count(b"data: ") == len(scenario.backend.frames) + 3 and answer.endswith(b"data: [DONE]\n\n")


# --------------------------------------------------------------------------- several choices


def _chunks(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.split(b"\n\n") if line.startswith(b"data: {")]


def test_the_mock_streams_n_choices_interleaved_each_with_its_own_text(servers: Any) -> None:
    url = servers(create_app()).url
    scenario = LIBRARY["isolation-n-choices"]
    with MockControl(url) as mock:
        nonce = mock.arm(scenario)
        body = place_nonce({**scenario.client.request, "stream": True, "n": 3}, nonce)
        chunks = _chunks(httpx.post(f"{url}/v1/chat/completions", json=body).content)
        plain = httpx.post(f"{url}/v1/chat/completions", json={**body, "stream": False}).json()
    order = [c["choices"][0]["index"] for c in chunks]
    steps = len(scenario.backend.frames) + 2  # role, frames, finish
    assert order == [0, 1, 2] * steps
    for i in range(3):
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"][0]["index"] == i)
        assert text == scenario.backend.text.replace("{{choice}}", str(i) if i else "{{choice}}")
        assert plain["choices"][i]["message"]["content"] == text
    assert [c["index"] for c in plain["choices"]] == [0, 1, 2]


# --------------------------------------------------------------------------- tagging


def test_tagging_replaces_the_mark_in_frames_and_expectations() -> None:
    tagged = tag(IN_FLIGHT, "xq1234")
    assert EXCHANGE_MARK not in json.dumps(tagged.to_mapping())
    assert "xq1234" in tagged.backend.text and tagged.expect.content == "Looking up order xq1234. "
    assert tagged.expect.tool_calls[0].arguments["order_id"] == "xq1234"


def test_breakers_end_mid_call_four_ways() -> None:
    made = breakers(IN_FLIGHT, timeout=3.0)
    assert [label for label, _, _ in made] == ["cut off by length", "dropped upstream", "malformed event",
                                               "client hung up"]
    length, drop, malformed, hang_up = (s for _, s, _ in made)
    assert length.backend.finish_reason == "length" and len(length.backend.frames) == 3
    assert drop.backend.fault is not None and drop.backend.fault.kind == "drop"
    assert "<tool_call>" in malformed.backend.text and "</tool_call>" not in malformed.backend.text
    assert hang_up.backend.fault is not None and hang_up.backend.fault.seconds == 3.0 and made[3][2]


# --------------------------------------------------------------------------- the round rules


def _call_stream(token: str, *, index: int = 0, text: str | None = None) -> bytes:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}

    def chunk(delta: Mapping[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    arguments = json.dumps({"order_id": token, "fields": ["status", "items"]})
    call = {"index": index, "id": f"call_{token}", "type": "function",
            "function": {"name": "get_order", "arguments": arguments}}
    events = [chunk({"role": "assistant"}), chunk({"content": text or f"Looking up order {token}. "}),
              chunk({"tool_calls": [call]}), chunk({}, "tool_calls"), "data: [DONE]"]
    return ("\n\n".join(events) + "\n\n").encode()


def _played(label: str, token: str, raw: bytes | None = None, failures: tuple[str, ...] = ()) -> Played:
    scenario = tag(IN_FLIGHT, token)
    exchange = Exchange(scenario_id=scenario.id, profile=CLIENTS["openai"], stream=True, request_body=scenario.client.request,
                        request_headers={}, status=200, response_headers={"content-type": "text/event-stream"},
                        raw=raw if raw is not None else _call_stream(token))
    return Played(label, token, scenario, exchange, failures)


def _round(**changed: Any) -> Round:
    parts: dict[str, Any] = {
        "alone": tuple(_played(f"alone {i}", f"xqa{i}") for i in range(3)),
        "together": tuple(_played(f"together {i}", f"xqt{i}") for i in range(2)),
        "after": ((_played("broken", "xqb", b"data: [DONE]\n\n"), _played("after", "xqc")),),
    }
    parts.update(changed)
    return Round(parts["alone"], parts["together"], parts["after"], Options())


ROUNDS: dict[str, tuple[Round, set[str]]] = {
    "clean": (_round(), set()),
    "leak-between-concurrent": (
        _round(together=(_played("together 0", "xqt0", _call_stream("xqt0", text="Looking up order xqt1. ")),
                         _played("together 1", "xqt1"))),
        {"ISO-001"},
    ),
    "verdicts-differ-at-once": (
        _round(together=(_played("together 0", "xqt0", failures=("CALLS-001",)),)),
        {"ISO-002"},
    ),
    "counter-carries-over": (
        _round(alone=(_played("alone 0", "xqa0"), _played("alone 1", "xqa1", _call_stream("xqa1", index=1)))),
        {"ISO-003"},
    ),
    "held-text-of-a-broken-exchange": (
        _round(after=((_played("broken", "xqb", b"data: [DONE]\n\n"),
                       _played("after", "xqc", _call_stream("xqc", text="<tool_call> xqb Looking up order xqc. "))),)),
        {"ISO-001", "ISO-004"},
    ),
}


@pytest.mark.parametrize("name", list(ROUNDS))
def test_round_rules(name: str) -> None:
    round_, broken = ROUNDS[name]
    failures = compare_round(round_, Options())
    assert {f.rule_id for f in failures} == broken, [str(f) for f in failures]
    assert all(f.message for f in failures)
