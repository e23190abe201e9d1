"""The record of a run (``--record DIR``): every exchange as a HAR file, and one
self-contained HTML report.

A HAR file (one per test item) holds, for each exchange, the client's request to the
proxy and the proxy's answer, then each request the proxy sent the mock backend with
the mock's answer as it went on the wire; any HAR viewer or a browser's devtools opens
it. The HTML report is one file with no network access: the score card, the rule
catalogue (each rule id a link to its row) and each failure's full transcript. Pure:
the plugin writes what these functions return. Both are written through the run's
``Redactor``: no credential, ``--proxy-header`` value or key-looking string reaches
them (what went on the wire is not changed, only what is written).
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from harness.core.exchange import Exchange, RecordedRequest
from harness.core.redact import Redactor
from harness.judge.readers.transcript import clip
from harness.judge.rules.registry import Rule
from harness.report.causes import Cause, finding, rule_line, unexpected
from harness.report.summary import FamilyScore, Summary, shown

CREATOR = {"name": "toolcall-conformance", "version": "0.1"}


def _headers(headers: Mapping[str, str], redactor: Redactor) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in redactor.headers(headers).items()]


def _content(body: bytes, mime: str, redactor: Redactor) -> dict[str, Any]:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # bytes no reader decodes: written as they are, but for known secrets
        for secret in redactor.known:
            body = body.replace(secret.encode("utf-8"), redactor.marker.encode("ascii"))
        return {"size": len(body), "mimeType": mime, "text": base64.b64encode(body).decode("ascii"),
                "encoding": "base64"}
    return {"size": len(body), "mimeType": mime, "text": redactor.body(text)}


def _post(url: str, headers: Mapping[str, str], text: str, redactor: Redactor) -> dict[str, Any]:
    return {"method": "POST", "url": redactor.url(url), "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": _headers(headers, redactor), "queryString": [],
            "postData": {"mimeType": headers.get("content-type", "application/json"), "text": redactor.body(text)},
            "headersSize": -1, "bodySize": len(text.encode())}


def _response(status: int | None, headers: Mapping[str, str], body: bytes, redactor: Redactor) -> dict[str, Any]:
    mime = headers.get("content-type", "")
    return {"status": status or 0, "statusText": "", "httpVersion": "HTTP/1.1", "cookies": [],
            "headers": _headers(headers, redactor), "content": _content(body, mime, redactor), "redirectURL": "",
            "headersSize": -1, "bodySize": len(body)}


def _entry(started: str, seconds: float, request: dict[str, Any], response: dict[str, Any],
           comment: str) -> dict[str, Any]:
    ms = max(seconds, 0.0) * 1000
    return {"startedDateTime": started, "time": ms, "request": request, "response": response, "cache": {},
            "timings": {"send": 0, "wait": ms, "receive": 0}, "comment": comment}


def _upstream_entry(mock_url: str, recorded: RecordedRequest, label: str, redactor: Redactor) -> dict[str, Any]:
    import json

    body = recorded.raw_body if recorded.raw_body is not None else json.dumps(recorded.body, ensure_ascii=False)
    answer = recorded.answer
    query = f"?{recorded.query}" if recorded.query else ""
    started = datetime.fromtimestamp(recorded.received_at, timezone.utc).isoformat()
    response = _response(answer.status if answer else None, answer.headers if answer else {},
                         answer.body if answer else b"", redactor)
    return _entry(started, (answer.seconds or 0.0) if answer else 0.0,
                  _post(f"{mock_url}{recorded.path}{query}", recorded.headers, body, redactor), response,
                  redactor.text(f"{label}: what the proxy sent the mock backend, and the mock's answer as sent"))


def har(exchanges: Sequence[tuple[str, Exchange]], *, proxy_url: str, mock_url: str, redactor: Redactor) -> dict[str, Any]:
    """A HAR log of ``exchanges`` (label, exchange): each client exchange, then what
    reached the mock for it; secrets redacted by ``redactor``."""
    import json

    entries: list[dict[str, Any]] = []
    now = datetime.now(timezone.utc).timestamp()
    for label, ex in exchanges:
        # the client's request was sent before the proxy forwarded anything of it
        sent = min([ex.started_at or now, *(r.received_at for r in ex.upstream if r.received_at)])
        url = f"{proxy_url.rstrip('/')}{ex.profile.endpoint}"
        request = _post(url, ex.request_headers, json.dumps(ex.request_body, ensure_ascii=False), redactor)
        comment = f"{label}: the client's request to the proxy and the proxy's answer"
        if ex.timed_out:
            comment += f" (abandoned after {ex.elapsed:.1f} s)"
        if ex.transport_error:
            comment += f" ({ex.transport_error})"
        entries.append(_entry(datetime.fromtimestamp(sent, timezone.utc).isoformat(), ex.elapsed, request, _response(ex.status, ex.response_headers, ex.raw, redactor),
                              redactor.text(comment)))
        entries.extend(_upstream_entry(mock_url, r, label, redactor) for r in ex.upstream)
    return {"log": {"version": "1.2", "creator": CREATOR, "pages": [], "entries": entries}}


# --------------------------------------------------------------------------- HTML

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:80em;padding:0 1em;color:#222}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font:12px/1.4 ui-monospace,monospace;white-space:pre-wrap}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f6f8fa}
.verdict{padding:.8em 1.2em;border-radius:6px;font-size:1.4em;font-weight:600;color:#fff;margin:.5em 0 1em}
.verdict.red{background:#c62828}.verdict.green{background:#2e7d32}.verdict.grey{background:#757575}
.verdict small{display:block;font-size:.6em;font-weight:400}
td.red{background:#fde0e0}td.green{background:#e3f4e4}td.grey{color:#888}td.amber{background:#fff3cd}
.cause{border-left:4px solid #c62828;padding:.2em 1em;margin:1em 0;background:#fffafa}
.cause h3{margin:.3em 0}.rule{color:#555}.cell-F{background:#fde0e0;text-align:center}
.cell-x{background:#fff3cd;text-align:center}.cell-dot{color:#bbb;text-align:center}
details{margin:.4em 0;border:1px solid #eee;border-radius:4px;padding:.2em .6em}summary{cursor:pointer}
.failed{color:#b00}.error{color:#b00}a{color:#0b57d0}td:first-child{white-space:nowrap}
"""
_RULE_ID = re.compile(r"\b([A-Z]{2,6}-\d{3})\b")
_CELL_CLASS = {"F": "cell-F", "x": "cell-x", ".": "cell-dot"}


