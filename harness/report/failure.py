"""One failing item explained: the calls received against the expected ones, each broken rule with its
evidence, where in the raw answer it happened, and the command that replays it."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness.core.exchange import Exchange
from harness.core.frames.rechunk import describe_split
from harness.core.records import Attempt, ScenarioRun
from harness.core.scenario.model import Scenario
from harness.judge.compare import fold_ws
from harness.judge.readers.assemble import Answer
from harness.judge.readers.reading import read_answer
from harness.judge.readers.transcript import Position, clip, transcript
from harness.judge.readers.xml_calls import parse_xml_calls, tool_vocabulary
from harness.judge.rules import Rule
from harness.report.summary import rules_by_id

# --------------------------------------------------------------------------- one failing item


def _pretty_arguments(arguments: Any) -> list[str]:
    """Arguments as indented JSON lines; raw text when they are not JSON."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return [f"(not JSON) {clip(repr(arguments))}"]
    return json.dumps(arguments, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _call_lines(calls: Iterable[tuple[str, Any]]) -> list[str]:
    lines: list[str] = []
    for i, (name, arguments) in enumerate(calls, 1):
        lines.append(f"#{i} {name}")
        lines.extend("   " + line for line in _pretty_arguments(arguments))
    return lines or ["(no tool calls)"]


def _received_calls(scenario: Scenario, exchange: Exchange, answer: Answer) -> tuple[list[tuple[str, Any]], str]:
    """The calls a client of this profile reads, and the content left around them."""
    if exchange.profile.reads_xml:
        parsed = parse_xml_calls(answer.content, tool_vocabulary(exchange.request_body))
        return [(c.name, dict(c.params)) for c in parsed.calls], parsed.outside
    return [(c.name, c.arguments) for c in answer.tool_calls], answer.content


def answer_diff(scenario: Scenario, exchange: Exchange) -> list[str]:
    """Expected vs received answer, only the parts that differ; empty when they agree."""
    try:
        answer = read_answer(exchange)
    except Exception as exc:  # noqa: BLE001 - a display aid must never hide the failure itself
        return [f"(the answer could not be read: {exc})"]
    calls, content = _received_calls(scenario, exchange, answer)
    expect = scenario.expect
    out: list[str] = []
    expected_lines = _call_lines((c.name, c.arguments) for c in expect.tool_calls)
    received_lines = _call_lines(calls)
    if expected_lines != received_lines:
        via = " (read as XML from the content, xml-client profile)" if exchange.profile.reads_xml else ""
        out.append(f"tool calls{via} (- expected, + received):")
        diff = difflib.unified_diff(expected_lines, received_lines, lineterm="", n=len(expected_lines) + len(received_lines))
        out.extend("  " + line[0] + " " + line[1:] for line in list(diff)[3:])
    if expect.content is not None:
        wanted = expect.content if expect.content_exact else fold_ws(expect.content)
        got = content if expect.content_exact else fold_ws(content)
        if wanted != got:
            out.append("content" + (" (byte for byte)" if expect.content_exact else " (white space folded)") + ":")
            out.append(f"  - expected {clip(repr(wanted), 300)}")
            out.append(f"  + received {clip(repr(got), 300)}")
    elif expect.content_regex is not None:
        out.append(f"content must match /{expect.content_regex}/; received {clip(repr(content), 300)}")
    if expect.finish_reason is not None and answer.finish_reason != expect.finish_reason:
        label = exchange.profile.answers.finish_field
        out.append(f"{label}: expected {expect.finish_reason!r}, received {answer.finish_reason!r}")
    if answer.error is not None:
        out.append(f"the proxy reported an error: {clip(json.dumps(answer.error, ensure_ascii=False), 300)}")
    return out


def evidence_lines(evidence: Mapping[str, Any]) -> list[str]:
    out = []
    for key in ("expected", "actual"):
        if key in evidence:
            value = evidence[key]
            plain = isinstance(value, str) and "\n" not in value and value.strip() == value and value
            text = value if plain else json.dumps(value, ensure_ascii=False, default=repr)
            out.append(f"{key}: {clip(text, 300)}")
    more = evidence.get("more")
    if isinstance(more, list) and more:
        out.append("also:")
        out.extend(f"  - {clip(str(m), 200)}" for m in more)
    return out


def rule_heading(rule_id: str, rules: Mapping[str, Rule]) -> str:
    """The rule's line, and for a client rule the line naming who breaks on it: the
    proxy's author sees at once which real client a failure costs them."""
    rule = rules.get(rule_id)
    if rule is None:
        return f"rule {rule_id}"
    heading = f"rule {rule.id} [{rule.severity}, {rule.group}]: {rule.statement}"
    if rule.breaks is None:
        return heading
    versions = f" ({rule.breaks.versions})" if rule.breaks.versions else ""
    return f"{heading}\n  breaks {', '.join(rule.breaks.clients)}{versions}: {rule.breaks.how}"


def render_failures(
    run: ScenarioRun,
    *,
    reproduce: Callable[[Attempt], str],
    known: Mapping[str, str] | None = None,
    notes: Sequence[str] = (),
    full: bool = True,
) -> str:
    """Every failure of one item, grouped by exchange, with a command to replay each.

    ``known`` maps rule ids listed in the known-failures file to their reason. Without
    ``full``, each finding says where in the answer it is instead of showing the raw
    answer around it (``--tb=long`` shows it)."""
    rules = rules_by_id()
    known = known or {}
    scenario = run.scenario
    out = [
        f"rules broken: {', '.join(run.failed_rules)} (profile {run.profile.name})",
        f"{scenario.id}: {scenario.title}",
        *notes,
    ]
    for attempt in run.attempts:
        if not attempt.failures:
            continue
        out.append("")
        out.append(f"=== {attempt.label} ===")
        if attempt.kind == "equivalence" and attempt.other is not None:
            out.append("streamed answer vs the expectation:")
            out.extend("  " + line for line in answer_diff(scenario, attempt.other) or ["(matches)"])
            if attempt.exchange is not None:
                out.append("non-streamed answer vs the expectation:")
                out.extend("  " + line for line in answer_diff(scenario, attempt.exchange) or ["(matches)"])
        elif attempt.exchange is not None:
            out.extend(answer_diff(scenario, attempt.exchange))
        unplaced = False
        shown: set[Position] = set()
        for failure in attempt.failures:
            out.append("")
            out.append(rule_heading(failure.rule_id, rules))
            if failure.rule_id in known:
                out.append(f"  (known failure: {known[failure.rule_id]})")
            out.extend("  " + line for line in failure.message.splitlines())
            out.extend("  " + line for line in evidence_lines(failure.evidence))
            position = Position.of(failure.evidence)
            if attempt.kind == "equivalence" or attempt.exchange is None:
                continue
            if not position.known:
                unplaced = True
            elif not full:
                out.append(f"  at {position.describe()}")
            elif position in shown:
                out.append(f"  at {position.describe()}, marked above")
            else:
                shown.add(position)
                out.extend("  " + line for line in transcript(attempt.exchange, position))
        if unplaced and attempt.exchange is not None and full:
            out.append("")
            out.extend(transcript(attempt.exchange))
        if attempt.variant is not None:
            out.append("")
            out.extend(_variant_lines(attempt))
        out.append("")
        out.append(f"reproduce: {reproduce(attempt)}")
    if not full:
        out += ["", "the raw answer around each finding: --tb=long"]
    return "\n".join(out)


def _variant_lines(attempt: Attempt) -> list[str]:
    variant = attempt.variant
    assert variant is not None
    out = [f"re-chunk seed {variant.seed}, variant {variant.index} ({variant.strategy})"]
    shrunk = attempt.shrunk
    if shrunk is None:
        return out
    rules = ", ".join(attempt.shrunk_rules)
    if not shrunk.splits:
        out.append(f"shrinking: {rules} fails with the content in one frame too: not a boundary problem "
                   f"({shrunk.runs} re-run(s))")
        return out
    state = "minimal" if shrunk.complete else f"reduced, stopped after {shrunk.runs} re-runs (may not be minimal)"
    out.append(f"smallest split still breaking {rules}: {len(shrunk.splits)} boundary(ies), {state}; "
               f"{shrunk.runs} re-run(s)")
    out.extend(describe_split(attempt.scenario, shrunk.splits))
    return out
