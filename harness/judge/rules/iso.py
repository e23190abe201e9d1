"""Isolation rules: no state shared between exchanges, or between the choices of one.

A proxy that keeps parser state in one place for everyone (a module-level parser, a
call counter set at start-up, a buffer keyed by model name) answers one client at a
time correctly and mixes answers up as soon as two are in flight, or after one ended
mid-call. Public reports: vllm-mlx kept its streaming tool and reasoning parsers in
module-level singletons, so one stream's ``</think>`` turned another's reasoning into
content (vllm-mlx #649); vLLM shared one parser object across the ``n`` choices of a
request (vLLM #38158, #38526) and its Gemma 4 parser carried its call counter from one
request into the next, dropping arguments after a few calls (vLLM #39214).

The round rules judge a ``Round`` (``harness.run.isolation`` plays it): the scenario played
several times in a row, played by several clients at once with the mock releasing
frames in lockstep, and played right after exchanges that ended mid-call. Each
exchange's backend writes its own tag (``{{exchange}}`` in the scenario), so an answer
carrying another exchange's tag is proof of a leak. Every answer here is one a client
acts on, so each broken rule is a client that runs a call meant for another
conversation, or loses its own: severity ``client``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.dialects.clients import OPENAI_CLIENT
from harness.core.exchange import Exchange
from harness.core.scenario.model import Scenario
from harness.judge.compare import CallView, diff_calls
from harness.judge.readers.assemble import answer_from_body, assemble_stream, parse_body
from harness.judge.rules.context import Context
from harness.judge.rules.registry import EVERY_PROFILE, Violation, rule_group
from harness.judge.rules.terms import Options

rule = rule_group("isolation", "ISO", profiles=EVERY_PROFILE)

EXCHANGE_MARK = "{{exchange}}"  # replaced by each exchange's own tag before it is played
CHOICE_MARK = "{{choice}}"  # replaced by the choice's index in choices 1.. of an answer with several


@dataclass(frozen=True)
class Played:
    """One exchange of a round: what was played, with which tag, and the rules it broke."""

    label: str
    token: str
    scenario: Scenario  # as played: tagged
    exchange: Exchange
    failures: tuple[str, ...]  # rule ids ``evaluate`` reported


@dataclass(frozen=True)
class Round:
    """A scenario played one after another (``alone``), by several clients at once
    (``together``), and right after exchanges that ended mid-call (``after``: the
    exchange that broke off, then the clean one)."""

    alone: tuple[Played, ...]
    together: tuple[Played, ...]
    after: tuple[tuple[Played, Played], ...]
    options: Options
    # How many plays at once broke their lockstep (a step waited past its patience, and the answers then
    # flowed freely); ``together`` is the last play, in step unless every play broke.
    lockstep_broken: int = 0

    @property
    def in_step(self) -> bool:
        """Whether ``together`` was played in lockstep to the end."""
        return not any(p.exchange.lockstep_broken for p in self.together)

    def lockstep_note(self) -> str:
        """What the round says of its lockstep, or ""."""
        if self.in_step and not self.lockstep_broken:
            return ""
        if self.in_step:
            return (f"the clients at once broke their lockstep {self.lockstep_broken} time(s) (a step waited past "
                    "its patience) and were played again in step")
        return (f"the clients at once broke their lockstep on every play ({self.lockstep_broken}; a step waited "
                "past its patience, as when a proxy holds one request back until another is done): they were "
                "judged as free-flowing concurrent streams, not in lockstep")

    @property
    def played(self) -> tuple[Played, ...]:
        return (*self.alone, *self.together, *(p for pair in self.after for p in pair))


def _text(exchange: Exchange) -> str:
    return exchange.raw.decode("utf-8", "replace")


@rule.round("ISO-001")
def no_leak(round_: Round) -> Iterator[Violation]:
    texts = {id(p): _text(p.exchange) for p in round_.played}
    for p in round_.played:
        for q in round_.played:
            if q is not p and q.token in texts[id(p)]:
                yield Violation(
                    f"the answer to {p.label} carries {q.token!r}, which only the backend of {q.label} wrote",
                    {"exchange": p.label, "leaked_from": q.label, "token": q.token},
                )


@rule.round("ISO-002")
def same_verdicts_together(round_: Round) -> Iterator[Violation]:
    if not round_.alone:
        return
    alone = round_.alone[0]
    for p in round_.together:
        extra = [r for r in p.failures if r not in alone.failures]
        missing = [r for r in alone.failures if r not in p.failures]
        if extra or missing:
            said = [f"broke {', '.join(extra)}" if extra else "", f"did not break {', '.join(missing)}" if missing else ""]
            yield Violation(
                f"{p.label} {' and '.join(s for s in said if s)}, unlike the same exchange played alone",
                {"exchange": p.label, "extra": extra, "missing": missing},
            )


@dataclass(frozen=True)
class Reading:
    """What a client holds after an exchange, with the exchange's own tag read as the mark."""

    status: int | None
    failed: str | None  # timed out, or a transport error
    content: str
    calls: tuple[tuple[int, str, str], ...]  # (index, name, arguments in canonical JSON when they parse)
    finish_reason: str | None

    def describe(self) -> str:
        if self.failed is not None:
            return self.failed
        calls = ", ".join(f"#{i} {name}({args})" for i, name, args in self.calls) or "no call"
        return f"HTTP {self.status}, {calls}, text {self.content[:80]!r}, finish {self.finish_reason}"


