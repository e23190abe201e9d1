"""The soak's judgement of one exchange, and its tally: pure, no Locust, no network.

A soak plays scenarios whose backend writes a per-exchange tag (``{{exchange}}``, see
``harness.run.isolation``) through the proxy under test, many at once, for a long time,
with a share of upstream requests faulted (``harness.core.replay.fault_rate``). Each answer
is judged by the same rules as the suite's; an answer that carries another exchange's
tag was misdelivered (ISO-001). A faulted exchange is handled when the client got what
the clean scenario expects (the proxy retried and recovered) or what the faulted one
expects (the failure reported cleanly, in the dialect's shape).

Clients fail too (``ClientFaultRate``): a share of them hang up mid-stream, read slowly, or
send their body slowly. A slow reader or sender must still get the right answer (the same
rules judge it). After a hang-up, the proxy must close its own upstream request within
``CLOSE_WITHIN`` seconds, as the mock sees it: a proxy that keeps reading an answer nobody
will get keeps the model generating it. vLLM aborts a request whose client went away
(vllm-project/vllm#6975, and the review of vllm-project/vllm#32442: ``AsyncLLM.generate``
aborts on cancellation), and so do servers built on it (xorbitsai/inference#5549: "GPU
utilization dropped from 100% to 0%"), but only when the proxy in between closes its side.
Two checks of the soak are no rule of the registry (``SOAK_CHECKS``): that late close, and
the proxy's memory staying bounded (``harness.judge.soak_tally.memory_check``).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal

from harness.core.dialects.frames import ContentFrame
from harness.core.exchange import BackendActivity, Exchange
from harness.core.replay.fault_rate import FAULT_KINDS, FaultKind, FaultRate
from harness.core.scenario.loading import build_scenario, parse_scenario
from harness.core.scenario.model import Scenario
from harness.core.scenario.steps import has_steps
from harness.judge.markup import DEFAULT_MARKERS
from harness.judge.rules import RULES, Options, evaluate
from harness.judge.rules.iso import EXCHANGE_MARK

TOKEN = re.compile(rb"xq[0-9a-f]{12}")  # the shape of ``harness.run.isolation.new_token``
FIRST_CONTENT = re.compile(rb'"(?:content|text|partial_json)":"[^"]|"tool_calls"|"tool_use"')
# inconclusive: the load generator, not the proxy, kept an exchange from being judged
Outcome = Literal["ok", "faulted-handled", "failed", "inconclusive"]
ClientFaultKind = Literal["disconnect", "slow_read", "slow_body"]
CLIENT_FAULT_KINDS: tuple[ClientFaultKind, ...] = ("disconnect", "slow_read", "slow_body")
# Seconds from a client's hang-up to the mock seeing the proxy close its upstream request. A
# proxy notices the hang-up at once (an ASGI server reports ``http.disconnect``) or at its
# next write to the client, a token later; 2 s leaves room for a loaded machine, and is
# still far below the rest of the answer the mock would stream (``DISCONNECT_TAIL_SECONDS``).
CLOSE_WITHIN = 2.0
GIVE_UP_AFTER = 60.0  # seconds after which a mock that never answers is not asked again
ISOLATION_TAG = "isolation"  # the cases whose backends tag every exchange (``harness.run.isolation.TAG``)
DISCONNECT_FRAMES, DISCONNECT_FRAME_MS = 120, 50.0  # the hang-up case's answer: 6 s of prose, a frame each 50 ms
DISCONNECT_TAIL_SECONDS = DISCONNECT_FRAMES * DISCONNECT_FRAME_MS / 1000
SLOW_READ_BYTES, SLOW_READ_PAUSE = 256, 0.05  # a slow reader takes 256 bytes each 50 ms
SLOW_BODY_PIECES, SLOW_BODY_PAUSE = 4, 0.25  # a slow sender's body: 4 pieces, 250 ms apart
# Soak checks that are no rule of the registry: they judge what the mock and the proxy's
# memory show, not the answer.
SOAK_CHECKS: Mapping[str, str] = {
    "SOAK-001": f"After a client hangs up mid-stream, the proxy closes its upstream request within {CLOSE_WITHIN:g} s.",
    "SOAK-002": "The proxy's memory stays bounded: no growth in the second half of the soak.",
}


@dataclass(frozen=True)
class SoakCase:
    """A scenario to soak, with the scenario each drawn fault turns it into."""

    scenario: Scenario
    faulted: Mapping[FaultKind, Scenario]
    # What a client that hangs up plays instead: the same route, an answer long enough to tell closed from finished.
    disconnect: Scenario | None = None
    dropped_loosely: tuple[Scenario, ...] = ()  # ``_dropped_loosely``: other answers a drop may rightly leave


def _faulted(scenario: Scenario, kind: FaultKind, rate: FaultRate) -> Scenario:
    """``scenario`` as the mock plays it with fault ``kind``, expecting what a correct proxy
    gives its client then: the upstream status relayed, an error event in the stream, or,
    after a stall, the whole answer."""
    data = copy.deepcopy(scenario.to_mapping())
    fault = rate.fault(kind, len(scenario.backend.frames))
    data["backend"]["fault"] = {k: v for k, v in (("kind", fault.kind), ("status", fault.status),
                                                  ("after_frame", fault.after_frame), ("seconds", fault.seconds),
                                                  ("headers", dict(fault.headers) or None)) if v is not None}
    data["stream_equivalence"] = False
    data["rechunk"] = False
    expect = data["expect"]
    if fault.kind == "http_error":
        data["expect"] = {"error": {"status": [fault.status], "in_stream": "forbidden"}}
    elif fault.kind == "drop":
        data["expect"] = {"tool_calls": [], "error": {"in_stream": "required"},
                          "content_regex": _sent_before(scenario, fault.after_frame or 0)}
    else:
        data["expect"] = expect
    return parse_scenario(data, where=f"{scenario.id} with a drawn {kind} fault", family=scenario.family)


# A model's special tokens (Harmony's ``<|channel|>``, DeepSeek's ``<｜tool▁sep｜>``): markup
# that frames prose as well as calls, which a proxy reading the format takes off.
_SPECIAL_TOKEN = re.compile(r"<\|[^|\n]{1,40}\|>|<｜[^｜\n]{1,40}｜>")


def _markup_at(scenario: Scenario, text: str) -> int | None:
    """Where call markup, or a special token of the model's, first begins in ``text``."""
    found = [i for i in (text.find(m) for m in (*DEFAULT_MARKERS, *scenario.expect.markers)) if i >= 0]
    token = _SPECIAL_TOKEN.search(text)
    if token is not None:
        found.append(token.start())
    return min(found) if found else None


