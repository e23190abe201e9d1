"""The SSE framing analyser, case by case: raw bytes in, events and anomalies out."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.judge.readers.sse import AnomalyKind, parse_events

LINE_PIECES = [b"data: ", b"data:", b"{}", b'{"a": 1}', b"[DONE]", b"\n", b"\r\n", b"\r", b": c", b"event: e", b"\xff"]


@dataclass(frozen=True)
class Case:
    id: str
    raw: bytes
    data: tuple[str, ...]  # the data of every dispatched event, in order
    anomalies: tuple[AnomalyKind, ...] = ()  # kinds, in byte order


CASES = [
    Case("plain", b"data: {}\n\ndata: [DONE]\n\n", ("{}", "[DONE]")),
    Case("no-space-after-colon", b"data:{}\n\ndata:[DONE]\n\n", ("{}", "[DONE]")),
    Case("only-one-space-is-stripped", b"data:  x\n\ndata: [DONE]\n\n", (" x", "[DONE]")),
    Case("crlf", b"data: {}\r\n\r\ndata: [DONE]\r\n\r\n", ("{}", "[DONE]")),
    Case("cr", b"data: {}\r\rdata: [DONE]\r\r", ("{}", "[DONE]")),
    Case("mixed-line-ends", b"data: a\r\n\ndata: b\n\r\ndata: [DONE]\r\r", ("a", "b", "[DONE]")),
    Case("bom", b"\xef\xbb\xbfdata: {}\n\ndata: [DONE]\n\n", ("{}", "[DONE]")),
    Case(
        "comments-and-fields",
        b": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: {}\n\n:\n\ndata: [DONE]\n\n",
        ("{}", "[DONE]"),
    ),
    Case("fields-without-data-dispatch-nothing", b"event: ping\n\nid: 3\n\ndata: [DONE]\n\n", ("[DONE]",)),
    Case("unknown-field-is-ignored", b"foo: bar\ndata: {}\n\ndata: [DONE]\n\n", ("{}", "[DONE]")),
    Case("data-without-colon-is-empty", b"data\n\ndata: [DONE]\n\n", ("", "[DONE]")),
    Case("blank-lines-after-done", b"data: [DONE]\n\n\n\n", ("[DONE]",)),
    Case("stray-json-line", b'{"id": 1}\n\ndata: {}\n\ndata: [DONE]\n\n', ("{}", "[DONE]"), ("stray-payload",)),
    Case(
        "two-payloads-in-one-event",
        b'data: {"a": 1}\ndata: {"b": 2}\n\ndata: [DONE]\n\n',
        ('{"a": 1}\n{"b": 2}', "[DONE]"),
        ("glued-events",),
    ),
    Case("done-glued-to-chunk", b"data: {}\ndata: [DONE]\n\n", ("{}\n[DONE]",), ("glued-events", "done-missing")),
    Case(
        "one-payload-over-three-lines",
        b'data: {\ndata:  "a": 1\ndata: }\n\ndata: [DONE]\n\n',
        ('{\n "a": 1\n}', "[DONE]"),
        ("split-payload",),
    ),
    Case("no-done", b"data: {}\n\n", ("{}",), ("done-missing",)),
    Case("empty-body", b"", (), ("done-missing",)),
    Case("done-with-space", b"data: {}\n\ndata: [DONE] \n\n", ("{}", "[DONE] "), ("done-not-exact",)),
    Case("done-lower-case", b"data: [done]\n\n", ("[done]",), ("done-not-exact",)),
    Case("done-twice", b"data: [DONE]\n\ndata: [DONE]\n\n", ("[DONE]", "[DONE]"), ("done-repeated",)),
    Case("chunk-after-done", b"data: [DONE]\n\ndata: {}\n\n", ("[DONE]", "{}"), ("event-after-done",)),
    Case("comments-after-done", b"data: [DONE]\n\n: bye\n\n: keep-alive\n", ("[DONE]",)),
    Case("field-after-done", b"data: [DONE]\n\nevent: x\n\n", ("[DONE]",), ("bytes-after-done",)),
    Case("done-unterminated", b"data: {}\n\ndata: [DONE]", ("{}", "[DONE]"), ("bytes-after-done",)),
    Case("done-one-line-end-only", b"data: {}\n\ndata: [DONE]\n", ("{}", "[DONE]"), ("bytes-after-done",)),
    Case("chunk-unterminated", b"data: {}\n\ndata: {}", ("{}", "{}"), ("unterminated-event", "done-missing")),
    Case(
        "invalid-utf8",
        b'data: {"c": "\xff"}\n\ndata: [DONE]\n\n',
        ('{"c": "\ufffd"}', "[DONE]"),
        ("invalid-utf8",),
    ),
    Case("utf8-multibyte", 'data: {"c": "é€😀"}\n\ndata: [DONE]\n\n'.encode(), ('{"c": "é€😀"}', "[DONE]")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_parse_events(case: Case) -> None:
    stream = parse_events(case.raw)
    assert tuple(e.data for e in stream.events) == case.data
    assert tuple(a.kind for a in stream.anomalies) == case.anomalies
    assert [e.index for e in stream.events] == list(range(len(stream.events)))
    assert stream.size == len(case.raw)


def test_offsets_and_termination() -> None:
    raw = b": hi\n\nevent: x\ndata: {}\r\n\r\ndata: [DONE]\n\n"
    first, done = parse_events(raw).events
    assert first.byte_offset == raw.index(b"event:") and first.end_offset == raw.index(b"data: [DONE]")
    assert first.event == "x" and first.terminated and first.data_lines == 1
    assert done.byte_offset == raw.index(b"data: [DONE]") and done.end_offset == len(raw) and done.is_done


def test_anomaly_evidence_points_at_the_bytes() -> None:
    raw = b'data: {"a": 1}\n\ndata: {"b": 2}\ndata: {"c": 3}\n\ndata: [DONE]\n\n'
    (anomaly,) = parse_events(raw).anomalies
    assert anomaly.kind == "glued-events"
    assert anomaly.event_index == 1 and anomaly.byte_offset == raw.index(b'data: {"b"')
    assert '{"b": 2}' in anomaly.excerpt and anomaly.message


def test_large_stream_is_linear() -> None:
    """Many tiny events and one huge event parse in one pass (no quadratic rescans)."""
    raw = b"".join(b'data: {"i": %d}\n\n' % i for i in range(20000)) + b"data: " + b"x" * 2_000_000 + b"\n\n"
    stream = parse_events(raw + b"data: [DONE]\n\n")
    assert len(stream.events) == 20002 and [a.kind for a in stream.anomalies] == []


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400) | st.lists(st.sampled_from(LINE_PIECES), max_size=30).map(b"".join))
def test_any_bytes_parse(raw: bytes) -> None:
    """Arbitrary bytes never raise; events come in byte order and inside the body."""
    stream = parse_events(raw)
    offsets = [e.byte_offset for e in stream.events]
    assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
    assert all(0 <= e.byte_offset < e.end_offset <= len(raw) for e in stream.events)
    assert all(0 <= a.byte_offset <= len(raw) for a in stream.anomalies)
