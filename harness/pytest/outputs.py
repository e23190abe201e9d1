"""What a run writes besides the score card: the --record folder (HAR files, failure transcripts, the HTML
report), the known-failures file, and report files; kept apart from the session that decides when."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
    from harness.report.scorecard import render_text
    from harness.report.summary import rules_by_id

    assert session.run.record is not None
    failures = []
    for record in sorted(session.records.values(), key=lambda r: r.scenario):
        text_file = session.run.record / "failures" / f"{record.scenario}.txt"
        if record.outcome in ("failed", "error"):
            text = text_file.read_text("utf-8") if text_file.is_file() else record.reason
            failures.append((record.scenario, record.outcome, text))
    report = session.run.record / "report.html"
    write_file(str(report), html_report(title="Tool-call conformance", context=session.context(),
                                        score_card=render_text(summary), failures=failures, rules=rules_by_id(),
                                        redactor=session.redactor))
    hars = len(list((session.run.record / "har").glob("*.har")))
    session.known_note.append(f"record: {hars} HAR file(s) in {session.run.record / 'har'}; report {report}")


def record_item(session: ConformanceSession, run: ScenarioRun, failure: str | None) -> None:
    """An item's exchanges as a HAR file, and its failure's full transcript (the
    worker that played it writes them; the controller reads them at the end)."""
    from harness.report.record import har

    assert session.run.record is not None and session.shared is not None
    exchanges = [(a.label, a.exchange) for a in run.attempts if a.exchange is not None and a.kind != "equivalence"]
    data = har(exchanges, proxy_url=session.shared.proxy_url, mock_url=session.shared.mock_url,
               redactor=session.redactor)
    write_file(str(session.run.record / "har" / f"{run.scenario.id}.har"), json.dumps(data, indent=1, ensure_ascii=False))
    if failure is not None:
        write_file(str(session.run.record / "failures" / f"{run.scenario.id}.txt"), session.redactor.text(failure))


def write_reports(session: ConformanceSession, summary: Summary) -> None:
    """``--report-json`` and ``--report-md``, secrets redacted."""
    from harness.report.scorecard import render_json, render_markdown

    if session.run.report_json:
        data = session.redactor.json(render_json(summary))
        write_file(session.run.report_json, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    if session.run.report_md:
        write_file(session.run.report_md, session.redactor.text(render_markdown(summary)))


def write_known_failures(session: ConformanceSession) -> None:
    """``--write-known-failures``: this run's failures as a file; ``--update-known-failures``:
    the file without the entries that pass now (an entry that still covers a failure
    of some scenario, a glob say, is kept)."""
    from datetime import date

    from harness.report.known_failures import entries_from_failures, pruned, render_known_failures

    records = sorted(session.records.values(), key=lambda r: r.scenario)
    origin = f"Written by toolcall-conformance on {date.today().isoformat()}"
    if session.run.update_known_failures and session.known is not None:
        used = {n for r in records for n in r.known_entries}
        dropped = {n for r in records for n in r.stale_entries} - used
        kept = pruned(session.known, dropped)
        name = Path(session.run.update_known_failures).name
        write_file(session.run.update_known_failures, session.redactor.text(
            render_known_failures(kept, name=name, origin=origin + " (updated).")))
        gone = [e for e in session.known.entries if e.number in dropped]
        session.known_note.append(f"{session.run.update_known_failures}: {len(gone)} entr{'y' if len(gone) == 1 else 'ies'} "
                                  f"that pass now dropped, {len(kept)} kept")
        session.known_note += [f"  dropped {e.describe()}" for e in gone]
    if session.run.write_known_failures:
        failures = [(r.scenario, f.rule, f.message.splitlines()[0] if f.message else f.rule)
                    for r in records if r.outcome in ("failed", "xfailed") for f in r.failures]
        entries = entries_from_failures(failures, session.known)
        name = Path(session.run.write_known_failures).name
        write_file(session.run.write_known_failures, session.redactor.text(
            render_known_failures(entries, name=name, origin=origin + "; reword each reason.")))
        session.known_note.append(f"{len(entries)} known failure(s) written to {session.run.write_known_failures}")


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
    card = render_text(summarize(session.records.values(), session.context()), each_skip=tr.verbosity > 0)
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