def _sent_before(scenario: Scenario, frames: int) -> str:
    """A pattern for the text a client may see when the upstream drops after ``frames``
    frames: the prose before any call markup, then what followed of it or nothing (a proxy
    flushes the partial call it held as text, or leaves it out; it loses no prose)."""
    sent = "".join(f.content for f in scenario.backend.frames[:frames] if isinstance(f, ContentFrame))
    at = _markup_at(scenario, sent)
    prose = sent if at is None else sent[:at]

    return f"^{_literal(prose)}(?:{_literal(sent[len(prose):])})?$"


def _literal(text: str) -> str:
    """``text`` as a pattern; the exchange mark stays itself, for the tag to replace."""
    return re.escape(text).replace(re.escape(EXCHANGE_MARK), EXCHANGE_MARK)


def paced(scenario: Scenario, delay_ms: float) -> Scenario:
    """``scenario`` with its backend waiting ``delay_ms`` before each frame, as a model
    generating tokens does: answers in flight then overlap frame by frame in the proxy."""
    data = copy.deepcopy(scenario.to_mapping())
    data["backend"]["delay_ms"] = delay_ms
    return parse_scenario(data, where=scenario.path or scenario.id, family=scenario.family)


def hang_up_case(scenario: Scenario) -> Scenario:
    """``scenario``'s route (dialect, client, request) with an answer of plain prose that lasts
    ``DISCONNECT_TAIL_SECONDS``: a client hangs up after its first words, and an upstream answer
    that ends well before the rest was due was closed by the proxy (prose, so that a proxy
    that only notices a hang-up on its next write to the client writes at once)."""
    data = copy.deepcopy(scenario.to_mapping())
    backend = data["backend"]
    backend["frames"] = [f"Word {i} of {EXCHANGE_MARK}. " for i in range(DISCONNECT_FRAMES)]
    backend["delay_ms"] = DISCONNECT_FRAME_MS
    for key in ("finish_reason", "fault", "write_bytes", "split_multibyte", "write_delay_ms", "server"):
        backend.pop(key, None)
    data["expect"] = {"content": "".join(backend["frames"])}
    for key in ("rescues", "markers"):
        data.pop(key, None)
    data["stream_equivalence"] = False
    data["rechunk"] = False
    return parse_scenario(data, where=f"{scenario.id} played by a client that hangs up", family=scenario.family)