def _linked(text: str, rules: Mapping[str, Rule]) -> str:
    """Escaped ``text`` with every known rule id a link to its row."""
    return _RULE_ID.sub(lambda m: f'<a href="#rule-{m.group(1)}">{m.group(1)}</a>' if m.group(1) in rules
                        else m.group(1), html.escape(text))


def _e(text: object) -> str:
    return html.escape(str(text))


def _anchor(scenario: str) -> str:
    return "scenario-" + re.sub(r"[^A-Za-z0-9_.-]", "_", scenario)


def _verdict(summary: Summary, causes: Sequence[Cause]) -> str:
    total = summary.total
    if summary.nothing_checked or not total.ran:
        return ('<div class="verdict grey">Nothing was checked'
                f"<small>all {len(summary.items)} scenario(s) were skipped</small></div>")
    bad = total.failed + total.error
    if bad:
        what = f"{len(causes)} cause{'s' if len(causes) != 1 else ''}" if causes else "see below"
        return (f'<div class="verdict red">FAIL: {bad} of {total.ran} scenarios failed'
                f"<small>{what}; {total.passed} passed, {total.xfailed} known failure(s), {total.skipped} skipped"
                "</small></div>")
    known = f", {total.xfailed} as known failures" if total.xfailed else ""
    return (f'<div class="verdict green">PASS: {total.passed} of {total.ran} scenarios pass every rule{known}'
            f"<small>{total.skipped} skipped</small></div>")


def _matrix(summary: Summary) -> list[str]:
    """Families × dialect pairs, each cell passed/ran coloured by its worst outcome."""
    pairs = [p for p, score in summary.pairs.items() if score.ran or score.skipped]
    cells: dict[tuple[str, str], FamilyScore] = {}
    for item in summary.items:
        score = cells.setdefault((item.family, item.pair), FamilyScore())
        setattr(score, item.outcome, getattr(score, item.outcome) + 1)
    out = ["<table><tr><th>family</th>" + "".join(f"<th>{_e(p)}</th>" for p in pairs) + "</tr>"]
    for family in summary.families:
        row = [f"<tr><th>{_e(family)}</th>"]
        for pair in pairs:
            if (family, pair) not in cells:
                row.append('<td class="grey">—</td>')
                continue
            score = cells[(family, pair)]
            css = "red" if score.failed or score.error else "amber" if score.xfailed else \
                "green" if score.ran else "grey"
            counts = [f"{n} {what}" for n, what in ((score.failed, "failed"), (score.xfailed, "known"),
                                                      (score.error, "error"), (score.skipped, "skipped")) if n]
            extra = f" ({', '.join(counts)})" if counts else ""
            row.append(f'<td class="{css}">{_e(score.score)}{_e(extra)}</td>')
        out.append("".join(row) + "</tr>")
    out.append("</table>")
    return out


