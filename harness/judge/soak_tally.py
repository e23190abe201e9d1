"""The soak's tally: counts and timings of every exchange, merged across Locust's workers,
the summary with its verdict, and the soak check on the proxy's memory (SOAK-002). Pure:
the samples come from ``harness.run.locustfile``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.replay.fault_rate import FaultKind
from harness.judge.soak import CLIENT_FAULT_KINDS, CLOSE_WITHIN, ClientFaultKind, Verdict

def percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


@dataclass
class Tally:
    """Counts and timings of a soak (or of one worker's part of it, merged on the master).

    ``ok`` counts the exchanges with no fault at either end that broke no rule; a faulted
    exchange (upstream) and a client-faulted one are each counted with their own handled
    count, so an exchange faulted at both ends counts in both."""

    exchanges: int = 0
    ok: int = 0
    faulted: int = 0
    faulted_handled: int = 0
    failed: int = 0
    by_rule: Counter[str] = field(default_factory=Counter)
    ttft_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    client_faulted: Counter[str] = field(default_factory=Counter)  # by kind
    client_handled: int = 0
    retried: int = 0  # exchanges whose request the client sent again after a connection error, as the SDKs do
    inconclusive: int = 0  # not judged: the load generator stalled its own slow sender past the proxy's patience
    close_ms: list[float] = field(default_factory=list)  # hang-up to upstream closed, as the mock saw it

    def add(self, verdict: Verdict, fault: FaultKind | None, ttft: float | None, total: float,
            client_fault: ClientFaultKind | None = None, closed_after: float | None = None,
            retried: bool = False) -> None:
        self.exchanges += 1
        self.retried += retried
        self.faulted += fault is not None
        if client_fault is not None:
            self.client_faulted[client_fault] += 1
        if closed_after is not None:
            self.close_ms.append(closed_after * 1000)
        if verdict.outcome == "inconclusive":
            self.inconclusive += 1
            return
        if verdict.outcome == "failed":
            self.failed += 1
            self.by_rule.update(verdict.rules)
            return
        self.faulted_handled += fault is not None
        self.client_handled += client_fault is not None
        if fault is None and client_fault is None:
            self.ok += 1
            # a faulted answer's timing says nothing of the proxy, nor a slow client's
            if ttft is not None:
                self.ttft_ms.append(ttft * 1000)
            self.total_ms.append(total * 1000)

    _COUNTS = ("exchanges", "ok", "faulted", "faulted_handled", "failed", "client_handled", "retried", "inconclusive")

    def to_json(self) -> dict[str, Any]:
        return {**{key: getattr(self, key) for key in self._COUNTS}, "by_rule": dict(self.by_rule),
                "ttft_ms": self.ttft_ms, "total_ms": self.total_ms, "client_faulted": dict(self.client_faulted),
                "close_ms": self.close_ms}

    def merge(self, data: Mapping[str, Any]) -> None:
        for key in self._COUNTS:
            setattr(self, key, getattr(self, key) + int(data.get(key, 0)))
        self.by_rule.update(data.get("by_rule", {}))
        self.client_faulted.update(data.get("client_faulted", {}))
        self.ttft_ms.extend(data.get("ttft_ms", ()))
        self.total_ms.extend(data.get("total_ms", ()))
        self.close_ms.extend(data.get("close_ms", ()))

    def take(self) -> dict[str, Any]:
        """Everything counted since the last take, as data (a worker's report to its master)."""
        data = self.to_json()
        self.__dict__.update(Tally().__dict__)
        return data

    def progress(self, elapsed: float, users: int) -> str:
        p50 = percentile(self.ttft_ms, 50)
        ttft = f"{p50:.0f} ms" if p50 is not None else "-"
        rules = ", ".join(f"{r} {n}" for r, n in self.by_rule.most_common()) or "none"
        clients = sum(self.client_faulted.values())
        return (f"soak {elapsed:5.0f}s  users {users}  exchanges {self.exchanges}  ok {self.ok}  "
                f"faulted {self.faulted} (handled {self.faulted_handled})  "
                + (f"client faults {clients} (handled {self.client_handled})  " if clients else "")
                + f"failed {self.failed} [{rules}]  first content p50 {ttft}")

    def summary(self, rss: Sequence[tuple[float, int]] = (), cut_short: str = "") -> str:
        """The figures, then one verdict line: pass, or what failed (rules, soak checks, and
        ``cut_short``: why the soak ended before its time)."""
        def ms(values: Sequence[float]) -> str:
            p50, p99 = percentile(values, 50), percentile(values, 99)
            return "-" if p50 is None or p99 is None else f"p50 {p50:.1f} ms, p99 {p99:.1f} ms"

        lines = [
            "soak summary",
            f"  exchanges            {self.exchanges}",
            f"  ok                   {self.ok}",
            f"  faulted              {self.faulted} (handled {self.faulted_handled})",
        ]
        clients = sum(self.client_faulted.values())
        if clients:
            kinds = ", ".join(f"{kind.replace('_', ' ')} {self.client_faulted[kind]}" for kind in CLIENT_FAULT_KINDS)
            lines.append(f"  client faults        {clients} (handled {self.client_handled}; {kinds})")
        if self.retried:
            lines.append(f"  retried              {self.retried} (a connection closed before any answer: sent again, "
                         "as the SDKs do)")
        if self.inconclusive:
            lines.append(f"  inconclusive         {self.inconclusive} (a slow sender answered 408 after the load "
                         "generator itself paused it too long)")
        lines.append(f"  rule failures        {self.failed}" + (
            "" if not self.by_rule else " (" + ", ".join(f"{r}: {n}" for r, n in sorted(self.by_rule.items())) + ")"))
        if self.client_faulted["disconnect"]:
            late = self.by_rule["SOAK-001"]
            slowest = f", max {max(self.close_ms):.0f} ms" if self.close_ms else ""
            p50 = percentile(self.close_ms, 50)
            lines.append(f"  upstream closed      after {self.client_faulted['disconnect']} hang-up(s): "
                         + (f"p50 {p50:.0f} ms{slowest}; " if p50 is not None else "")
                         + f"{late} not within {CLOSE_WITHIN:g} s")
        lines += [f"  first content        {ms(self.ttft_ms)}  (healthy exchanges)",
                  f"  total                {ms(self.total_ms)}"]
        memory_ok, memory = memory_check(rss)
        if rss:
            shown = _spread(rss, 8)
            lines.append("  proxy RSS            " + ", ".join(f"{t:.0f}s {kb / 1024:.0f} MB" for t, kb in shown)
                         + f" (max {max(kb for _, kb in rss) / 1024:.0f} MB)")
            lines.append(f"  proxy memory         {memory}")
        problems = [f"{self.failed} exchange(s) broke a rule"] if self.failed else []
        if memory_ok is False:
            problems.append("SOAK-002 memory grew")
        if cut_short:
            problems.append(cut_short)
        lines.append("  verdict              " + ("FAIL: " + "; ".join(problems) if problems else "pass"))
        return "\n".join(lines)

    def passed(self, rss: Sequence[tuple[float, int]] = ()) -> bool:
        return not self.failed and memory_check(rss)[0] is not False


MEMORY_SLACK_KB, MEMORY_SLACK_SHARE = 16 * 1024, 0.2


def memory_check(rss: Sequence[tuple[float, int]]) -> tuple[bool | None, str]:
    """SOAK-002 on the proxy's RSS samples ``(seconds, KiB)``: its peak in the second half of
    the soak at most 16 MB or 20 % (the larger) above its peak in the first half, which
    takes in the warm-up (imports, pools, caches filled once). A proxy holding on to what
    each slow or gone client left behind grows with the exchanges, past any such slack.
    None when there are too few samples (fewer than four) to say."""
    if len(rss) < 4:
        return None, "not judged (fewer than 4 samples)"
    middle = (rss[0][0] + rss[-1][0]) / 2
    first = max(kb for t, kb in rss if t <= middle)
    second = max((kb for t, kb in rss if t > middle), default=first)
    limit = first + max(MEMORY_SLACK_KB, int(first * MEMORY_SLACK_SHARE))
    figures = (f"peak {first / 1024:.0f} MB in the first half, {second / 1024:.0f} MB in the second "
               f"(limit {limit / 1024:.0f} MB)")
    if second > limit:
        return False, f"FAIL, grows: {figures}"
    return True, f"bounded: {figures}"


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
