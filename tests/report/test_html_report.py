"""The HTML report of ``--record``: a verdict in colour, the family × dialect-pair matrix, the
failures grouped as in the console and linked to their transcripts (collapsed) and HAR files,
the run's configuration as words; one file that fetches nothing. Checked as HTML always, and
in a real headless Chromium when one is installed."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.core.redact import Redactor
from harness.judge.rules import RULES
from harness.report.record import html_report
from harness.report.summary import FailureRecord, ItemRecord, Summary, summarize

CONTEXT = {"proxy": "http://127.0.0.1:8000/v1", "reference proxy": False, "client profile": "openai",
           "strict": False, "rechunk": 0, "rechunk seed": None, "features": []}


def _failed(scenario: str, family: str = "hermes") -> ItemRecord:
    failures = tuple(FailureRecord(r, RULES[r].group, RULES[r].severity, "streaming", f"content '<tool_call>' in {scenario}",
                                   False, "event 1, byte 205") for r in ("TEXT-001", "TEXT-003"))
    return ItemRecord(scenario, family, "openai", "failed", failures=failures, upstream="openai")


def _summary(*items: ItemRecord) -> Summary:
    return summarize(items, CONTEXT)


RED = _summary(_failed("hermes-a"), _failed("hermes-b"), ItemRecord("plain-c", "plain", "openai", "passed",
                                                                     upstream="openai"))
GREEN = _summary(ItemRecord("plain-c", "plain", "openai", "passed", upstream="openai"))


def _page(summary: Summary) -> str:
    return html_report(title="Tool-call conformance", context=summary.context, summary=summary,
                       failures={"hermes-a": "rules broken: TEXT-001\nanswer as received ..."},
                       hars={"hermes-a": "har/hermes-a.har", "hermes-b": "har/hermes-b.har", "plain-c": "har/plain-c.har"},
                       rules=RULES, redactor=Redactor.for_headers({}))


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.details: list[dict[str, str | None]] = []
        self.tags: set[str] = set()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.add(tag)
        if found.get("id"):
            self.ids.add(str(found["id"]))
        if tag == "a" and found.get("href"):
            self.links.append(str(found["href"]))
        if tag == "details":
            self.details.append(found)
        self.sources += [str(v) for k, v in attrs if k in ("src", "srcset") and v]


def _parse(page: str) -> _Parsed:
    parsed = _Parsed()
    parsed.feed(page)
    return parsed


def test_a_red_report_says_fail_in_colour_and_links_each_row_to_its_failure() -> None:
    page = _page(RED)
    parsed = _parse(page)
    assert '<div class="verdict red">FAIL: 2 of 3 scenarios failed' in page
    assert "<th>openai → openai</th>" in page and '<td class="red">0/2 (2 failed)</td>' in page
    assert '<div class="cause" id="cause-1">' in page and "broken in 2 scenario(s)" in page
    internal = [link.removeprefix("#") for link in parsed.links if link.startswith("#")]
    assert "scenario-hermes-a" in internal and "scenario-hermes-b" in internal
    assert all(anchor in parsed.ids for anchor in internal), sorted(set(internal) - parsed.ids)
    assert len(parsed.details) == 2 and all("open" not in d for d in parsed.details)  # transcripts collapsed
    assert "har/hermes-a.har" in parsed.links and "har/hermes-b.har" in parsed.links
    assert "answer as received" in page


def test_a_green_report_says_pass_and_the_configuration_is_in_words() -> None:
    page = _page(GREEN)
    assert '<div class="verdict green">PASS: 1 of 1 scenarios pass every rule' in page
    assert "No scenario failed." in page
    assert "<tr><th>reference proxy</th><td>no</td></tr>" in page
    assert "<tr><th>rechunk</th><td>none</td></tr>" in page and "<tr><th>features</th><td>none</td></tr>" in page
    assert "False" not in page and "<td>0</td>" not in page and "<td>None</td>" not in page


@pytest.mark.parametrize("summary", [RED, GREEN], ids=["red", "green"])
def test_the_report_is_one_file_that_fetches_nothing(summary: Summary) -> None:
    page = _page(summary)
    parsed = _parse(page)
    assert "script" not in parsed.tags and "link" not in parsed.tags and not parsed.sources
    assert "<style>" in page and "@import" not in page and "url(" not in page
    assert not [link for link in parsed.links if "://" in link]


def _chromium() -> str | None:
    return next((found for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
                 if (found := shutil.which(name))), None)


def test_chromium_renders_the_report_as_a_person_sees_it(tmp_path: Path) -> None:
    """The DOM after a real browser has read the page: the verdict, the groups, the
    transcripts closed; and a screenshot it could take (docs/images/ holds two)."""
    browser = _chromium()
    if browser is None:
        pytest.skip("no Chromium on PATH (Debian: apt-get install chromium)")
    report = tmp_path / "report.html"
    report.write_text(_page(RED), encoding="utf-8")
    common = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
              "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", report.as_uri()], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert "FAIL: 2 of 3 scenarios failed" in dom and "broken in 2 scenario(s)" in dom
    assert dom.count("<details") == 2 and "<details open" not in dom
    shot = tmp_path / "report.png"
    subprocess.run([*common, "--window-size=1200,900", f"--screenshot={shot}", report.as_uri()],
                   capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


def test_the_markdown_report_states_the_configuration_in_words() -> None:
    from harness.report.scorecard import render_markdown

    text = render_markdown(RED)
    assert "- **reference proxy**: no" in text and "- **rechunk**: none" in text and "- **strict**: no" in text
    assert "False" not in text and ": 0\n" not in text


def test_har_entries_start_when_their_request_was_sent() -> None:
    from harness.core.dialects.clients import CLIENTS
    from harness.core.exchange import Exchange, RecordedRequest
    from harness.report.record import har

    upstream = RecordedRequest("POST", "/v1/chat/completions", "", {}, {"model": "m"}, None, received_at=1_000.25)
    exchanges = [(label, Exchange(label, CLIENTS["openai"], True, {"model": "m"}, {}, 200, started_at=sent,
                                  upstream=(upstream,) if label == "first" else ()))
                 for label, sent in (("first", 1_000.0), ("second", 1_001.0))]
    entries = har(exchanges, proxy_url="http://127.0.0.1:1/v1", mock_url="http://127.0.0.1:2",
                  redactor=Redactor.for_headers({}))["log"]["entries"]
    started = [e["startedDateTime"] for e in entries]
    assert started == sorted(started) and len(started) == 3
    assert started[0].startswith("1970-01-01T00:16:40+") and started[1].startswith("1970-01-01T00:16:40.25")