def _canonical(arguments: str, token: str) -> str:
    text = arguments.replace(token, EXCHANGE_MARK)
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def reading(p: Played, options: Options) -> Reading:
    ex = p.exchange
    if ex.timed_out or ex.transport_error is not None:
        return Reading(ex.status, "timed out" if ex.timed_out else f"failed: {ex.transport_error}", "", (), None)
    ctx = Context(p.scenario, ex, Options(p.exchange.profile, options.strict, options.features))
    if not ctx.in_stage("answer"):
        return Reading(ex.status, None, _text(ex)[:200].replace(p.token, EXCHANGE_MARK), (), None)
    answer = ctx.answer
    calls = tuple((c.index, c.name, _canonical(c.arguments, p.token)) for c in answer.tool_calls)
    if p.exchange.profile.reads_xml:
        calls = tuple((i, c.name, _canonical(c.raw, p.token)) for i, c in enumerate(ctx.received_calls))
    return Reading(ex.status, None, ctx.visible_text.replace(p.token, EXCHANGE_MARK), calls, answer.finish_reason)


def _differs(p: Played, first: Played, options: Options) -> tuple[Reading, Reading] | None:
    a, b = reading(first, options), reading(p, options)
    if a != b or set(p.failures) != set(first.failures):
        return a, b
    return None


def _compared(round_: Round, played: Iterable[tuple[Played, str]]) -> Iterator[Violation]:
    """Each exchange's answer against the first one played alone; ``where`` says when it was played."""
    if not round_.alone:
        return
    first = round_.alone[0]
    for p, where in played:
        found = _differs(p, first, round_.options)
        if found is not None:
            a, b = found
            yield Violation(
                f"{p.label}{where} got {b.describe()} instead of {a.describe()} (as {first.label})"
                + _rules_said(p, first),
                {"exchange": p.label, "expected": a.describe(), "actual": b.describe()},
            )


@rule.round("ISO-003")
def same_answer_in_a_row(round_: Round) -> Iterator[Violation]:
    yield from _compared(round_, ((p, "") for p in round_.alone[1:]))


@rule.round("ISO-004")
def unaffected_after_broken_exchange(round_: Round) -> Iterator[Violation]:
    yield from _compared(round_, ((p, f", right after {broken.label},") for broken, p in round_.after))


def _rules_said(p: Played, first: Played) -> str:
    if set(p.failures) == set(first.failures):
        return ""
    return f" (rules broken: {', '.join(p.failures) or 'none'}; first: {', '.join(first.failures) or 'none'})"


# --------------------------------------------------------------------------- n > 1


def _requested_choices(ctx: Context) -> int:
    n = ctx.exchange.request_body.get("n") if isinstance(ctx.exchange.request_body, Mapping) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1


def _for_choice(value: Any, index: int) -> Any:
    if isinstance(value, str):
        return value.replace(CHOICE_MARK, str(index))
    if isinstance(value, Mapping):
        return {k: _for_choice(v, index) for k, v in value.items()}
    if isinstance(value, list):
        return [_for_choice(v, index) for v in value]
    return value


def expected_for_choice(ctx: Context, index: int) -> Sequence[tuple[str, Mapping[str, Any]]]:
    return [(name, _for_choice(dict(args), index)) for name, args in ctx.expected_calls]


@rule("ISO-005", profiles=(OPENAI_CLIENT,))
def choices_rescued_apart(ctx: Context) -> Iterator[Violation]:
    n = _requested_choices(ctx)
    if n == 1:
        return
    for index in range(1, n):
        if ctx.kind == "sse":
            answer = assemble_stream(ctx.payloads, index)
        else:
            answer = answer_from_body(parse_body(ctx.exchange.raw)[0], index)
        received = [CallView.from_json_text(c.name, c.arguments) for c in answer.tool_calls]
        expected = expected_for_choice(ctx, index)
        lines = diff_calls(expected, received)
        if lines:
            yield Violation(
                f"choice {index}: " + "; ".join(lines),
                {"choice": index, "expected": [{"name": n_, "arguments": dict(a)} for n_, a in expected],
                 "actual": [{"name": c.name, "arguments": c.raw} for c in received], **_choice_calls_at(ctx, index)},
            )


def _choice_calls_at(ctx: Context, index: int) -> dict[str, Any]:
    """Where choice ``index``'s calls begin: its first call delta, its message's calls, or the end."""
    if ctx.kind == "json":
        body = parse_body(ctx.exchange.raw)[0]
        choices = body.get("choices") if isinstance(body, Mapping) else None
        for i, choice in enumerate(choices if isinstance(choices, list) else ()):
            if isinstance(choice, Mapping) and choice.get("index") == index:
                return {"json_path": f"/choices/{i}/message"}
        return {"json_path": "/choices"}
    for payload in ctx.payloads:
        chunk = payload.chunk
        choices = chunk.get("choices") if chunk is not None else None
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, Mapping) else None
            if choice.get("index") == index and isinstance(delta, Mapping) and delta.get("tool_calls"):
                return ctx.at(payload)
    return {"byte_offset": ctx.stream.size}


__all__ = ["CHOICE_MARK", "EXCHANGE_MARK", "Played", "Round", "reading"]
