"""The soak's judgement of one exchange, and its tally: pure, no Locust, no network.

A soak plays scenarios whose backend writes a per-exchange tag (``{{exchange}}``, see
``harness.run.isolation``) through the proxy under test, many at once, for a long time,
with a share of upstream requests faulted (``harness.core.replay.fault_rate``). Each answer
is judged by the same rules as the suite's; an answer that carries another exchange's
tag was misdelivered (ISO-001). A faulted exchange is handled when the client got what
the clean scenario expects (the proxy retried and recovered) or what the faulted one
expects (the failure reported cleanly, in the dialect's shape).
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.core.dialects.frames import ContentFrame
from harness.core.exchange import Exchange
from harness.core.replay.fault_rate import FAULT_KINDS, FaultKind, FaultRate
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.judge.markup import DEFAULT_MARKERS
from harness.judge.rules import RULES, Options, evaluate
from harness.judge.rules.iso import EXCHANGE_MARK

TOKEN = re.compile(rb"xq[0-9a-f]{12}")  # the shape of ``harness.run.isolation.new_token``
FIRST_CONTENT = re.compile(rb'"(?:content|text|partial_json)":"[^"]|"tool_calls"|"tool_use"')
Outcome = Literal["ok", "faulted-handled", "failed"]


@dataclass(frozen=True)
class SoakCase:
    """A scenario to soak, with the scenario each drawn fault turns it into."""

    scenario: Scenario
    faulted: Mapping[FaultKind, Scenario]


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


def _sent_before(scenario: Scenario, frames: int) -> str:
    """A pattern for the text a client may see when the upstream drops after ``frames``
    frames: the prose before any call markup, then what followed of it or nothing (a proxy
    flushes the partial call it held as text, or leaves it out; it loses no prose)."""
    sent = "".join(f.content for f in scenario.backend.frames[:frames] if isinstance(f, ContentFrame))
    found = [i for i in (sent.find(m) for m in (*DEFAULT_MARKERS, *scenario.expect.markers)) if i >= 0]
    prose = sent[: min(found)] if found else sent

    def literal(text: str) -> str:  # the exchange mark stays itself, for the tag to replace
        return re.escape(text).replace(re.escape(EXCHANGE_MARK), EXCHANGE_MARK)

    return f"^{literal(prose)}(?:{literal(sent[len(prose):])})?$"


def paced(scenario: Scenario, delay_ms: float) -> Scenario:
    """``scenario`` with its backend waiting ``delay_ms`` before each frame, as a model
    generating tokens does: answers in flight then overlap frame by frame in the proxy."""
    data = copy.deepcopy(scenario.to_mapping())
    data["backend"]["delay_ms"] = delay_ms
    return parse_scenario(data, where=scenario.path or scenario.id, family=scenario.family)


def soak_cases(scenarios: Iterable[Scenario], rate: FaultRate | None, delay_ms: float = 0.0) -> list[SoakCase]:
    cases = []
    for scenario in scenarios:
        scenario = paced(scenario, delay_ms) if delay_ms else scenario
        faulted = {kind: _faulted(scenario, kind, rate) for kind in FAULT_KINDS} if rate is not None else {}
        cases.append(SoakCase(scenario, faulted))
    return cases


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    rules: tuple[str, ...] = ()  # broken rule ids (outcome "failed")
    detail: str = ""  # the first broken rule's finding

    @property
    def failure(self) -> str:
        """The failure as Locust groups it: the rule id and its statement, one line per kind."""
        return "; ".join(f"{r} {RULES[r].statement}" if r in RULES else r for r in self.rules)


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
        failures = as_faulted
    return Verdict("failed", tuple(f.rule_id for f in failures), failures[0].message)


def first_content(chunks: Sequence[tuple[float, bytes]]) -> float | None:
    """When the first content (text or a call) arrived: seconds of the first chunk carrying it."""
    tail = b""
    for at, chunk in chunks:
        if FIRST_CONTENT.search(tail + chunk):
            return at
        tail = chunk[-32:]
    return None


# --------------------------------------------------------------------------- tally


def percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


@dataclass
class Tally:
    """Counts and timings of a soak (or of one worker's part of it, merged on the master)."""

    exchanges: int = 0
    ok: int = 0
    faulted: int = 0
    faulted_handled: int = 0
    failed: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    ttft_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)

    def add(self, verdict: Verdict, fault: FaultKind | None, ttft: float | None, total: float) -> None:
        self.exchanges += 1
        self.faulted += fault is not None
        if verdict.outcome == "ok":
            self.ok += 1
        elif verdict.outcome == "faulted-handled":
            self.faulted_handled += 1
        else:
            self.failed += 1
            self.by_rule.update(verdict.rules)
        if fault is None and verdict.outcome == "ok":  # a faulted answer's timing says nothing of the proxy
            if ttft is not None:
                self.ttft_ms.append(ttft * 1000)
            self.total_ms.append(total * 1000)

    def to_json(self) -> dict[str, Any]:
        return {"exchanges": self.exchanges, "ok": self.ok, "faulted": self.faulted,
                "faulted_handled": self.faulted_handled, "failed": self.failed, "by_rule": dict(self.by_rule),
                "ttft_ms": self.ttft_ms, "total_ms": self.total_ms}

    def merge(self, data: Mapping[str, Any]) -> None:
        for key in ("exchanges", "ok", "faulted", "faulted_handled", "failed"):
            setattr(self, key, getattr(self, key) + int(data.get(key, 0)))
        self.by_rule.update(data.get("by_rule", {}))
        self.ttft_ms.extend(data.get("ttft_ms", ()))
        self.total_ms.extend(data.get("total_ms", ()))

    def take(self) -> dict[str, Any]:
        """Everything counted since the last take, as data (a worker's report to its master)."""
        data = self.to_json()
        self.__dict__.update(Tally().__dict__)
        return data

    def progress(self, elapsed: float, users: int) -> str:
        p50 = percentile(self.ttft_ms, 50)
        ttft = f"{p50:.0f} ms" if p50 is not None else "-"
        rules = ", ".join(f"{r} {n}" for r, n in self.by_rule.most_common()) or "none"
        return (f"soak {elapsed:5.0f}s  users {users}  exchanges {self.exchanges}  ok {self.ok}  "
                f"faulted {self.faulted} (handled {self.faulted_handled})  failed {self.failed} [{rules}]  "
                f"first content p50 {ttft}")

    def summary(self, rss: Sequence[tuple[float, int]] = ()) -> str:
        def ms(values: Sequence[float]) -> str:
            p50, p99 = percentile(values, 50), percentile(values, 99)
            return "-" if p50 is None or p99 is None else f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"

        lines = [
            "soak summary",
            f"  exchanges            {self.exchanges}",
            f"  ok                   {self.ok}",
            f"  faulted              {self.faulted} (handled {self.faulted_handled})",
            f"  rule failures        {self.failed}" + (
                "" if not self.by_rule else " (" + ", ".join(f"{r}: {n}" for r, n in sorted(self.by_rule.items())) + ")"),
            f"  first content        {ms(self.ttft_ms)}  (healthy exchanges)",
            f"  total                {ms(self.total_ms)}",
        ]
        if rss:
            shown = _spread(rss, 8)
            lines.append("  proxy RSS            " + ", ".join(f"{t:.0f}s {kb / 1024:.0f} MB" for t, kb in shown)
                         + f" (max {max(kb for _, kb in rss) / 1024:.0f} MB)")
        return "\n".join(lines)


def _spread(samples: Sequence[tuple[float, int]], count: int) -> list[tuple[float, int]]:
    if len(samples) <= count:
        return list(samples)
    step = (len(samples) - 1) / (count - 1)
    return [samples[round(i * step)] for i in range(count)]


def rss_kb(pid: int) -> int | None:
    """Resident memory of process ``pid`` in KiB (Linux), None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None