def soakable(scenario: Scenario) -> bool:
    """A case one streamed request plays through a proxy that calls upstream in its client's
    own API, judged by its answer alone: no fault or broken request of its own (the soak
    draws those), no second step, no feature, no expectation on what reached the upstream
    or on time (which a loaded machine cannot keep)."""
    expect = scenario.expect
    return (scenario.streams and scenario.backend.fault is None and scenario.client.raw_body is None
            and not scenario.client.truncate_body and not has_steps(scenario) and not scenario.requires
            and scenario.client.profile.written_as is None
            and scenario.backend.dialect is scenario.client.profile.written_in and not expect.upstream
            and expect.upstream_requests is None and expect.within_seconds is None and not expect.proxy_survives
            and expect.error is None)


def folder(scenario: Scenario, root: PurePath) -> str:
    """The folder below the library's ``root`` a case comes from (``captured/hermes``); its
    family when it has no path there."""
    if scenario.path is None:
        return scenario.family
    try:
        return PurePath(scenario.path).parent.relative_to(root).as_posix()
    except ValueError:
        return scenario.family


def plain_until_drop(scenario: Scenario) -> bool:
    """Whether what the backend sends before a drawn drop (``FaultRate.fault``: after half its
    frames) is prose alone: no call, no call markup or special token begun. The drop's expectation (that prose,
    no call) is then exact; after a whole call, a proxy may rightly have passed it on."""
    before = scenario.backend.frames[: len(scenario.backend.frames) // 2]
    if not all(isinstance(f, ContentFrame) for f in before):
        return False
    return _markup_at(scenario, "".join(f.content for f in before if isinstance(f, ContentFrame))) is None


def _dropped_loosely(scenario: Scenario, dropped: Scenario) -> tuple[Scenario, ...]:
    """For a case with call markup begun before its drop (not ``plain_until_drop``): the drop's
    expectation with any first calls of the clean answer (those whole before the drop may
    rightly reach the client), and of the text only that it begins with the prose before
    the markup (the held markup may be flushed in part, cleaned of a model's special
    tokens, or left out); the in-stream error and every other rule still hold."""
    if plain_until_drop(scenario):
        return ()
    text = "".join(f.content for f in scenario.backend.frames if isinstance(f, ContentFrame))
    at = _markup_at(scenario, text)
    prose = "" if at is None else text[:at]
    calls = scenario.to_mapping()["expect"].get("tool_calls", [])
    loose = []
    for count in range(len(calls) + 1):
        data = copy.deepcopy(dropped.to_mapping())
        data["expect"]["tool_calls"] = copy.deepcopy(calls[:count])
        data["expect"]["content_regex"] = "^" + _literal(prose) + r"[\s\S]*$"
        loose.append(parse_scenario(data, where=f"{scenario.id} with a drawn drop after {count} call(s)",
                                    family=scenario.family))
    return tuple(loose)


def default_workload(library: Iterable[Scenario], root: PurePath) -> list[Scenario]:
    """Every isolation case (their backends tag each exchange: a leak shows in the answer),
    and one representative of every other folder below ``root`` a soak can play: the first
    by id of its cases with only prose before a drawn drop (``plain_until_drop``: judged
    exactly), and of those that tag each exchange, else that expect a call, else any."""
    chosen: list[Scenario] = []
    folders: dict[str, list[Scenario]] = {}
    for scenario in sorted(library, key=lambda s: s.id):
        if not soakable(scenario):
            continue
        if ISOLATION_TAG in scenario.tags:
            chosen.append(scenario)
        else:
            folders.setdefault(folder(scenario, root), []).append(scenario)
    for cases in folders.values():
        chosen.append(min(cases, key=lambda s: (not plain_until_drop(s), EXCHANGE_MARK not in s.backend.text,
                                                not s.expect.tool_calls)))
    return chosen


def soak_cases(scenarios: Iterable[Scenario], rate: FaultRate | None, delay_ms: float = 0.0,
               client_faults: bool = False) -> list[SoakCase]:
    cases = []
    for scenario in scenarios:
        scenario = paced(scenario, delay_ms) if delay_ms else scenario
        faulted = {kind: _faulted(scenario, kind, rate) for kind in FAULT_KINDS} if rate is not None else {}
        loose = _dropped_loosely(scenario, faulted["drop"]) if rate is not None else ()
        cases.append(SoakCase(scenario, faulted, hang_up_case(scenario) if client_faults else None, loose))
    return cases


@dataclass(frozen=True)
class ClientFaultRate:
    """``rate`` of exchanges (0..1) whose client misbehaves, chosen from ``seed`` and the
    exchange's number within its user, so that a soak's client faults follow from its seed."""

    rate: float
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError(f"the client fault rate must be from 0 to 1, not {self.rate}")

    def decide(self, user: str, number: int) -> ClientFaultKind | None:
        """The client fault of exchange ``number`` of user ``user``, or None."""
        if self.rate <= 0.0:
            return None
        digest = hashlib.blake2b(f"client:{self.seed}:{user}:{number}".encode(), digest_size=16).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 >= self.rate:
            return None
        return CLIENT_FAULT_KINDS[int.from_bytes(digest[8:], "big") % len(CLIENT_FAULT_KINDS)]


def hang_up_closed(hung_up_at: float, waited: float, received: int,
                   activity: BackendActivity) -> tuple[bool, float | None]:
    """After a hang-up at ``hung_up_at`` (wall clock), ``waited`` seconds ago: whether to stop
    asking the mock, and how long after the hang-up it saw the upstream request end (None: not
    yet). The times are the mock's, not when its answer reached a loaded load generator."""
    if received >= 1 and activity.answering == 0:
        return True, waited if activity.ended_at is None else max(0.0, activity.ended_at - hung_up_at)
    mock_waited = waited if activity.clock is None else activity.clock - hung_up_at
    return mock_waited > CLOSE_WITHIN or waited > GIVE_UP_AFTER, None


def judge_hang_up(closed_after: float | None) -> Verdict:
    """A client hung up mid-stream; ``closed_after`` is how long after that the mock saw the
    proxy's upstream request end (None: not within ``CLOSE_WITHIN``)."""
    if closed_after is not None and closed_after <= CLOSE_WITHIN:
        return Verdict("faulted-handled")
    return Verdict("failed", ("SOAK-001",), f"the upstream request was still open {CLOSE_WITHIN:g} s after the "
                                            "client hung up")


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    rules: tuple[str, ...] = ()  # broken rule ids (outcome "failed")
    detail: str = ""  # the first broken rule's finding

    @property
    def failure(self) -> str:
        """The failure as Locust groups it: the rule id and its statement, one line per kind."""
        return "; ".join(f"{r} {RULES[r].statement}" if r in RULES else f"{r} {SOAK_CHECKS[r]}" if r in SOAK_CHECKS
                         else r for r in self.rules)


def misdelivered(exchange: Exchange, token: str) -> list[str]:
    """Tags of other exchanges in this answer."""
    own = token.encode()
    return sorted({m.decode() for m in TOKEN.findall(exchange.raw) if m != own})


def judge(case: SoakCase, tag: str, played: Scenario, exchange: Exchange, options: Options,
          fault: FaultKind | None, faulted_scenario: Scenario | None = None) -> Verdict:
    """One exchange of the soak: ``played`` is ``case.scenario`` tagged with ``tag``; ``fault``
    the fault the client computed for its request; ``faulted_scenario`` the tagged faulted case."""
    leaked = misdelivered(exchange, tag)
    if leaked:
        return Verdict("failed", ("ISO-001",), f"the answer carries {', '.join(leaked)} of other exchanges")
    failures = evaluate(played, exchange, options)
    if not failures:
        return Verdict("faulted-handled" if fault is not None else "ok")
    if fault is not None and faulted_scenario is not None:
        as_faulted = evaluate(faulted_scenario, exchange, options)
        if not as_faulted:
            return Verdict("faulted-handled")
        if fault == "drop" and any(not evaluate(_retagged(loose, faulted_scenario, tag), exchange, options)
                                   for loose in case.dropped_loosely):
            return Verdict("faulted-handled")
        failures = as_faulted
    return Verdict("failed", tuple(f.rule_id for f in failures), failures[0].message)


def _retagged(scenario: Scenario, tagged: Scenario, tag: str) -> Scenario:
    """``scenario`` with the exchange's ``tag`` where its mark is, as ``tagged`` was tagged."""
    def replaced(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(EXCHANGE_MARK, tag)
        if isinstance(value, dict):
            return {k: replaced(v) for k, v in value.items()}
        return [replaced(v) for v in value] if isinstance(value, list) else value

    return build_scenario(replaced(scenario.to_mapping()), tagged.path, tagged.family)


def first_content(chunks: Sequence[tuple[float, bytes]]) -> float | None:
    """When the first content (text or a call) arrived: seconds of the first chunk carrying it."""
    tail = b""
    for at, chunk in chunks:
        if FIRST_CONTENT.search(tail + chunk):
            return at
        tail = chunk[-32:]
    return None
