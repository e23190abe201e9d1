"""What a run writes besides the score card: the --record folder (HAR files, failure transcripts, the HTML
report), the known-failures file, and report files; kept apart from the session that decides when."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _pytest.reports import TestReport
    from _pytest.terminal import TerminalReporter

    from harness.core.records import ScenarioRun
    from harness.pytest.session import ConformanceSession
    from harness.report.summary import Summary


def write_file(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def write_record(session: ConformanceSession, summary: Summary) -> None:
    """``--record``: the HTML report over what the items wrote (HAR files, transcripts).

    Everything written here and by ``record_item`` goes through the session's redactor."""
    from harness.report.record import html_report
    from harness.report.summary import rules_by_id

    assert session.run.record is not None
    failures: dict[str, str] = {}
    for record in summary.items:
        text_file = session.run.record / "failures" / f"{record.file_stem}.txt"
        if record.outcome in ("failed", "error") and text_file.is_file():
            failures[record.file_stem] = text_file.read_text("utf-8")
    hars = {path.stem: f"har/{path.name}" for path in sorted((session.run.record / "har").glob("*.har"))}
    report = session.run.record / "report.html"
    write_file(str(report), html_report(title="Tool-call conformance", context=session.context(), summary=summary,
                                        failures=failures, hars=hars, rules=rules_by_id(), redactor=session.redactor))
    session.known_note.append(f"record: {len(hars)} HAR file(s) in {session.run.record / 'har'}; report {report}")


def record_item(session: ConformanceSession, run: ScenarioRun, failure: str | None, stem: str) -> None:
    """An item's exchanges as a HAR file, and its failure's full transcript (the
    worker that played it writes them; the controller reads them at the end), named
    ``stem`` (``ItemRecord.file_stem``: one name per item, a scenario's pairs apart)."""
    from harness.report.record import har

    assert session.run.record is not None and session.shared is not None
    exchanges = [(a.label, a.exchange) for a in run.attempts if a.exchange is not None and a.kind != "equivalence"]
    data = har(exchanges, proxy_url=session.shared.proxy_url, mock_url=session.shared.mock_url,
               redactor=session.redactor)
    write_file(str(session.run.record / "har" / f"{stem}.har"), json.dumps(data, indent=1, ensure_ascii=False))
    if failure is not None:
        write_file(str(session.run.record / "failures" / f"{stem}.txt"), session.redactor.text(failure))