def _causes(causes: Sequence[Cause], rules: Mapping[str, Rule]) -> list[str]:
    out: list[str] = []
    for n, cause in enumerate(causes, 1):
        because = f", {cause.cause}" if cause.cause else ""
        out.append(f'<div class="cause" id="cause-{n}"><h3>{_linked(cause.rule, rules)} broken in '
                   f"{len(cause.items)} scenario(s){_e(because)}</h3><ul>")
        for rule_id, times in cause.rules.items():
            share = f" (in {times})" if times != len(cause.items) else ""
            out.append(f'<li class="rule">{_linked(rule_line(rule_id, rules, share), rules)}</li>')
        out.append("</ul><p>")
        first = cause.items[0]
        out.append(f'<b><a href="#{_anchor(first.file_stem)}">{_e(first.label)}</a></b> (in full below):</p><ul>')
        out += [f"<li>{_e(f.attempt)}: {_linked(finding(f), rules)}</li>" for f in unexpected(first)]
        out.append("</ul>")
        if len(cause.items) > 1:
            out.append("<p>also:</p><ul>")
            for item in cause.items[1:]:
                own = next((f for f in unexpected(item) if f.rule == cause.rule), unexpected(item)[0])
                out.append(f'<li><a href="#{_anchor(item.file_stem)}">{_e(item.label)}</a>: '
                           f"{_e(clip(own.message.splitlines()[0] if own.message else '', 160))}</li>")
            out.append("</ul>")
        out.append("</div>")
    return out


def _rule_table(summary: Summary) -> list[str]:
    rules, rows = summary.broken_rules, summary.failing_items
    if not rules:
        return []
    out = ["<table><tr><th>scenario</th>" + "".join(f'<th><a href="#rule-{r}">{r}</a></th>' for r in rules) + "</tr>"]
    for item in rows:
        cells = []
        for r in rules:
            mark = {"pass": ".", "FAIL": "F", "xfail": "x", "skip": "s", "error": "E"}[summary.rule_cell(item, r)]
            cells.append(f'<td class="{_CELL_CLASS.get(mark, "")}">{mark}</td>')
        out.append(f'<tr><td><a href="#{_anchor(item.file_stem)}">{_e(item.label)}</a></td>{"".join(cells)}</tr>')
    out.append("</table><p>F fail · x known failure · . not broken</p>")
    return out


def html_report(*, title: str, context: Mapping[str, Any], summary: Summary, failures: Mapping[str, str],
                hars: Mapping[str, str], rules: Mapping[str, Rule], redactor: Redactor) -> str:
    """One self-contained HTML file (inline style, no script, nothing fetched): the verdict,
    the family × dialect-pair matrix, the failures grouped by cause as the console groups
    them, the scenario × rule table linked to each failure, each failure's transcript
    (collapsed) with a link to its HAR file, the run's configuration and the rules; every
    rule id linked to its row. ``failures`` maps an item's ``file_stem`` to its transcript,
    ``hars`` to its HAR file's path relative to the report (a scenario's pairs each their own). Secrets redacted by ``redactor``."""
    from harness.report.causes import group_failures

    causes = group_failures(summary.items, summary.rules)
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{_e(title)}</h1>", _verdict(summary, causes), "<h2>Scores per family and dialect pair</h2>",
           *_matrix(summary)]
    if summary.coverage:
        out.append(f"<p>{_e(summary.coverage)}</p>")
    if causes:
        out += ["<h2>Failures by cause</h2>", *_causes(causes, rules), "<h2>Rules failed per scenario</h2>",
                *_rule_table(summary)]
    out.append("<h2>Each failure</h2>")
    listed = [i for i in summary.items if i.outcome in ("failed", "error")]
    for item in listed:
        text = failures.get(item.file_stem, item.reason)
        har_link = (f' · <a href="{_e(hars[item.file_stem])}">HAR of its exchanges</a>' if item.file_stem in hars
                    else "")
        out.append(f'<details id="{_anchor(item.file_stem)}"><summary class="{_e(item.outcome)}">'
                   f"<b>{_e(item.label)}</b> {_e(item.outcome)}: "
                   f"{_e(', '.join(dict.fromkeys(f.rule for f in unexpected(item))) or item.reason[:120])}"
                   f"{har_link}</summary><pre>{_linked(redactor.text(text), rules)}</pre></details>")
    if not listed:
        out.append("<p>No scenario failed.</p>")
    if hars:
        out.append(f"<p>Every exchange, as HAR files (open them in a browser's devtools or any HAR viewer): "
                   f"{len(hars)} file(s) in <code>har/</code>.</p>")
    out += ["<h2>Configuration of this run</h2>", "<table>"]
    for key, value in context.items():
        text = shown(value)
        text = redactor.url(text) if isinstance(value, str) else redactor.text(text)
        out.append(f"<tr><th>{_e(key)}</th><td>{_e(text)}</td></tr>")
    out += ["</table>", "<h2>Rules</h2>",
            "<table><tr><th>rule</th><th>severity</th><th>group</th><th>statement</th></tr>"]
    for rule in rules.values():
        out.append(f'<tr id="rule-{rule.id}"><td>{rule.id}</td><td>{rule.severity}</td><td>{_e(rule.group)}</td>'
                   f"<td>{_e(rule.statement)}</td></tr>")
    out += ["</table>", "</body></html>"]
    return "\n".join(out) + "\n"
