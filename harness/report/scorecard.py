"""What users read: the session's score card as text, Markdown and JSON.

Pure text and data: the plugin and the CLI hand in what happened and print or write
what comes back. The results it renders are ``summary`` (item records travel between
pytest-xdist workers and the controller as plain JSON-able mappings, so the summary is
built from the same data however the run was split); one item's failure is explained
by ``failure_report``. Both are re-exported here.
"""

from __future__ import annotations

import textwrap
from typing import Any

from harness.report.summary import FamilyScore, Summary, rules_by_id, shown

_SKIPS_HINT = "  (-v lists each skipped scenario)"
_TEXT_CELLS = {"pass": ".", "FAIL": "F", "xfail": "x", "skip": "s", "error": "E", "inconclusive": "?"}
_MD_CELLS = {"pass": " ", "FAIL": "❌", "xfail": "⚠️", "skip": "⏭️", "error": "💥", "inconclusive": "❔"}


def _verdict(summary: Summary) -> str:
    """One sentence on the run as a whole, or "" when the table says it. Only items
    that passed count as passing: an error, or a known failure that no longer fails,
    broke no rule but did not pass either."""
    ran = summary.total.ran
    if summary.nothing_checked:
        reason, count = summary.skip_reason()
        return (f"nothing was checked: all {len(summary.items)} scenario(s) were skipped; "
                f"most often ({count} of them): {reason}")
    clean = sum(1 for i in summary.items if i.outcome == "passed" and not i.failures)
    if clean and clean == ran:
        return f"every rule passes for every scenario that ran ({ran})"
    return f"the other {clean} scenario(s) that ran pass every rule" if clean else ""


def _left_out(summary: Summary, *, skips: bool = True) -> list[tuple[str, str]]:
    """What the table does not show, as (scenario, what): skips (unless ``skips`` is off),
    errors, items failed for a stale known failure, notes. Both reports list these."""
    out: list[tuple[str, str]] = []
    for item in summary.items:
        if item.outcome in ("error", "inconclusive") or (skips and item.outcome == "skipped"):
            out.append((item.label, f"{item.outcome}: {item.reason}"))
        elif item.outcome == "failed" and not item.failures:
            out.append((item.label, "failed: listed as a known failure, but no longer fails"))
    for item in summary.items:
        out.extend((item.label, note) for note in item.notes)
    return out


def _skips_by_reason(summary: Summary) -> list[str]:
    """The skipped scenarios, one line per reason, the most frequent first: a run against a
    proxy of one client dialect that claims few formats skips hundreds of scenarios for a
    handful of reasons. A reason that skipped one scenario keeps its scenario's name."""
    groups: dict[str, list[str]] = {}
    for item in summary.items:
        if item.outcome == "skipped":
            groups.setdefault(item.reason, []).append(item.label)
    ordered = sorted(groups.items(), key=lambda group: (-len(group[1]), group[0]))
    out = [f"  {labels[0]}: skipped: {reason}" if len(labels) == 1 else f"  {len(labels)} scenarios skipped: {reason}"
           for reason, labels in ordered]
    if any(len(labels) > 1 for labels in groups.values()):
        out.append(_SKIPS_HINT)
    return out


def _counts(score: FamilyScore) -> dict[str, int | str]:
    """A score as the JSON report gives it; ``inconclusive`` only where a case was (a run with a healthy
    proxy reads as it always did)."""
    counts: dict[str, int | str] = {k: v for k, v in score.__dict__.items() if k != "inconclusive" or v}
    return {**counts, "score": score.score}


def _score_line(name: str, score: FamilyScore, width: int) -> str:
    extra = [f"{n} {k}" for k, n in (("failed", score.failed), ("known", score.xfailed), ("skipped", score.skipped),
                                      ("inconclusive", score.inconclusive)) if n]
    return f"  {name:<{width}}  {score.score:>7}  {', '.join(extra)}".rstrip()


