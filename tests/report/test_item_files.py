"""Each item's files (HAR, transcript) and its anchor in the HTML report have a name of their own:
a scenario played over several dialect pairs, or with a server's habits, keeps one file per
item, and the report links each failure to its own HAR file."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from harness.core.redact import Redactor
from harness.judge.rules import RULES
from harness.report.record import html_report
from harness.report.summary import FailureRecord, ItemRecord, summarize

STEM_CASES: list[tuple[str, ItemRecord, str]] = [
    ("the scenario as written keeps its id",
     ItemRecord("hermes-single", "hermes", "openai", "passed", upstream="openai"), "hermes-single"),
    ("served in another upstream dialect",
     ItemRecord("hermes-single", "hermes", "openai", "passed", upstream="anthropic"), "hermes-single.openai-to-anthropic"),
    ("played by another client than its own",
     ItemRecord("hermes-single", "hermes", "xml-client", "passed", upstream="openai", own_profile=False),
     "hermes-single.xml-client-to-openai"),
    ("with a server's habits",
     ItemRecord("hermes-single", "hermes", "openai", "passed", upstream="openai", server="vllm"),
     "hermes-single.openai-to-openai.vllm"),
]


@pytest.mark.parametrize(("item", "stem"), [c[1:] for c in STEM_CASES], ids=[c[0] for c in STEM_CASES])
def test_an_items_files_are_named_after_what_it_played(item: ItemRecord, stem: str) -> None:
    assert item.file_stem == stem
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", stem)


def test_the_stems_of_a_runs_items_are_unique() -> None:
    assert len({case[1].file_stem for case in STEM_CASES}) == len(STEM_CASES)


def _failed(upstream: str) -> ItemRecord:
    failures = (FailureRecord("TEXT-001", RULES["TEXT-001"].group, RULES["TEXT-001"].severity, "streaming",
                              f"content '<tool_call>' over {upstream}", False, "event 1, byte 205"),)
    return ItemRecord("hermes-single", "hermes", "openai", "failed", failures=failures, upstream=upstream)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.details: list[tuple[str, list[str]]] = []  # each failure's id and the links in its summary

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "details":
            self.details.append((str(found["id"]), []))
        elif tag == "a" and self.details and found.get("href", "").startswith("har/"):  # type: ignore[union-attr]
            self.details[-1][1].append(str(found["href"]))


def test_the_report_links_each_pairs_failure_to_its_own_har_file() -> None:
    items = [_failed("openai"), _failed("anthropic"), _failed("responses")]
    summary = summarize(items, {})
    page = html_report(title="t", context={}, summary=summary,
                       failures={i.file_stem: f"transcript of {i.upstream}" for i in items},
                       hars={i.file_stem: f"har/{i.file_stem}.har" for i in items}, rules=RULES,
                       redactor=Redactor.for_headers({}))
    parsed = _Links()
    parsed.feed(page)
    assert parsed.details == [
        ("scenario-hermes-single", ["har/hermes-single.har"]),
        ("scenario-hermes-single.openai-to-anthropic", ["har/hermes-single.openai-to-anthropic.har"]),
        ("scenario-hermes-single.openai-to-responses", ["har/hermes-single.openai-to-responses.har"]),
    ]
    assert all(f"transcript of {u}" in page for u in ("openai", "anthropic", "responses"))