def write_reports(session: ConformanceSession, summary: Summary) -> None:
    """``--report-json`` and ``--report-md``, secrets redacted."""
    from harness.report.scorecard import render_json, render_markdown

    if session.run.report_json:
        data = session.redactor.json(render_json(summary))
        write_file(session.run.report_json, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    if session.run.report_md:
        write_file(session.run.report_md, session.redactor.text(render_markdown(summary)))


def write_known_failures(session: ConformanceSession) -> None:
    """``--write-known-failures``: this run's failures as a file, one entry per cause and
    family; ``--update-known-failures``: the file without the entries that pass now (an
    entry that still covers a failure of some scenario, a glob say, is kept). Then the
    gate's last line: what is new, what passes now, what still fails as known."""
    from dataclasses import replace
    from datetime import date

    from harness.report.causes import group_failures
    from harness.report.known_failures import entries_from_causes, pruned, render_known_failures, stale_globs
    from harness.report.summary import summarize

    records = sorted(session.records.values(), key=lambda r: r.scenario)
    origin = f"Written by toolcall-conformance on {date.today().isoformat()}"
    played = [r.scenario for r in records if r.outcome != "skipped"]
    used = {n for r in records for n in r.known_entries}
    if session.known is not None:
        globs = stale_globs(session.known, used, played)
        session.stale_known = sorted(({n for r in records for n in r.stale_entries} - used) | {e.number for e in globs})
    if session.run.update_known_failures and session.known is not None:
        dropped = set(session.stale_known)
        kept = pruned(session.known, dropped)
        name = Path(session.run.update_known_failures).name
        write_file(session.run.update_known_failures, session.redactor.text(
            render_known_failures(kept, name=name, origin=origin + " (updated).")))
        gone = [e for e in session.known.entries if e.number in dropped]
        session.known_note.append(f"{session.run.update_known_failures}: {len(gone)} entr{'y' if len(gone) == 1 else 'ies'} "
                                  f"that pass now dropped, {len(kept)} kept")
        session.known_note += [f"  dropped {e.describe()}" for e in gone]
    elif session.known is not None:
        session.known_note += [f"passes now: {e.describe()}" for e in session.known.entries
                               if e.number in session.stale_known]
    if session.run.write_known_failures:
        failing = [replace(r, outcome="failed", failures=tuple(replace(f, expected=False) for f in r.failures))
                   for r in records if r.outcome in ("failed", "xfailed") and r.failures]
        causes = group_failures(failing, summarize(records).rules)
        families: dict[str, list[str]] = {}
        for record in records:
            if record.outcome != "skipped":
                families.setdefault(record.family, []).append(record.scenario)
        entries = entries_from_causes(causes, families, session.known)
        name = Path(session.run.write_known_failures).name
        write_file(session.run.write_known_failures, session.redactor.text(
            render_known_failures(entries, name=name, origin=origin + "; one entry per cause and family.")))
        session.known_note.append(f"{len(entries)} known failure(s) written to {session.run.write_known_failures} "
                                  f"({sum(len(c.items) for c in causes)} failed scenario(s), {len(causes)} cause(s))")
    if session.known is not None:
        new = sum(1 for r in records if r.outcome == "failed" and any(not f.expected for f in r.failures))
        stale = len(session.stale_known)
        what = "dropped from the file" if session.run.update_known_failures else "remove them"
        session.known_note.append(f"{new} new failure{'' if new == 1 else 's'}, {stale} entr{'y' if stale == 1 else 'ies'}"
                                  f" pass{'es' if stale == 1 else ''} now ({what}), {len(used)} still failing as known")


def write_score_card(session: ConformanceSession, terminalreporter: TerminalReporter) -> None:
    """The score card, warnings and the files written, at the end of the terminal report."""
    if not session.records:
        for line in session.known_note:
            terminalreporter.write_line(line)
        return
    from harness.report.scorecard import render_text
    from harness.report.summary import summarize

    tr = terminalreporter
    tr.write_sep("=", "tool-call conformance")
    # Skipped scenarios are counted by reason; pytest's -v lists each.
    card = render_text(summarize(session.records.values(), session.context()), each_skip=tr.verbosity > 0,
                       table=not session.grouped or tr.verbosity > 0, width=tr._tw.fullwidth)
    tr.write_line(session.redactor.text(card))
    if session.known is not None:
        for entry in session.known.unmatched(s.id for s in session.scenarios):
            tr.write_line(f"warning: {session.known.path}: {entry.describe()} matches no scenario")
    from harness.core.scenario.loading import awaiting_review, review_note

    for scenario in awaiting_review(session.scenarios):
        tr.write_line(f"warning: {review_note(scenario)}")
    for label, path in (("JSON", session.run.report_json), ("Markdown", session.run.report_md)):
        if path:
            tr.write_line(f"{label} report written to {path}")
    for line in session.known_note:
        tr.write_line(line)


_MARKUP: dict[str, dict[str, bool]] = {"heading": {"red": True, "bold": True}, "bad": {"red": True},
                                       "hint": {"cyan": True}, "": {}}


def write_causes(session: ConformanceSession, terminalreporter: TerminalReporter) -> list[TestReport]:
    """The failed items that broke a rule, grouped by cause (``harness.report.causes``), in
    colour where the terminal takes it (pytest's writer honours NO_COLOR and FORCE_COLOR)
    and fit to its width; returns their reports, taken out of pytest's list of failures so
    that its own sections do not show them a second time."""
    from harness.report.causes import detail_hint, group_failures, render_causes
    from harness.report.summary import rules_by_id, summarize

    tr = terminalreporter
    summary = summarize(session.records.values())
    causes = group_failures(session.records.values(), summary.rules)
    if not causes:
        return []
    members = {id(item) for cause in causes for item in cause.items}
    nodeids = {nodeid for nodeid, record in session.records.items() if id(record) in members}
    failed = tr.stats.get("failed", [])
    taken = [r for r in failed if r.nodeid in nodeids]
    tr.stats["failed"] = [r for r in failed if r.nodeid not in nodeids]
    width = tr._tw.fullwidth
    count = sum(len(c.items) for c in causes)
    grouped = f"{len(causes)} causes" if len(causes) > 1 else "one cause"
    tr.write_sep("=", f"{count} failed scenario(s), {grouped}", red=True, bold=True)
    for line in [*render_causes(causes, rules=rules_by_id(), width=width, every=tr.verbosity > 0),
                 *detail_hint(causes, width)]:
        tr.write_line(session.redactor.text(line.text), **_MARKUP[line.style])
    return taken
