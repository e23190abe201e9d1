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
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from harness.core.exchange import Exchange, RecordedRequest
from harness.core.redact import Redactor
from harness.judge.rules.registry import Rule

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
    now = datetime.now(timezone.utc).isoformat()
    for label, ex in exchanges:
        url = f"{proxy_url.rstrip('/')}{ex.profile.endpoint}"
        request = _post(url, ex.request_headers, json.dumps(ex.request_body, ensure_ascii=False), redactor)
        comment = f"{label}: the client's request to the proxy and the proxy's answer"
        if ex.timed_out:
            comment += f" (abandoned after {ex.elapsed:.1f} s)"
        if ex.transport_error:
            comment += f" ({ex.transport_error})"
        entries.append(_entry(now, ex.elapsed, request, _response(ex.status, ex.response_headers, ex.raw, redactor),
                              redactor.text(comment)))
        entries.extend(_upstream_entry(mock_url, r, label, redactor) for r in ex.upstream)
    return {"log": {"version": "1.2", "creator": CREATOR, "pages": [], "entries": entries}}


# --------------------------------------------------------------------------- HTML

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:75em;padding:0 1em;color:#222}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;font:12px/1.4 ui-monospace,monospace}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
.failed{color:#b00}.passed{color:#070}details{margin:.5em 0}summary{cursor:pointer}
"""
_RULE_ID = re.compile(r"\b([A-Z]{2,6}-\d{3})\b")


def _linked(text: str, rules: Mapping[str, Rule]) -> str:
    """Escaped ``text`` with every known rule id a link to its row."""
    return _RULE_ID.sub(lambda m: f'<a href="#rule-{m.group(1)}">{m.group(1)}</a>' if m.group(1) in rules
                        else m.group(1), html.escape(text))


def html_report(*, title: str, context: Mapping[str, Any], score_card: str,
                failures: Iterable[tuple[str, str, str]], rules: Mapping[str, Rule], redactor: Redactor) -> str:
    """One HTML file: the run's context, its score card, each failure's transcript
    (scenario id, outcome, text) and the rules, every rule id linked to its row; secrets
    redacted by ``redactor``."""
    out = ["<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
           f"<h1>{html.escape(title)}</h1>", "<table>"]
    for key, value in context.items():
        if value not in (None, "", [], ()):
            shown_value = redactor.url(value) if isinstance(value, str) else redactor.text(str(value))
            out.append(f"<tr><th>{html.escape(str(key))}</th><td>{html.escape(shown_value)}</td></tr>")
    out += ["</table>", "<h2>Score card</h2>", f"<pre>{_linked(redactor.text(score_card), rules)}</pre>",
            "<h2>Failures</h2>"]
    shown = 0
    for scenario, outcome, text in failures:
        shown += 1
        out.append(f'<details id="scenario-{html.escape(scenario)}" open><summary class="{html.escape(outcome)}">'
                   f"<b>{html.escape(scenario)}</b> {html.escape(outcome)}</summary>"
                   f"<pre>{_linked(redactor.text(text), rules)}</pre></details>")
    if not shown:
        out.append("<p>No scenario failed.</p>")
    out += ["<h2>Rules</h2>", "<table><tr><th>rule</th><th>severity</th><th>group</th><th>statement</th></tr>"]
    for rule in rules.values():
        out.append(f'<tr id="rule-{rule.id}"><td>{rule.id}</td><td>{rule.severity}</td><td>{rule.group}</td>'
                   f"<td>{html.escape(rule.statement)}</td></tr>")
    out += ["</table>", "</body></html>"]
    return "\n".join(out) + "\n"
