"""Pure parts of what users read: known-failure files, judging, score cards, transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.core.dialects.clients import CLIENTS
from harness.core.errors import ConformanceFailure
from harness.core.exchange import Exchange
from harness.core.records import Attempt, ScenarioRun
from harness.judge.readers.transcript import Position, json_pointer, transcript
from harness.judge.rules import Options, evaluate
from harness.report.failure import answer_diff
from harness.report.known_failures import KnownFailuresError, judge, load_known_failures, parse_known_failures
from harness.report.scorecard import render_json, render_markdown, render_text
from harness.report.summary import ItemRecord, item_record, rules_by_id, summarize
from support.library import load_library

RULES = rules_by_id()
LIBRARY = {s.id: s for s in load_library()}
SINGLE = LIBRARY["qwen-tools-single-call"]

# --------------------------------------------------------------------------- known failures

KNOWN = parse_known_failures(
    [
        {"scenario": "qwen-tools-single-call", "rule": "SSE-004", "reason": "we never send [DONE]"},
        {"scenario": "hermes-*", "reason": "Hermes not supported yet"},
    ],
    path="known.yaml",
    known_rules=set(RULES),
)

JUDGE_CASES: list[tuple[str, list[str], str, list[str], list[str], int]] = [
    # scenario, failed rules -> outcome, expected rules, unexpected rules, stale entries
    ("qwen-tools-single-call", ["SSE-004"], "xfailed", ["SSE-004"], [], 0),
    ("qwen-tools-single-call", [], "failed", [], [], 1),  # listed but passes: strict xpass
    ("qwen-tools-single-call", ["SSE-004", "CALLS-001"], "failed", ["SSE-004"], ["CALLS-001"], 0),
    ("qwen-tools-single-call", ["CALLS-001"], "failed", [], ["CALLS-001"], 1),
    ("hermes-single", ["CALLS-001", "TEXT-001"], "xfailed", ["CALLS-001", "TEXT-001"], [], 0),
    ("hermes-single", [], "passed", [], [], 0),  # a glob: some of its scenarios may pass (stale when none fails)
    ("plain-native-single", [], "passed", [], [], 0),
    ("plain-native-single", ["TOOL-002"], "failed", [], ["TOOL-002"], 0),
]


@pytest.mark.parametrize(("scenario", "failed", "outcome", "expected", "unexpected", "stale"), JUDGE_CASES)
def test_judge(scenario: str, failed: list[str], outcome: str, expected: list[str], unexpected: list[str],
               stale: int) -> None:
    judgement = judge(scenario, failed, KNOWN)
    assert judgement.outcome == outcome
    assert sorted(judgement.expected) == sorted(expected)
    assert list(judgement.unexpected) == unexpected
    assert len(judgement.stale) == stale
    if stale:
        message = judgement.xpass_message("known.yaml")
        assert message.startswith("[XPASS(strict)]") and "remove or narrow these entries in known.yaml" in message


BAD_FILES: list[tuple[str, str]] = [
    ("scenario: x\n", "expected a list of entries"),
    ("- scenario: x\n", "'reason' must say why"),
    ("- {reason: r}\n", "'scenario' must be a scenario id or glob"),
    ("- {scenario: x, reason: r, rules: [A]}\n", "unknown key(s) rules"),
    ("- {scenario: x, reason: r, rule: NOPE-001}\n", "unknown rule 'NOPE-001'"),
    ("- {scenario: x, reason: r, rule: SSE-999}\n", "rules of that group: SSE-001"),
    ("- [not, a, mapping]\n", "expected a mapping"),
    ("- {scenario: x\n", "not valid YAML"),
]


@pytest.mark.parametrize(("text", "message"), BAD_FILES)
def test_bad_known_failure_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(text)
    with pytest.raises(KnownFailuresError) as info:
        load_known_failures(path, known_rules=set(RULES))
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_known_failures_file_forms_and_unmatched_entries(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text("known_failures:\n  - {scenario: 'qwen-*', reason: r}\n  - {scenario: typo, rule: SSE-004, reason: r}\n")
    known = load_known_failures(path, known_rules=set(RULES))
    assert [e.line for e in known.entries] == [2, 3]
    assert [e.scenario for e in known.unmatched(LIBRARY)] == ["typo"]
    with pytest.raises(KnownFailuresError, match=r"known.yaml:2: entry 2"):
        path.write_text("- {scenario: a, reason: r}\n- {scenario: b}\n")
        load_known_failures(path)


# --------------------------------------------------------------------------- score card


def _records() -> list[ItemRecord]:
    failing = Attempt("stream", "streaming", SINGLE, None, (ConformanceFailure("SSE-004", "no [DONE]"),
                                                             ConformanceFailure("CALLS-001", "no call")))
    run = ScenarioRun(SINGLE, CLIENTS["openai"], (failing,))
    hermes = LIBRARY["hermes-single"]
    return [
        item_record(SINGLE, CLIENTS["openai"], "failed", run=run, expected_rules=["SSE-004"]),
        item_record(hermes, CLIENTS["openai"], "passed", run=ScenarioRun(hermes, CLIENTS["openai"], ())),
        item_record(LIBRARY["features-loop-guard"], CLIENTS["openai"], "skipped", reason="requires feature loop-guard"),
    ]


def test_records_survive_json() -> None:
    for record in _records():
        assert ItemRecord.from_json(json.loads(json.dumps(record.to_json()))) == record


def test_summary_scores_and_the_scenario_by_rule_table() -> None:
    summary = summarize(_records(), {"proxy": "http://p/v1"})
    fams = summary.families
    assert (fams["qwen-tools"].failed, fams["hermes"].passed, fams["features"].skipped) == (1, 1, 1)
    assert summary.total.score == "1/2"
    single = next(i for i in summary.items if i.scenario == SINGLE.id)
    assert [summary.rule_cell(single, r) for r in ("SSE-004", "CALLS-001", "HTTP-001")] == ["xfail", "FAIL", "pass"]
    assert summary.cell(single, RULES["CALLS-001"].group) == "FAIL"
    assert summary.broken_rules == ["SSE-004", "CALLS-001"]  # catalogue order

    lines = render_text(summary).splitlines()
    words = [line.split() for line in lines]
    assert ["qwen-tools", "0/1", "1", "failed"] in words and ["total", "1/2"] in words
    header = lines.index(
        "rules failed per scenario (F fail, x known failure, . not broken; scenarios without a failure left out):"
    )
    assert lines[header + 1].split() == ["SSE-004", "CALLS-001"]  # only the rules something failed
    assert lines[header + 2].split() == [SINGLE.id, "x", "F"]  # only the scenarios that failed something
    assert lines[header + 3:] == [
        "the other 1 scenario(s) that ran pass every rule",
        "  features-loop-guard: skipped: requires feature loop-guard",
    ]

    md = render_markdown(summary)
    assert "| family | passed/ran |" in md and "| qwen-tools | 0/1 | 1 | 0 | 0 |" in md
    assert "| scenario | SSE-004 | CALLS-001 |" in md and f"| `{SINGLE.id}` | ⚠️ | ❌ |" in md
    assert "`hermes-single`" not in md
    assert f"`{SINGLE.id}` **CALLS-001** [client]" in md
    assert "`features-loop-guard` skipped: requires feature loop-guard" in md

    data: dict[str, Any] = render_json(summary)
    assert data["totals"]["failed"] == 1 and data["context"]["proxy"] == "http://p/v1" and data["checked"]
    assert data["failed_rules"] == ["SSE-004", "CALLS-001"]
    by_id = {s["scenario"]: s for s in data["scenarios"]}
    assert by_id[SINGLE.id]["groups"][RULES["CALLS-001"].group] == "FAIL"
    assert by_id[SINGLE.id]["rules"] == {"SSE-004": "xfail", "CALLS-001": "FAIL"}
    assert {r["id"] for r in data["rules"]} == set(RULES)


@pytest.mark.parametrize(("outcomes", "text", "markdown"), [
    (["passed", "passed", "skipped"], "every rule passes for every scenario that ran (2)",
     "Every rule passes for every scenario that ran (2)."),
    (["skipped", "skipped", "skipped"],
     "nothing was checked: all 3 scenario(s) were skipped; most often (2 of them): requires feature xml-client",
     "**Nothing was checked: all 3 scenario(s) were skipped; most often (2 of them): requires feature xml-client.**"),
])
def test_a_run_without_failures_says_so_in_one_line(outcomes: list[str], text: str, markdown: str) -> None:
    """No table when nothing failed, and never "passes" when nothing was checked."""
    ids = ["hermes-single", "plain-native-single", "qwen-tools-single-call"]
    reasons = ["requires feature xml-client", "requires feature xml-client", "not meaningful under client profile xml-client"]
    records = [item_record(LIBRARY[i], CLIENTS["xml-client"], o, reason=r if o == "skipped" else "", run=None)
               for i, o, r in zip(ids, outcomes, reasons)]
    summary = summarize(records)
    rendered = render_text(summary)
    assert text in rendered.splitlines() and "rules failed" not in rendered
    assert ("passes" in rendered) is (not summary.nothing_checked)
    md = render_markdown(summary)
    assert markdown in md.splitlines() and "| scenario |" not in md
    assert render_json(summary)["checked"] is (not summary.nothing_checked)


def test_the_terminal_counts_skipped_scenarios_by_reason() -> None:
    """Hundreds of scenarios skipped for a few reasons (another client dialect, formats not
    claimed) are one line per reason, the most frequent first; a reason one scenario was skipped
    for keeps its name; errors stay listed; every skip is listed one flag away (-v)."""
    other_dialect = "not meaningful under client profile anthropic (the scenario's client.profiles: openai)"
    unclaimed = "not claimed: the proxy does not claim to rescue the hermes format"
    skips = {"hermes-single": unclaimed, "plain-native-single": other_dialect, "qwen-tools-single-call": other_dialect,
             "plain-include-usage": other_dialect, "hermes-arguments-as-string": unclaimed,
             "features-loop-guard": "requires feature loop-guard"}
    records = [item_record(LIBRARY[i], CLIENTS["openai"], "skipped", reason=r, run=None) for i, r in skips.items()]
    records.append(item_record(LIBRARY["plain-text-multibyte"], CLIENTS["openai"], "error", reason="boom", run=None))
    summary = summarize(records)
    folded = render_text(summary, each_skip=False).splitlines()
    tail = folded[folded.index("  3 scenarios skipped: " + other_dialect):]
    assert tail == [
        "  3 scenarios skipped: " + other_dialect,
        "  2 scenarios skipped: " + unclaimed,
        "  features-loop-guard: skipped: requires feature loop-guard",
        "  (-v lists each skipped scenario)",
        "  plain-text-multibyte: error: boom",
    ]
    listed = render_text(summary).splitlines()
    assert all(f"  {i}: skipped: {r}" in listed for i, r in skips.items())
    assert "  plain-text-multibyte: error: boom" in listed and not any("scenarios skipped" in line for line in listed)


STALE = "failed: listed as a known failure, but no longer fails"


@pytest.mark.parametrize(("outcomes", "verdict"), [
    (["passed", "error", "failed"], "the other 1 scenario(s) that ran pass every rule"),
    (["error", "failed", "failed"], None),
    (["passed", "passed", "error"], "the other 2 scenario(s) that ran pass every rule"),
])
def test_items_that_broke_no_rule_but_did_not_pass_are_not_passing(outcomes: list[str], verdict: str | None) -> None:
    """An error, or a known failure that no longer fails, breaks no rule of the table:
    it is listed in both reports, and never counted among the scenarios that pass."""
    ids = ["hermes-single", "plain-native-single", "qwen-tools-single-call"]
    records = [item_record(LIBRARY[i], CLIENTS["openai"], o, reason="boom" if o == "error" else "", run=None)
               for i, o in zip(ids, outcomes)]
    summary = summarize(records)
    text, md = render_text(summary), render_markdown(summary)
    assert "every rule passes" not in text and "every rule passes" not in md.lower()
    if verdict is None:
        assert "pass every rule" not in text and "pass every rule" not in md
    else:
        assert verdict in text.splitlines() and verdict[0].upper() + verdict[1:] + "." in md.splitlines()
    for i, outcome in zip(ids, outcomes):
        what = {"error": "error: boom", "failed": STALE}.get(outcome)
        if what is not None:
            assert f"  {i}: {what}" in text.splitlines() and f"- `{i}` {what}" in md.splitlines()


# --------------------------------------------------------------------------- item output


def _exchange(raw: bytes, **kw: Any) -> Exchange:
    return Exchange(SINGLE.id, CLIENTS["openai"], True, SINGLE.client.request, {}, 200, {"content-type": "text/event-stream"},
                    raw, **kw)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def test_answer_diff_shows_calls_content_and_finish_reason() -> None:
    raw = _chunk({"role": "assistant", "content": "<tools>oops"}) + _chunk({}, "stop") + b"data: [DONE]\n\n"
    lines = answer_diff(SINGLE, _exchange(raw))
    text = "\n".join(lines)
    assert "tool calls (- expected, + received):" in text
    assert "  - #1 get_weather\n  -    {\n  -      \"city\": \"Paris\"," in text
    assert "  + (no tool calls)" in text
    assert "+ received '<tools>oops'" in text
    assert "finish_reason: expected 'tool_calls', received 'stop'" in text


def test_transcript_marks_the_offending_event_and_trims() -> None:
    raw = b"".join(_chunk({"content": f"part {i}"}) for i in range(20)) + b"data: [DONE]\n\n"
    lines = transcript(_exchange(raw), Position(event_index=10), around=2)
    marked = [line for line in lines if line.lstrip().startswith(">>")]
    assert len(marked) == 1 and '"part 10"' in marked[0]
    assert sum('"part ' in line for line in lines) == 5  # two either side
    assert "… 8 line(s) …" in lines[1] and lines[-1].strip().startswith("…")
    assert '"id"' not in "\n".join(lines[1:])  # the repeated fields are left out


def _body(**message: Any) -> bytes:
    body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m", "system_fingerprint": "fp",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, **message},
                         "finish_reason": "stop"}]}
    return json.dumps(body).encode()


PLAIN = LIBRARY["plain-native-single"]
ARGS = json.dumps({"city": "Paris", "unit": "celsius", "note": "x" * 300})


def test_a_single_body_is_shown_indented_with_the_named_member_marked() -> None:
    """A whole answer is shown one member per line, boilerplate left out, the member a
    rule names marked: the offending tool call is shown, not cut off at one line."""
    calls = [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}]
    exchange = Exchange(PLAIN.id, CLIENTS["openai"], False, {**PLAIN.client.request, "stream": False}, {}, 200,
                        {"content-type": "application/json"}, _body(tool_calls=calls))
    failures = {f.rule_id: f for f in evaluate(PLAIN, exchange, Options(strict=True))}
    assert failures["TOOL-009"].evidence["json_path"] == "/choices/0/finish_reason"
    lines = transcript(exchange, Position.of(failures["TOOL-009"].evidence))
    assert lines[0].startswith("answer as received (HTTP 200, ") and "/choices/0/finish_reason marked" in lines[0]
    assert "JSON indented, id/object/created/model/system_fingerprint left out" in lines[0]
    marked = [line for line in lines if line.lstrip().startswith(">>")]
    assert marked == ['  >>       "finish_reason": "stop"']
    text = "\n".join(lines)
    assert '"name": "get_weather",' in text and '"arguments": "{\\"city\\": \\"Paris\\"' in text
    assert '"chatcmpl-1"' not in text and '"fp"' not in text


@pytest.mark.parametrize(("path", "offset", "marked"), [
    ("/choices/0/message/tool_calls/0", None, "{"),  # a call: its first line
    ("/choices/0/message/tool_calls/7", None, '"tool_calls": ['),  # no such call: the nearest member shown
    ("/id", None, '"id": "chatcmpl-1",'),  # a boilerplate member a rule names is kept
    ("/choices/0/message/content", 250, "(character 250 of 400)"),  # a long string around the character
])
def test_a_json_pointer_marks_its_member(path: str, offset: int | None, marked: str) -> None:
    exchange = Exchange(PLAIN.id, CLIENTS["openai"], False, {}, {}, 200, {"content-type": "application/json"},
                        _body(content="a" * 240 + "<tools>" + "b" * 153,
                              tool_calls=[{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]))
    lines = transcript(exchange, Position(json_path=path, text_offset=offset))
    (line,) = [line for line in lines if line.lstrip().startswith(">>")]
    assert line.endswith(marked) if offset is None else marked in line
    if offset is not None:
        assert "<tools>" in line and len(line) < 200


def test_a_pointer_through_keys_with_slash_and_tilde_marks_its_member() -> None:
    """Rules (schema problems) and the transcript write pointers one way (RFC 6901)."""
    pointer = json_pointer(["a/b", "m~n", 0])
    assert pointer == "/a~1b/m~0n/0"
    exchange = Exchange(PLAIN.id, CLIENTS["openai"], False, {}, {}, 200, {"content-type": "application/json"},
                        json.dumps({"a/b": {"m~n": ["x"]}}).encode())
    (line,) = [line for line in transcript(exchange, Position(json_path=pointer)) if line.lstrip().startswith(">>")]
    assert line.endswith('"x"')


def test_a_body_that_is_not_json_is_shown_as_lines() -> None:
    page = b"<html>\n<body>Bad gateway</body>\n</html>\n"
    exchange = Exchange(PLAIN.id, CLIENTS["openai"], False, {}, {}, 502, {"content-type": "text/html"}, page)
    lines = transcript(exchange)
    assert lines[0].startswith("answer as received (HTTP 502, ") and "byte offset | line" in lines[0]
    assert [line.split("| ", 1)[1] for line in lines[1:]] == ["<html>", "<body>Bad gateway</body>", "</html>"]


def test_transcript_of_nothing_says_why() -> None:
    lines = transcript(_exchange(b"", timed_out=True, elapsed=2.0))
    assert lines == ["answer as received (HTTP 200, 0 bytes, gave up after 2.0 s): (empty)"]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def test_answer_diff_reads_an_anthropic_answer_in_its_dialect() -> None:
    scenario = LIBRARY["anthropic-native-tool-use"]
    raw = b"".join([
        _event("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
                                                                      "content": [], "model": "c", "usage": {}}}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
        _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                       "delta": {"type": "text_delta", "text": "I'll get the forecast for Oslo."}}),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {}}),
        _event("message_stop", {"type": "message_stop"}),
    ])
    exchange = Exchange(scenario.id, CLIENTS["anthropic"], True, scenario.client.request, {}, 200,
                        {"content-type": "text/event-stream"}, raw)
    text = "\n".join(answer_diff(scenario, exchange))
    assert "  - #1 get_forecast" in text and "  + (no tool calls)" in text
    assert "content" not in text  # the text arrived as expected
    assert "stop_reason: expected 'tool_use', received 'end_turn'" in text