def render_text(summary: Summary, *, each_skip: bool = True, table: bool = True, width: int | None = None) -> str:
    """Scores per family and the scenario × rule table of failures, for the terminal;
    without ``each_skip``, the skipped scenarios are counted by reason instead of listed;
    without ``table``, the table is left out (the failures were shown grouped by cause)
    and so are the scores per pair when the run played one; with ``width``, the sentences
    after the table are wrapped to it (the table's rows never are)."""
    wrap_at = width
    out = ["scores per family (passed/ran; known failures and skips not counted as passed):"]
    fams = summary.families
    width = max([len(f) for f in fams] + [5])
    out.extend(_score_line(family, score, width) for family, score in fams.items())
    total = summary.total
    out.append(f"  {'total':<{width}}  {total.score:>7}")
    pairs = summary.pairs if table else {p: s for p, s in summary.pairs.items() if s.ran}
    if len(pairs) > 1 or (table and any(not p.endswith("?") for p in pairs)):
        out.append("scores per dialect pair (client → upstream):")
        pw = max(len(p) for p in pairs)
        out.extend(_score_line(pair, score, pw) for pair, score in pairs.items())
    servers = summary.servers
    if servers:
        out.append("scores per upstream server profile (the cases played the way that server streams):")
        sw = max(len(s) for s in servers)
        out.extend(_score_line(name, score, sw) for name, score in servers.items())
    coverage = summary.coverage
    if coverage:
        out.append(coverage)
    if not summary.items:
        return "\n".join(out)
    if table:
        out.append("")
    rules, rows = summary.broken_rules, summary.failing_items
    verdict = _verdict(summary)
    if rules and not table:
        # One line in the grouped view: what broke, what did not, where the table is.
        other = verdict.removeprefix("the other ").removesuffix(" scenario(s) that ran pass every rule")
        rest = f", the other {other} that ran broke none" if other != verdict else ""
        out.append(f"{len(rows)} scenario(s) broke {len(rules)} rule(s){rest} (-v: the table)")
        verdict = "" if rest else verdict
    elif rules:
        id_width = max(len(i.label) for i in rows)
        out.append("rules failed per scenario (F fail, x known failure, . not broken; "
                   "scenarios without a failure left out):")
        out.append(f"  {'':<{id_width}}  " + "  ".join(rules))
        for item in rows:
            cells = "  ".join(f"{_TEXT_CELLS[summary.rule_cell(item, r)]:^{len(r)}}" for r in rules)
            out.append(f"  {item.label:<{id_width}}  {cells}")
    tail: list[str] = []
    if verdict:
        tail.append(verdict)
    tail.extend(f"{n} scenario(s): {cause}" for cause, n in summary.causes)
    skips = [] if each_skip else _skips_by_reason(summary)
    if skips and not table and wrap_at is not None:
        # The grouped view: a reason per line, cut to the width (-v gives each whole).
        skips = [_cut(line, max(wrap_at, 40)) for line in skips]
        if any(line.endswith("…") for line in skips) and skips[-1] == _SKIPS_HINT:
            skips[-1] = "  (-v lists each skipped scenario with its whole reason)"
    else:
        skips = _wrapped(skips, wrap_at)
    tail = _wrapped(tail, wrap_at) + skips
    tail += _wrapped([f"  {scenario}: {what}" for scenario, what in _left_out(summary, skips=each_skip)], wrap_at)
    return "\n".join(out + tail)


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[:width - 1].rstrip() + "…"


def _wrapped(lines: list[str], width: int | None) -> list[str]:
    """Sentences wrapped to ``width``, a line going on indented under its own start."""
    if width is None:
        return lines
    return [part for line in lines for part in textwrap.wrap(
        line, max(width, 40), subsequent_indent=" " * (len(line) - len(line.lstrip()) + 2),
        break_on_hyphens=False, break_long_words=False) or [line]]


def render_markdown(summary: Summary) -> str:
    """The same, as Markdown fit for a CI job summary."""
    total = summary.total
    out = ["## Tool-call conformance", ""]
    out += [f"- **{key}**: {shown(value)}" for key, value in summary.context.items()]
    out += ["", f"**Score: {total.score}** passed"
            + (f", {total.failed} failed" if total.failed else "")
            + (f", {total.xfailed} known failure(s)" if total.xfailed else "")
            + (f", {total.skipped} skipped" if total.skipped else ""), ""]
    out += ["| family | passed/ran | failed | known | skipped |", "| --- | ---: | ---: | ---: | ---: |"]
    for family, score in summary.families.items():
        out.append(f"| {family} | {score.score} | {score.failed} | {score.xfailed} | {score.skipped} |")
    if summary.servers:
        out += ["", "| upstream server profile | passed/ran | failed | known | skipped |",
                "| --- | ---: | ---: | ---: | ---: |"]
        out += [f"| {name} | {score.score} | {score.failed} | {score.xfailed} | {score.skipped} |"
                for name, score in summary.servers.items()]
    rules = summary.broken_rules
    if rules:
        out += ["", "| scenario | " + " | ".join(rules) + " |", "| --- | " + " | ".join(":---:" for _ in rules) + " |"]
        for item in summary.failing_items:
            cells = " | ".join(_MD_CELLS[summary.rule_cell(item, r)] for r in rules)
            out.append(f"| `{item.label}` | {cells} |")
        out += ["", "❌ fail · ⚠️ known failure · empty: not broken (passed, or the rule does not apply); "
                "scenarios without a failure left out."]
    verdict = _verdict(summary)
    if verdict:
        sentence = verdict[0].upper() + verdict[1:] + "."
        out += ["", f"**{sentence}**" if summary.nothing_checked else sentence]
    details = [
        f"- `{item.label}` **{f.rule}**{' (known)' if f.expected else ''} [{f.severity}] in {f.attempt}: "
        f"{f.message.splitlines()[0] if f.message else ''}"
        for item in summary.failing_items
        for f in item.failures
    ]
    details += [f"- `{scenario}` {what}" for scenario, what in _left_out(summary)]
    if details:
        out += ["", "<details><summary>Failures, skips and checks left out</summary>", "", *details, "", "</details>"]
    return "\n".join(out) + "\n"


def render_json(summary: Summary) -> dict[str, Any]:
    rules = rules_by_id()
    broken = summary.broken_rules
    return {
        "context": dict(summary.context),
        "totals": _counts(summary.total),
        "checked": not summary.nothing_checked,
        "families": {f: _counts(s) for f, s in summary.families.items()},
        "pairs": {p: _counts(s) for p, s in summary.pairs.items()},
        "servers": {n: _counts(s) for n, s in summary.servers.items()},
        "coverage": summary.coverage,
        "groups": summary.groups,
        "failed_rules": broken,
        "scenarios": [
            {
                **item.to_json(),
                "groups": {g: summary.cell(item, g) for g in summary.groups},
                "rules": {r: summary.rule_cell(item, r) for r in broken},
            }
            for item in summary.items
        ],
        "rules": [
            {"id": r.id, "statement": r.statement, "severity": r.severity, "group": r.group}
            for r in rules.values()
        ],
    }
