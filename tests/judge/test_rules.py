"""The conformance rules on correct chat-completion answers, and the judging around them.

Every acceptable variation (CRLF, ``data:`` without a space, comments, one-fragment arguments,
...) must produce no failure at all. The answers that break each rule sit by rule prefix in
``test_rules_<topic>.py`` (and the Anthropic and fault cases in ``test_rules_anthropic.py`` and
``test_rules_faults.py``); every rule has a case that breaks it on a scenario that a correct
answer passes, and judges at least one correct answer, so a rule that always fails is caught too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import messages_answers as messages
from support.chat_rules import (
    BASE,
    BROKEN_ARGS,
    KIRO_CUT_INPUT,
    CALL_STREAM,
    CHOICE_0,
    CHOICE_1,
    Case,
    GOOD_UPSTREAM,
    INVOKE_READ,
    JSON_HEADERS,
    PARIS,
    PARIS_ARGS,
    PARIS_MESSAGE,
    READ_FILE,
    ROLE,
    SSE_HEADERS,
    S_BROKEN,
    S_KIRO_CUT,
    S_CALL,
    S_EXACT,
    S_LINES,
    S_LOOP,
    S_NOARGS,
    S_PROSE,
    S_REGEX,
    S_SAMPLING,
    S_SINGLE,
    S_SLOW,
    S_TEXT,
    S_TWO,
    S_TWO_CHOICES,
    S_UPSTREAM,
    S_USAGE,
    S_XML_CLIENT,
    S_XML_CLIENT_TIME,
    S_XML_CLIENT_WRITE,
    TEXT_STREAM,
    TWO_CALL_STREAM,
    WRITE_FILE,
    WRITTEN,
    XML_READ,
    XML_WRITE,
    args,
    case,
    chunk,
    completion,
    crlf,
    ev,
    exchange,
    judge_case,
    options_for,
    scenario,
    sse,
    start,
    two_choices,
    upstream_request,
    usage_chunk,
    xml_client_stream,
)
from support.rule_family import Family

from harness.core.dialects.clients import ANTHROPIC_CLIENT, OPENAI_CLIENT, XML_CLIENT, Profile
from harness.core.dialects.frames import RawFrame, ToolCallFrame
from harness.core.exchange import RecordedRequest
from harness.core.scenario.model import PROFILES, Scenario
from harness.judge.compare import (
    content_equal,
    first_difference,
    fold_ws,
    folded_units,
    json_equal,
    matched_prefix,
)
from harness.judge.readers.reading import read_answer
from harness.judge.readers.xml_calls import parse_xml_calls, tool_vocabulary
from harness.judge.rules import RULES, Options, compare_answers, compare_item, evaluate, rules_markdown

ROOT = Path(__file__).resolve().parents[2]

ACCEPTABLE: list[Case] = [
    case("iso-005-two-choices-apart", S_TWO_CHOICES, two_choices(CHOICE_0, CHOICE_1)),
    case("ok-call-split-arguments", S_CALL, CALL_STREAM),
    case(
        "ok-broken-arguments-relayed-as-sent",
        S_BROKEN,
        sse(ROLE, chunk(start(name="write_file", args="")), chunk(args(BROKEN_ARGS[:12])), chunk(args(BROKEN_ARGS[12:])),
            chunk(finish="tool_calls")),
    ),
    case(
        "ok-broken-arguments-kept-as-text",
        S_BROKEN,
        sse(ROLE, chunk({"content": BROKEN_ARGS}), chunk(finish="stop")),
    ),
    case(  # the other right answer: a clean error inside the stream (the regex stands aside for the error's text)
        "ok-broken-arguments-answered-with-an-error",
        S_BROKEN,
        sse(ROLE, ev('{"error": {"message": "the model wrote arguments that are no JSON", "type": "server_error", '
                     '"param": null, "code": null}}')),
    ),
    # Kiro's cut input passed on exactly as it came, the call ending the answer: no client can
    # parse it into a call to run (AIClient-2-API relays it so); or shown as text, as the reference does.
    case(
        "ok-kiro-cut-input-relayed-as-sent",
        S_KIRO_CUT,
        sse(ROLE, chunk({"content": "I'll write the report now."}), chunk(start(name="Write", args="")),
            chunk(args(KIRO_CUT_INPUT[:4000])), chunk(args(KIRO_CUT_INPUT[4000:])), chunk(finish="tool_calls")),
    ),
    case(
        "ok-kiro-cut-input-as-text",
        S_KIRO_CUT,
        sse(ROLE, chunk({"content": "I'll write the report now."}), chunk({"content": KIRO_CUT_INPUT}),
            chunk(finish="length")),
    ),
    case("ok-name-and-arguments-in-one-delta", S_CALL, sse(ROLE, chunk(start(args=PARIS_ARGS)), chunk(finish="tool_calls"))),
    case(
        "ok-arguments-in-one-later-fragment",
        S_CALL,
        sse(ROLE, chunk(start(args=None)), chunk(args(PARIS_ARGS)), chunk(finish="tool_calls")),
    ),
    case(
        "ok-arguments-char-by-char",
        S_CALL,
        sse(ROLE, chunk(start()), *(chunk(args(c)) for c in PARIS_ARGS), chunk(args("")), chunk(finish="tool_calls")),
    ),
    case(
        "ok-text-char-by-char",
        S_TEXT,
        sse(ROLE, *(chunk({"content": c}) for c in "Hello world"), chunk(finish="stop")),
    ),
    case("ok-text-one-delta-role-merged", S_TEXT, sse(chunk({"role": "assistant", "content": "Hello world"}), chunk(finish="stop"))),
    case("ok-finish-with-last-content", S_TEXT, sse(ROLE, chunk({"content": "Hello"}), chunk({"content": " world"}, "stop"))),
    case("ok-empty-and-null-content-deltas", S_CALL, sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({**start(args=PARIS_ARGS), "content": None}),
        chunk({"content": None}, "tool_calls"),
    )),
    case("ok-role-merged-with-call", S_CALL, sse(chunk({"role": "assistant", **start(args=PARIS_ARGS)}), chunk(finish="tool_calls"))),
    case("ok-data-without-space", S_CALL, CALL_STREAM.replace("data: ", "data:")),
    case("ok-crlf", S_CALL, crlf(CALL_STREAM)),
    case("ok-cr-only", S_TEXT, TEXT_STREAM.replace("\n", "\r")),
    case(
        "ok-keep-alive-comments",
        S_TEXT,
        ": keep-alive\n\n" + TEXT_STREAM.replace("\n\ndata:", "\n\n: ping\n\n:\n\ndata:", 2),
    ),
    case(
        "ok-event-id-retry-fields",
        S_TEXT,
        "".join(
            f"event: message\nid: {i}\nretry: 3000\n" + e + "\n\n"
            for i, e in enumerate(TEXT_STREAM.strip().split("\n\n"))
        ),
    ),
    case(
        "ok-extra-unknown-fields",
        S_CALL,
        sse(
            chunk({"role": "assistant", "reasoning_content": None}, system_fingerprint="fp_1", service_tier="default", x_vendor={"a": 1}),
            {**BASE, "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": PARIS_ARGS, "x": 1}, "x_extra": True}]}, "finish_reason": None, "logprobs": None, "stop_reason": None}]},
            chunk(finish="tool_calls", usage=None, x_timing={"ms": 3}),
        ),
    ),
    case(
        "ok-odd-unique-ids",
        S_TWO,
        sse(
            chunk({"role": "assistant", "content": "Let me check."}),
            chunk(start(0, "toolu_01A09q90qw90lq917835lq9", args='{"city":"Paris"}')),
            chunk(start(1, "0", name="get_time", args="{}")),
            chunk(finish="tool_calls"),
        ).replace('"id": "chatcmpl-1"', '"id": "9f1c2d3e-aaaa-bbbb-cccc-0123456789ab"'),
    ),
    case("ok-text-then-two-calls", S_TWO, TWO_CALL_STREAM),
    case(
        "ok-two-calls-in-one-delta",
        S_TWO,
        sse(
            chunk({"role": "assistant", "content": "Let me check."}),
            chunk({"tool_calls": [start(0, "call_a", args='{"city":')["tool_calls"][0], start(1, "call_b", name="get_time", args="{}")["tool_calls"][0]]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "Paris"}'}}]}),
            chunk(finish="tool_calls"),
        ),
    ),
    case("ok-no-arguments-as-braces", S_NOARGS, sse(ROLE, chunk(start(name="get_time", args="{}")), chunk(finish="tool_calls"))),
    case("ok-usage-when-requested", S_USAGE, sse(ROLE, chunk({"content": "Hello world"}), chunk(finish="stop"), usage_chunk())),
    case("ok-blank-lines-after-done", S_TEXT, TEXT_STREAM + "\n\n"),
    case("ok-comments-after-done", S_TEXT, TEXT_STREAM + ": keep-alive\n\n: bye\n"),
    case("ok-prose-about-tags", S_PROSE, sse(ROLE, chunk({"content": "Wrap a call in <tool_call> and </tool_call>  tags."}), chunk(finish="stop"))),
    case(
        "ok-lines-other-spacing",
        S_LINES,
        sse(ROLE, chunk({"content": " Line one. \r\n\r\n\r\n"}), chunk({"content": "Line two: done.\n"}), chunk(finish="stop")),
    ),
    case("ok-exact", S_EXACT, TEXT_STREAM),
    case("ok-regex", S_REGEX, sse(ROLE, chunk({"content": "Hello there, friend"}), chunk(finish="stop"))),
    case("ok-single-answer", S_SINGLE, completion(PARIS_MESSAGE)),
    case(
        "ok-single-answer-extra-fields",
        S_SINGLE,
        completion({**PARIS_MESSAGE, "refusal": None, "reasoning_content": "..."}, system_fingerprint=None, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
    ),
    case("ok-json-content-type-with-charset", S_SINGLE, completion(PARIS_MESSAGE), headers={"content-type": "application/json; charset=utf-8"}),
    case(
        "ok-upstream-assertions",
        S_UPSTREAM,
        TEXT_STREAM,
        upstream=(upstream_request({"model": "other"}), upstream_request(dict(GOOD_UPSTREAM))),
    ),
    case("ok-loop-guard-no-upstream", S_LOOP, TEXT_STREAM),
    case("ok-sampling-forwarded", S_SAMPLING, TEXT_STREAM, upstream=(upstream_request(dict(S_SAMPLING.client.request)),)),
    case("ok-fast-enough", S_SLOW, TEXT_STREAM, elapsed=0.2, features=("fails-fast",)),
    case("ok-loop-guard-answers-alone", S_LOOP, TEXT_STREAM, features=("loop-guard",)),
    # A proxy with no loop guard is not held to the count.
    case("ok-upstream-count-without-loop-guard", S_LOOP, TEXT_STREAM, upstream=(upstream_request(dict(GOOD_UPSTREAM)),)),
    # A proxy that retries a failing upstream with back-off takes longer; unless it claims
    # fails-fast, no client is known to mind (openai-python itself waits 600 s).
    case("ok-slow-when-fails-fast-is-not-claimed", S_SLOW, TEXT_STREAM, elapsed=3.5),
    case("ok-xml-client-cline-xml", S_XML_CLIENT, xml_client_stream(XML_READ), profile=XML_CLIENT),
    case(
        "ok-xml-client-invoke-xml",
        S_XML_CLIENT,
        xml_client_stream(
            'I will read it.\n<function_calls>\n<invoke name="read_file">\n<parameter name="path">src/main.py'
            "</parameter>\n</invoke>\n</function_calls>",
            split=3,
        ),
        profile=XML_CLIENT,
    ),
    case("ok-xml-client-tool-without-parameters", S_XML_CLIENT_TIME, xml_client_stream("Checking.\n<get_time>\n</get_time>"), profile=XML_CLIENT),
    case("ok-xml-client-write-content-with-closing-tag", S_XML_CLIENT_WRITE, xml_client_stream(XML_WRITE, split=5), profile=XML_CLIENT),
    case(
        "ok-xml-client-single-answer",
        replace(S_XML_CLIENT, client=replace(S_XML_CLIENT.client, request={**S_XML_CLIENT.client.request, "stream": False})),
        completion({"role": "assistant", "content": XML_READ}, "stop"),
        profile=XML_CLIENT,
    ),
]



@pytest.mark.parametrize("c", ACCEPTABLE, ids=[c.id for c in ACCEPTABLE])
def test_rule_case(c: Case) -> None:
    judge_case(c)


@pytest.mark.parametrize(("upstream", "said"), [
    ((), "no request for it had reached the mock backend"),
    ((upstream_request(GOOD_UPSTREAM),), "1 request(s) for it had reached the mock backend"),
], ids=["proxy-stuck-before-the-backend", "backend-reached"])
def test_a_timeout_says_whether_the_proxy_reached_the_backend(upstream: tuple[RecordedRequest, ...], said: str) -> None:
    """A proxy stuck as a whole (busy with an earlier exchange) never reaches the backend;
    one stuck on this exchange usually has: the message tells them apart."""
    ex = exchange(S_TEXT, sse(ROLE, done=""), timed_out=True, elapsed=30.0, upstream=upstream)
    found = [f for f in evaluate(S_TEXT, ex, Options(profile=OPENAI_CLIENT)) if f.rule_id == "HTTP-002"]
    assert len(found) == 1 and found[0].message.endswith(said), found
    assert found[0].evidence["upstream_requests"] == len(upstream)


# The correct chat-completion answers; rule_proofs joins them to the broken ones of test_rules_<topic>.py.
FAMILY: Family = (ACCEPTABLE, (), lambda c: options_for(c, True))


def test_case_ids_unique() -> None:
    ids = [c.id for c in ACCEPTABLE]
    assert len(ids) == len(set(ids))





def test_garbage_never_raises() -> None:
    """Whatever the bytes, evaluate judges; no rule may crash on them."""
    samples = [b"", b"\x00\xff", b"data: {}\n\n", b"data: []\n\n", b"data: null\n\n", b'data: {"choices": 5}\n\n',
               b'data: {"choices": [null, 1, {"delta": 3}]}\n\n', b'data: {"choices": [{"delta": {"tool_calls": {"a": 1}}}]}\n\n',
               b'data: {"choices": [{"delta": {"tool_calls": [null, 1, {"index": "0", "function": 2}]}}]}\n\n',
               b"\r\r\r\n\n:", b"data", b"[1,2]", b'{"choices": [{"message": {"tool_calls": [1, {"function": []}]}}]}',
               b'data: {"choices": [{"delta": {"content": "<get_time><read_file><path>"}}]}\n\n',
               b'{"choices": [{"message": {"content": "<invoke name=\\"a\\"><parameter name=\\"b\\">"}}]}']
    for sc in (S_CALL, S_XML_CLIENT, S_XML_CLIENT_TIME, S_SINGLE, S_UPSTREAM):
        for raw in samples:
            for status in (200, 500):
                ex = exchange(sc, raw, status=status, upstream=(upstream_request(None),))
                for profile in PROFILES:
                    failures = evaluate(sc, ex, Options(profile=profile, strict=True))
                    assert all("could not be evaluated" not in f.message for f in failures), failures


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:])]


@settings(max_examples=60, deadline=None)
@given(
    text_cuts=st.lists(st.integers(0, 100), max_size=8),
    arg_cuts=st.lists(st.integers(0, 100), max_size=8),
    name_with_args=st.booleans(),
    role=st.sampled_from(["separate", "merged"]),  # a stream with no role breaks CHUNK-012 (spec)
    line_end=st.sampled_from(["\n", "\r\n", "\r"]),
    space=st.booleans(),
    comments=st.booleans(),
)
def test_acceptable_variations_never_fail(
    text_cuts: list[int],
    arg_cuts: list[int],
    name_with_args: bool,
    role: str,
    line_end: str,
    space: bool,
    comments: bool,
) -> None:
    """Any split of the text and the arguments, with any of the framing variations
    clients accept, passes every rule, strict ones included."""
    sc = scenario({"tool_calls": [PARIS], "content": "I'll check the weather.", "finish_reason": "tool_calls"})
    pieces = _split("I'll check the weather.", text_cuts)
    fragments = _split(PARIS_ARGS, arg_cuts)
    deltas: list[dict[str, Any]] = [{"content": p} for p in pieces if p]
    if role == "separate":
        deltas.insert(0, {"role": "assistant"})
    elif role == "merged":
        deltas[0] = {"role": "assistant", **deltas[0]}
    if name_with_args:
        deltas.append(start(args=fragments[0]))
        deltas.extend(args(f) for f in fragments[1:])
    else:
        deltas.append(start(args=None))
        deltas.extend(args(f) for f in fragments)
    text = sse(*(chunk(d) for d in deltas), chunk(finish="tool_calls"))
    if comments:
        text = ": keep-alive\n\n" + text.replace("\n\ndata:", "\n\n: ping\n\ndata:")
    if not space:
        text = text.replace("data: ", "data:")
    text = text.replace("\n", line_end)
    assert evaluate(sc, exchange(sc, text), Options(strict=True)) == []


XML_CASES = [
    ("cline", XML_READ, [("read_file", {"path": "src/main.py"})], "I will read it.", True),
    ("write-last-closing-tag", XML_WRITE, [("write_to_file", {"path": "a.html", "content": WRITTEN, "line_count": "3"})], "", True),
    ("invoke-single-quotes", "<invoke name='read_file'><parameter name='path'>x</parameter></invoke>", [("read_file", {"path": "x"})], "", True),
    ("undeclared-tag-is-prose", "use <list_files> to list", [], "use <list_files> to list", True),
    ("undeclared-param-ignored", "<read_file><mode>x</mode><path>p</path></read_file>", [("read_file", {"path": "p"})], "", True),
    ("unclosed", "text <read_file>\n<path>a", [("read_file", {"path": "a"})], "text", False),
    ("one-edge-newline-only", "<read_file><path>\n\n a \n\n</path></read_file>", [("read_file", {"path": "\n a \n"})], "", True),
    ("invoke-wrapped", f"a {INVOKE_READ} b", [("read_file", {"path": "src/main.py"})], "a b", True),
]


@pytest.mark.parametrize(("name", "text", "calls", "outside", "complete"), XML_CASES, ids=[c[0] for c in XML_CASES])
def test_xml_calls(name: str, text: str, calls: list[tuple[str, dict[str, str]]], outside: str, complete: bool) -> None:
    parsed = parse_xml_calls(text, tool_vocabulary({"tools": [READ_FILE, WRITE_FILE]}))
    assert [(c.name, dict(c.params)) for c in parsed.calls] == calls
    assert fold_ws(parsed.outside) == outside
    assert all(c.complete for c in parsed.calls) == complete
    assert [text[parsed.text_offset(i)] for i in range(len(parsed.outside))] == list(parsed.outside)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ({"x": 1, "y": [1, 2]}, {"y": [1.0, 2], "x": 1.0}, True),
        ({"x": True}, {"x": 1}, False),
        ({"x": 0}, {"x": False}, False),
        ({"x": None}, {"x": "null"}, False),
        ({"x": None}, {}, False),
        ([1, 2], [2, 1], False),
        ("a", "a", True),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal and json_equal(b, a) is equal


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=" \t\r\n\u00a0\u2028ab<", max_size=30))
def test_folded_text_is_its_folded_units(text: str) -> None:
    assert fold_ws(text) == "".join(unit for unit, _ in folded_units(text))


# expected, actual, exact: where they part in each (None: they are equal)
PARTINGS: list[tuple[str, str, bool, tuple[int, int] | None]] = [
    ("Hello world", "Hello world", False, None),
    ("Hello  world", " Hello world\n", False, None),
    ("Hello  world", "Hello", False, (5, 5)),  # the expected text goes on: missing from its character 5
    ("Hello", "Hello there", False, (5, 5)),
    ("a\n\nb", "a b", False, (1, 1)),  # a line break is not a space
    ("Hi <fu", "Hi", False, (2, 2)),
    ("ab", "ab ", True, (2, 2)),
    ("ab", "ab", True, None),
]


@pytest.mark.parametrize(("expected", "actual", "exact", "parting"), PARTINGS)
def test_where_two_texts_part(expected: str, actual: str, exact: bool, parting: tuple[int, int] | None) -> None:
    assert content_equal(expected, actual, exact=exact) is (parting is None)
    assert first_difference(expected, actual, exact=exact) == (None if parting is None else parting[1])
    if parting is not None:
        assert matched_prefix(expected, actual, exact=exact) == parting


# --------------------------------------------------------------------------- stream vs non-stream


@dataclass(frozen=True)
class PairCase:
    id: str
    scenario: Scenario
    streamed: str
    plain: str
    fails: bool
    profile: Profile = OPENAI_CLIENT


PAIRS = [
    PairCase("same-call", S_CALL, CALL_STREAM, completion(PARIS_MESSAGE), False),
    PairCase(
        "same-call-other-key-order",
        S_CALL,
        sse(ROLE, chunk(start(args='{"unit":"celsius",  "city":"Paris"}')), chunk(finish="tool_calls")),
        completion(PARIS_MESSAGE),
        False,
    ),
    PairCase("same-text-other-spacing", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": " Hello \t world "}, "stop"), False),
    PairCase("line-break-lost", S_TEXT, TEXT_STREAM.replace(" world", "\\n\\nworld"), completion({"role": "assistant", "content": "Hello world"}, "stop"), True),
    PairCase("text-differs", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": "Hello"}, "stop"), True),
    PairCase("call-missing-in-stream", S_CALL, sse(ROLE, chunk({"content": "<tools>…</tools>"}), chunk(finish="stop")), completion(PARIS_MESSAGE), True),
    PairCase("finish-differs", S_TEXT, TEXT_STREAM, completion({"role": "assistant", "content": "Hello world"}, "length"), True),
    PairCase(
        "argument-differs",
        S_CALL,
        CALL_STREAM,
        completion({**PARIS_MESSAGE, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}),
        True,
    ),
    PairCase("xml-client-same", S_XML_CLIENT, xml_client_stream(XML_READ), completion({"role": "assistant", "content": XML_READ}, "stop"), False, XML_CLIENT),
    PairCase(
        "xml-client-differs",
        S_XML_CLIENT,
        xml_client_stream(XML_READ),
        completion({"role": "assistant", "content": XML_READ.replace("main.py", "x.py")}, "stop"),
        True,
        XML_CLIENT,
    ),
]


@pytest.mark.parametrize("p", PAIRS, ids=[p.id for p in PAIRS])
def test_compare_answers(p: PairCase) -> None:
    plain_scenario = replace(p.scenario, client=replace(p.scenario.client, request={**p.scenario.client.request, "stream": False}))
    streamed = exchange(p.scenario, p.streamed, profile=p.profile)
    plain = exchange(plain_scenario, p.plain, profile=p.profile)
    failures = compare_answers(p.scenario, streamed, plain, Options(profile=p.profile))
    assert [f.rule_id for f in failures] == (["EQ-001"] if p.fails else [])


def test_compare_answers_skips_failed_runs_and_opted_out_scenarios() -> None:
    streamed = exchange(S_TEXT, TEXT_STREAM)
    broken = exchange(S_TEXT, "oops", status=500)
    assert compare_answers(S_TEXT, streamed, broken, Options()) == []
    different = exchange(S_TEXT, completion({"role": "assistant", "content": "Bye"}, "stop"))
    assert compare_answers(replace(S_TEXT, stream_equivalence=False), streamed, different, Options()) == []


# --------------------------------------------------------------------------- all the answers of an item

OTHER_ID = completion({**PARIS_MESSAGE, "tool_calls": [{**PARIS_MESSAGE["tool_calls"][0], "id": "call_2"}]})
S_NATIVE_ID = replace(S_CALL, backend=replace(S_CALL.backend, frames=(ToolCallFrame(0, "call_1", "function", "get_weather", PARIS_ARGS),)))
PLAIN = {"stream": False}
A_TWO_IDS = messages.TWO_STREAM  # toolu_01 and toolu_02
A_OTHER = messages.message([messages.TEXT_CONTENT, {**messages.PARIS_USE, "id": "toolu_99"}])
A_SAME = messages.message([messages.TEXT_CONTENT, messages.PARIS_USE])


def _raw_backend(sc: Scenario, *events: Mapping[str, Any]) -> Scenario:
    """``sc`` with a backend that sends ``events`` as raw frames."""
    frames = tuple(RawFrame(f"event: x\ndata: {json.dumps(e)}\n\n") for e in events)
    return replace(sc, backend=replace(sc.backend, frames=frames))


S_RAW_ID = _raw_backend(S_CALL, chunk(start(args=PARIS_ARGS)))
A_RAW_ID = _raw_backend(
    messages.S_TEXT_CALL,
    {"type": "content_block_start", "index": 1, "content_block": {**messages.PARIS_USE, "input": {}}},
)

# (id, scenario, [(request overrides, raw answer, status)], profile, whether TOOL-010 fails)
ITEMS: list[tuple[str, Scenario, list[tuple[dict[str, Any], str, int]], Profile, bool]] = [
    # a Chat Completions client is not judged: no chat client is known to break on a repeated id
    ("same-id-streamed-and-not", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)], OPENAI_CLIENT, False),
    ("other-ids", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, OTHER_ID, 200)], OPENAI_CLIENT, False),
    ("same-id-in-two-streams", S_CALL, [({}, CALL_STREAM, 200), ({}, CALL_STREAM, 200), (PLAIN, OTHER_ID, 200)],
     OPENAI_CLIENT, False),
    ("the-backends-own-id-passed-on", S_NATIVE_ID, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)],
     OPENAI_CLIENT, False),
    ("the-backends-own-id-in-a-raw-frame", S_RAW_ID, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 200)],
     OPENAI_CLIENT, False),
    ("an-error-answer-takes-no-part", S_CALL, [({}, CALL_STREAM, 200), (PLAIN, completion(PARIS_MESSAGE), 500)],
     OPENAI_CLIENT, False),
    ("anthropic-same-tool-use-id", messages.S_TEXT_CALL,
     [({}, A_TWO_IDS, 200), (PLAIN, A_SAME, 200)], ANTHROPIC_CLIENT, True),
    ("anthropic-backends-own-id-in-a-raw-frame", A_RAW_ID,
     [({}, A_TWO_IDS, 200), (PLAIN, A_SAME, 200)], ANTHROPIC_CLIENT, False),
    ("anthropic-other-tool-use-id", messages.S_TEXT_CALL,
     [({}, A_TWO_IDS, 200), (PLAIN, A_OTHER, 200)], ANTHROPIC_CLIENT, False),
]


@pytest.mark.parametrize(("sc", "answers", "profile", "fails"), [i[1:] for i in ITEMS], ids=[i[0] for i in ITEMS])
def test_compare_item(sc: Scenario, answers: list[tuple[dict[str, Any], str, int]], profile: Profile,
                      fails: bool) -> None:
    """Tool_use ids repeated across the answers of one item (a proxy numbering calls per
    request) break TOOL-010 for a Messages client; ids the backend sent do not count."""
    played = []
    for n, (overrides, raw, status) in enumerate(answers):
        asked = replace(sc, client=replace(sc.client, request={**sc.client.request, **overrides}))
        headers = SSE_HEADERS if asked.streams else JSON_HEADERS
        played.append((f"answer {n}", asked, exchange(asked, raw, status=status, headers=headers, profile=profile)))
    failures = compare_item(played, Options(profile=profile))
    assert [f.rule_id for f in failures] == (["TOOL-010"] if fails else [])
    if fails:
        assert "answer 0" in failures[0].message and "answer 1" in failures[0].message


# --------------------------------------------------------------------------- assembly and docs


def test_read_answer_stream_and_single() -> None:
    streamed = read_answer(exchange(S_TWO, TWO_CALL_STREAM))
    assert streamed.content == "Let me check."
    assert [(c.index, c.id, c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [
        (0, "call_a", "get_weather", {"city": "Paris"}),
        (1, "call_b", "get_time", {}),
    ]
    assert streamed.finish_reason == "tool_calls" and streamed.error is None
    single = read_answer(exchange(S_SINGLE, completion(PARIS_MESSAGE, usage={"total_tokens": 3})))
    assert single.content == "" and single.tool_calls[0].name == "get_weather" and single.usage == {"total_tokens": 3}
    error = read_answer(exchange(S_TEXT, '{"error": {"message": "m", "type": "t"}}', status=400))
    assert error.error == {"message": "m", "type": "t"}


def test_rules_table_is_complete_and_ids_are_well_formed() -> None:
    assert all(r.id == i and r.severity in ("client", "spec", "feature") and r.statement for i, r in RULES.items())
    table = rules_markdown()
    for rule_id in RULES:
        assert f"| {rule_id} |" in table


# --------------------------------------------------------------------------- relayed upstream output

@pytest.mark.parametrize(
    ("label", "sc", "raw", "rule"),
    [
        # Azure OpenAI's prompt-filter chunk, relayed unchanged: the official SDKs skip it.
        ("azure-prompt-filter-chunk", S_TEXT,
         sse({"id": "", "object": "", "created": 0, "model": "", "choices": [],
              "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}]},
             ROLE, chunk({"content": "Hello"}), chunk({"content": " world"}), chunk(finish="stop")), "CHUNK-002"),
        # A later delta repeating type "function" (some backends do): clients ignore it.
        ("type-function-repeated", S_CALL,
         sse(ROLE, chunk(start()), chunk({"tool_calls": [{"index": 0, "type": "function",
                                                          "function": {"arguments": PARIS_ARGS}}]}),
             chunk(finish="tool_calls")), "TOOL-003"),
    ],
)
def test_valid_upstream_output_relayed_unchanged_breaks_no_client_rule(label: str, sc: Scenario, raw: str,
                                                                         rule: str) -> None:
    c = case(label, sc, raw)
    assert rule not in {f.rule_id for f in evaluate(c.scenario, c.exchange, Options())}
