"""Playing one scenario as many clients would: in a row, at once, and after broken exchanges.

A scenario tagged ``isolation`` writes ``{{exchange}}`` where its backend's text and
arguments should carry something only that exchange has; every exchange played from it
gets its own tag in that place (``tag``). ``play_round`` then plays:

* the scenario ``REPEATS`` times in a row, each alone (the first is the reference);
* ``CONCURRENCY`` clients at once, their runs armed in one lockstep group of the mock,
  so frame k of every answer is sent before frame k+1 of any: the same interleaving on
  every run;
* four exchanges that end mid-call (``breakers``: cut off by ``length``, a dropped
  upstream, a malformed event, the client hanging up), each followed by the clean
  scenario.

The isolation rules (``harness.judge.rules.iso``) judge the ``Round``.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from harness.core.dialects import ANTHROPIC, KIRO, OLLAMA, OPENAI, RESPONSES, WireDialect
from harness.core.dialects.clients import Profile
from harness.core.exchange import Exchange
from harness.core.scenario.loading import build_scenario, parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.rules import Options, evaluate
from harness.judge.rules.iso import EXCHANGE_MARK, Played, Round
from mock_backends.control import Lockstep

TAG = "isolation"  # the scenario tag that asks for a round
LABEL = "many clients: in a row, at once in lockstep, after exchanges cut off mid-call"
CONCURRENCY = 4  # clients at once
REPEATS = 3  # plays in a row
MIN_PAUSE, MAX_PAUSE = 0.002, 0.05  # seconds between lockstep steps
LOCKSTEP_TRIES = 2  # plays at once until one keeps in step; the last is judged as free-flowing when none did
# An event cut off inside its JSON, in each backend dialect (a Responses backend sends the
# Chat Completions one: any ``data:`` line cut inside its JSON is as malformed there).
_CHAT_MALFORMED = 'data: {"choices": [{"index": 0, "delta": {"content": "\n\n'
MALFORMED_EVENT: Mapping[WireDialect, str] = {
    OPENAI: _CHAT_MALFORMED,
    ANTHROPIC: 'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"text\n\n',
    RESPONSES: _CHAT_MALFORMED,
    # A Kiro message cut off inside its prelude: total length 0x100, then nothing more.
    KIRO: "\x00\x00\x01\x00\x00\x00",
    # An NDJSON line cut off inside a string, then its line break: no JSON object.
    OLLAMA: '{"model":"m","message":{"role":"assistant","content":"hal\n',
}

# Plays one (tagged) scenario through the proxy; the runner binds settings and mock.
PlayFn = Callable[..., Exchange]


def wants_round(scenario: Scenario) -> bool:
    return TAG in scenario.tags


def new_token() -> str:
    """A tag no model would write: letters and digits only, so it survives any escaping."""
    return "xq" + secrets.token_hex(6)


def _replaced(value: Any, token: str) -> Any:
    if isinstance(value, str):
        return value.replace(EXCHANGE_MARK, token)
    if isinstance(value, dict):
        return {k: _replaced(v, token) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v, token) for v in value]
    return value


def _rebuilt(scenario: Scenario, data: dict[str, Any]) -> Scenario:
    rebuilt = parse_scenario(data, where=scenario.path or "<inline>", family=scenario.family)
    return rebuilt


def tag(scenario: Scenario, token: str) -> Scenario:
    """``scenario`` with every ``{{exchange}}`` (frames, request, expectations) replaced by ``token``.
    Write the mark inside one frame: a mark cut across two frames is left as it is.

    Not validated again: ``scenario`` was, and a token of letters and digits in place of
    the mark keeps every field what it was (this runs once per exchange of a soak)."""
    return build_scenario(_replaced(scenario.to_mapping(), token), scenario.path, scenario.family)


def breakers(scenario: Scenario, timeout: float) -> list[tuple[str, Scenario, bool]]:
    """Ways the scenario's exchange can end mid-call: (label, scenario, hang up). The cut
    falls after half the frames (rounded up), which the isolation scenarios place inside a call."""
    data = scenario.to_mapping()
    frames = list(data["backend"]["frames"])
    cut = (len(frames) + 1) // 2
    malformed = MALFORMED_EVENT[scenario.backend.dialect]

    def variant(name: str, **backend: Any) -> Scenario:
        changed = copy.deepcopy(data)
        changed["id"] = f"{scenario.id}.{name}"
        changed["backend"].update(backend)
        changed["stream_equivalence"] = False
        return _rebuilt(scenario, changed)

    return [
        ("cut off by length", variant("length", frames=frames[:cut], finish_reason="length"), False),
        ("dropped upstream", variant("drop", fault={"kind": "drop", "after_frame": cut}), False),
        ("malformed event", variant("malformed", frames=[*frames[:cut], {"raw": malformed}]), False),
        ("client hung up", variant("hang-up", fault={"kind": "stall", "after_frame": cut, "seconds": timeout}), True),
    ]


def step_pause(scenario: Scenario, alone: Sequence[Played]) -> float:
    """The pause between lockstep steps: what the proxy took per event when played alone
    (the quickest of the plays in a row), so each step is taken in before the next comes."""
    events = len(scenario.backend.frames) + 3  # the head, the finish and the terminator
    quickest = min((p.exchange.elapsed for p in alone), default=0.0)
    return min(MAX_PAUSE, max(MIN_PAUSE, quickest / events))


def play_round(scenario: Scenario, play: PlayFn, options: Options, profile: Profile, timeout: float) -> Round:
    """Every exchange of a round, judged one by one; the isolation rules judge the round."""

    def played(label: str, source: Scenario, judged: bool = True, **how: Any) -> Played:
        token = new_token()
        tagged = tag(source, token)
        exchange = play(tagged, **how)
        failures = tuple(f.rule_id for f in evaluate(tagged, exchange, options)) if judged else ()
        return Played(label, token, tagged, exchange, failures)

    alone = tuple(played(f"play {i + 1} of {REPEATS} in a row", scenario) for i in range(REPEATS))

    def at_once() -> tuple[Played, ...]:
        group = Lockstep(f"iso-{uuid.uuid4().hex}", CONCURRENCY, patience=max(1.0, timeout / 4),
                         pause=step_pause(scenario, alone))
        with ThreadPoolExecutor(CONCURRENCY) as pool:
            return tuple(pool.map(
                lambda i: played(f"client {i + 1} of {CONCURRENCY} at once", scenario, lockstep=group),
                range(CONCURRENCY),
            ))

    # A group whose step waited past its patience let the answers flow freely: that play is not the
    # reproducible interleaving the round promises, so it is played once more, and said if it breaks again.
    together = at_once()
    broke = 0
    while broke < LOCKSTEP_TRIES and any(p.exchange.lockstep_broken for p in together):
        broke += 1
        if broke < LOCKSTEP_TRIES:
            together = at_once()
    after: list[tuple[Played, Played]] = []
    for label, broken, hang_up in breakers(scenario, timeout):
        first = played(f"an exchange {label} mid-call", broken, judged=False, hang_up=hang_up)
        after.append((first, played(f"the scenario right after an exchange {label}", scenario)))
    return Round(alone, together, tuple(after), options, lockstep_broken=broke)
