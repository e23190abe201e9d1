"""The reference proxy's pure core, without sockets: pipeline, non-streaming answers,
dedup, XML serialization, request shaping, SSE decoding, errors and cleaning.

The pipeline cases use a scripted rescuer (hand-built event lists), so they test
what the proxy does with events, independently of how the parser finds calls.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_proxy.cleaning import clean_completion
from reference_proxy.completion import StreamAccumulator, completion_as_chunks, finish_completion
from reference_proxy.dedup import CallLedger, call_key
from reference_proxy.errors import as_openai_error, upstream_status_error
from reference_proxy.pipeline import StreamPipeline, final_finish_reason
from reference_proxy.request_shaping import (
    count_tool_messages,
    forward_headers,
    parse_chat_request,
    system_to_user,
)
from reference_proxy.rescue import Event, Text, ToolSpec
from reference_proxy.errors import ProxyError
from reference_proxy.connection import events
from reference_proxy import xml_client
from reference_proxy.xml_client import call_to_xml, is_xml_client
from support.chat_stream import CALL_ID, check_and_fold, parse_sse
from support.scripted_rescuer import LEAK, LEAK_EVENTS, TOOLS, ScriptedRescuer, call_events, factory


def content_chunk(text: str, model: str = "up-model") -> dict[str, Any]:
    return {"id": "u", "model": model, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


def native_chunk(index: int, *, id: str | None = None, name: str | None = None, arguments: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index}
    if id:
        call["id"], call["type"] = id, "function"
    function = {k: v for k, v in (("name", name), ("arguments", arguments)) if v is not None}
    if function:
        call["function"] = function
    return {"id": "u", "model": "up-model", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def finish_chunk(reason: str) -> dict[str, Any]:
    return {"id": "u", "model": "up-model", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12, "prompt_tokens_details": {"cached_tokens": 0}}
USAGE_CHUNK = {"id": "u", "model": "up-model", "choices": [], "usage": USAGE}


@dataclass(frozen=True)
class StreamCase:
    id: str
    chunks: Sequence[Any]  # upstream chunks; a str is a raw SSE data payload
    expect_content: str = ""
    expect_calls: Sequence[tuple[str, Any]] = ()
    expect_finish: str | None = "stop"
    script: Mapping[str, Sequence[Event]] = field(default_factory=dict)
    at_finish: Sequence[Event] = ()
    xml_client: bool = False
    include_usage: bool = False
    expect_usage: Any = None
    end: str = "close"  # close | fail | none (the chunks end the stream themselves)
    expect_error: bool = False


STREAM_CASES = [
    StreamCase("text", [content_chunk("Hel"), content_chunk("lo"), finish_chunk("stop"), "[DONE]"], "Hello", end="none"),
    StreamCase(
        "rescued-call-after-text",
        [content_chunk("Let me look. "), content_chunk(LEAK), finish_chunk("stop")],
        "Let me look. ",
        [("get_weather", {"city": "Paris"})],
        "tool_calls",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "native-reindexed-after-rescued",
        [
            content_chunk(LEAK),
            native_chunk(0, id="chatcmpl-tool-1", name="read_file", arguments=""),
            native_chunk(0, arguments='{"path":'),
            native_chunk(0, arguments=' "a.txt"}'),
            native_chunk(1, id="chatcmpl-tool-2", name="read_file"),
            finish_chunk("tool_calls"),
        ],
        "",
        [("get_weather", {"city": "Paris"}), ("read_file", {"path": "a.txt"}), ("read_file", {})],
        "tool_calls",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "dedup-rescued-then-native",
        [
            content_chunk("Checking.\n"),
            content_chunk(LEAK),
            native_chunk(0, id="x", name="get_weather", arguments='{ "city" :"Paris" }'),
            finish_chunk("tool_calls"),
        ],
        "Checking.\n",
        [("get_weather", {"city": "Paris"})],
        "tool_calls",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "dedup-native-then-rescued",
        [
            native_chunk(0, id="x", name="get_weather", arguments='{"city":"Paris"}'),
            native_chunk(1, id="y", name="read_file", arguments='{"path":"b"}'),
            content_chunk(LEAK),
            finish_chunk("tool_calls"),
        ],
        "",
        [("get_weather", {"city": "Paris"}), ("read_file", {"path": "b"})],
        "tool_calls",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "different-arguments-are-two-calls",
        [content_chunk(LEAK), native_chunk(0, id="x", name="get_weather", arguments='{"city":"Lyon"}'), finish_chunk("stop")],
        "",
        [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Lyon"})],
        "tool_calls",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "held-text-released-at-finish",
        [content_chunk("a "), content_chunk("<to"), finish_chunk("length")],
        "a <to",
        expect_finish="length",
        script={"<to": []},
        at_finish=[Text("<to")],
    ),
    StreamCase(
        "call-completed-at-finish",
        [content_chunk('{"name":"get_weather"'), finish_chunk("stop")],
        "",
        [("get_weather", {})],
        "tool_calls",
        script={'{"name":"get_weather"': []},
        at_finish=call_events(0, "get_weather"),
    ),
    StreamCase(
        "usage-passed-on-without-vendor-details",
        [content_chunk("hi"), finish_chunk("stop"), USAGE_CHUNK, "[DONE]"],
        "hi",
        include_usage=True,
        expect_usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        end="none",
    ),
    StreamCase("usage-not-asked-not-sent", [content_chunk("hi"), finish_chunk("stop"), USAGE_CHUNK, "[DONE]"], "hi", end="none"),
    StreamCase(
        "usage-asked-upstream-silent-zeros",
        [content_chunk("hi"), finish_chunk("stop")],
        "hi",
        include_usage=True,
        expect_usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    ),
    StreamCase("no-finish-from-upstream", [content_chunk("hi")], "hi", expect_finish="stop"),
    StreamCase(
        "malformed-event-skipped",
        [content_chunk("a"), '{"choices": [', "42", content_chunk("b"), finish_chunk("stop")],
        "ab",
    ),
    StreamCase(
        "failure-flushes-held-text-then-error",
        [content_chunk("see "), content_chunk("<tool")],
        "see <tool",
        expect_finish=None,
        script={"<tool": []},
        at_finish=[Text("<tool")],
        end="fail",
        expect_error=True,
    ),
    StreamCase(
        "failure-drops-incomplete-native",
        [content_chunk("x"), native_chunk(0, id="a", name="read_file", arguments='{"pa')],
        "x",
        expect_finish=None,
        end="fail",
        expect_error=True,
    ),
    StreamCase(
        "failure-after-finish-ends-normally",
        [content_chunk("done"), finish_chunk("stop")],
        "done",
        end="fail",
    ),
    StreamCase(
        "upstream-error-event",
        [content_chunk("a"), {"error": {"message": "boom", "type": "server_error", "param": None, "code": 500}}],
        "a",
        expect_finish=None,
        end="none",
        expect_error=True,
    ),
    StreamCase(
        "nameless-native-dropped",
        [native_chunk(0, arguments='{"a":1}'), finish_chunk("tool_calls")],
        "",
        expect_finish="stop",
    ),
    StreamCase(
        "xml-client-rescued-and-native-as-xml",
        [
            content_chunk("Reading."),
            content_chunk(LEAK),
            native_chunk(0, id="n", name="read_file", arguments='{"path": "a<b>&c.txt", "limit": 3}'),
            finish_chunk("tool_calls"),
        ],
        "Reading.\n<get_weather>\n<city>Paris</city>\n</get_weather>"
        "\n<read_file>\n<path>a<b>&c.txt</path>\n<limit>3</limit>\n</read_file>",
        expect_finish="stop",
        script={LEAK: LEAK_EVENTS},
        xml_client=True,
    ),
    StreamCase(
        "xml-client-length-stays-length",
        [content_chunk("abc"), finish_chunk("length")],
        "abc",
        expect_finish="length",
        xml_client=True,
    ),
]


@pytest.mark.parametrize("case", STREAM_CASES, ids=[c.id for c in STREAM_CASES])
def test_stream_pipeline(case: StreamCase) -> None:
    pipeline = StreamPipeline(
        tools=TOOLS,
        xml_client=case.xml_client,
        include_usage=case.include_usage,
        request_model="asked-model",
        rescuer_factory=factory(case.script, case.at_finish),
    )
    out: list[str] = []
    for chunk in case.chunks:
        out.append(pipeline.feed_data(chunk) if isinstance(chunk, str) else pipeline.feed(chunk))
    if case.end == "close":
        out.append(pipeline.close())
    elif case.end == "fail":
        out.append(pipeline.fail({"message": "upstream read timed out", "type": "upstream_error", "code": "t"}))
    assert pipeline.closed
    assert pipeline.close() == "" and pipeline.feed(content_chunk("late")) == ""
    payloads = parse_sse("".join(out))
    folded = check_and_fold(payloads)
    assert folded.done
    assert folded.content == case.expect_content
    assert folded.calls == list(case.expect_calls)
    assert folded.finish == case.expect_finish
    assert folded.usage == case.expect_usage
    assert (folded.error is not None) == case.expect_error
    if case.xml_client:
        assert "tool_calls" not in "".join(out)
    models = {p["model"] for p in payloads if isinstance(p, dict) and "model" in p}
    assert models <= {"up-model"}


def test_text_leaves_with_the_frame_that_carried_it() -> None:
    """Released text goes out in answer to the very chunk that brought it (no waiting)."""
    pipeline = StreamPipeline(tools=TOOLS, xml_client=False, include_usage=False, request_model="m", rescuer_factory=factory())
    first = parse_sse(pipeline.feed(content_chunk("Hello")))
    assert [p["choices"][0]["delta"] for p in first] == [{"role": "assistant"}, {"content": "Hello"}]
    assert parse_sse(pipeline.feed(content_chunk(" world")))[0]["choices"][0]["delta"] == {"content": " world"}


def test_without_tools_no_rescuer_runs() -> None:
    made: list[int] = []

    def counting(tools: Sequence[ToolSpec], cap: int) -> Any:
        made.append(cap)
        return ScriptedRescuer({}, (), False)

    pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=False, request_model="m", rescuer_factory=counting)
    text = pipeline.feed(content_chunk(LEAK)) + pipeline.close()
    assert made == [] and check_and_fold(parse_sse(text)).content == LEAK


def test_overflow_is_recorded() -> None:
    pipeline = StreamPipeline(
        tools=TOOLS, xml_client=False, include_usage=False, request_model="m", rescuer_factory=factory(overflow=True)
    )
    pipeline.feed(content_chunk("x"))
    assert pipeline.stats.overflowed


def test_two_choices_keep_separate_state() -> None:
    pipeline = StreamPipeline(
        tools=TOOLS, xml_client=False, include_usage=False, request_model="m", rescuer_factory=factory({LEAK: LEAK_EVENTS})
    )
    chunk = {
        "model": "m",
        "choices": [
            {"index": 0, "delta": {"content": "zero"}, "finish_reason": None},
            {"index": 1, "delta": {"content": LEAK}, "finish_reason": None},
        ],
    }
    payloads = parse_sse(pipeline.feed(chunk) + pipeline.close())
    finishes = {c["index"]: c["finish_reason"] for p in payloads if isinstance(p, dict) for c in p["choices"] if c["finish_reason"]}
    assert finishes == {0: "stop", 1: "tool_calls"}
    starts = [
        (c["index"], tc["index"]) for p in payloads if isinstance(p, dict) for c in p["choices"]
        for tc in c["delta"].get("tool_calls", ()) if "id" in tc
    ]
    assert starts == [(1, 0)]


# --------------------------------------------------------------------------- non-streaming


def completion(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "u",
        "object": "chat.completion",
        "created": 1,
        "model": "up",
        "system_fingerprint": "fp",
        "prompt_token_ids": [1, 2],
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish, "stop_reason": None}],
        "usage": dict(USAGE),
    }


@dataclass(frozen=True)
class WholeCase:
    id: str
    message: dict[str, Any]
    expect_content: str | None
    expect_calls: Sequence[tuple[str, Any]] = ()
    expect_finish: str = "stop"
    finish: str = "stop"
    xml_client: bool = False
    script: Mapping[str, Sequence[Event]] = field(default_factory=dict)


WHOLE = "Let me check.\n" + LEAK + "\n"
WHOLE_EVENTS = [Text("Let me check.\n"), *LEAK_EVENTS, Text("\n")]
WHOLE_CASES = [
    WholeCase("text", {"content": "  plain answer \n"}, "  plain answer \n"),
    WholeCase("empty-is-null", {"content": " \n"}, None),
    WholeCase(
        "rescued", {"content": WHOLE}, "Let me check.", [("get_weather", {"city": "Paris"})], "tool_calls",
        script={WHOLE: WHOLE_EVENTS},
    ),
    WholeCase(
        "rescued-plus-native-dedup",
        {
            "content": WHOLE,
            "tool_calls": [
                {"id": "n1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "n2", "type": "function", "function": {"name": "read_file", "arguments": ""}},
            ],
        },
        "Let me check.",
        [("get_weather", {"city": "Paris"}), ("read_file", {})],
        "tool_calls",
        script={WHOLE: WHOLE_EVENTS},
    ),
    WholeCase("markup-removed-without-call", {"content": "ok <x/>"}, "ok", script={"ok <x/>": [Text("ok ")]}),
    WholeCase("length-stays", {"content": "abc"}, "abc", finish="length", expect_finish="length"),
    WholeCase(
        "xml-client",
        {"content": WHOLE, "tool_calls": [{"id": "n", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"x"}'}}]},
        "Let me check.\n<get_weather>\n<city>Paris</city>\n</get_weather>\n<read_file>\n<path>x</path>\n</read_file>",
        expect_finish="stop",
        finish="tool_calls",
        xml_client=True,
        script={WHOLE: WHOLE_EVENTS},
    ),
]


@pytest.mark.parametrize("case", WHOLE_CASES, ids=[c.id for c in WHOLE_CASES])
def test_finish_completion(case: WholeCase) -> None:
    body = completion(case.message, case.finish)
    stats = finish_completion(body, tools=TOOLS, xml_client=case.xml_client, rescuer_factory=factory(case.script))
    choice = body["choices"][0]
    message = choice["message"]
    assert message["content"] == case.expect_content
    assert choice["finish_reason"] == case.expect_finish == stats.finish_reason
    calls = message.get("tool_calls", [])
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] == list(case.expect_calls)
    assert all(CALL_ID.match(c["id"]) and c["type"] == "function" for c in calls)
    assert len({c["id"] for c in calls}) == len(calls)
    if case.xml_client:
        assert "tool_calls" not in message
    assert "system_fingerprint" not in body and "prompt_token_ids" not in body and "stop_reason" not in choice
    assert "prompt_tokens_details" not in body["usage"]


def test_stream_accumulator_and_rewrap_round_trip() -> None:
    accumulator = StreamAccumulator("asked")
    for chunk in [
        content_chunk("Hi "),
        content_chunk("there"),
        native_chunk(0, id="a", name="read_file", arguments='{"path":'),
        native_chunk(0, arguments='"x"}'),
        finish_chunk("tool_calls"),
        USAGE_CHUNK,
    ]:
        accumulator.feed(chunk)
    body = accumulator.result()
    message = body["choices"][0]["message"]
    assert body["model"] == "up-model" and message["content"] == "Hi there"
    assert message["tool_calls"][0]["function"] == {"name": "read_file", "arguments": '{"path":"x"}'}
    assert body["usage"] == USAGE
    pipeline = StreamPipeline(tools=(), xml_client=False, include_usage=True, request_model="m")
    text = "".join(pipeline.feed(c) for c in completion_as_chunks(body)) + pipeline.close()
    folded = check_and_fold(parse_sse(text))
    assert (folded.content, folded.calls, folded.finish) == ("Hi there", [("read_file", {"path": "x"})], "tool_calls")


def test_stream_accumulator_events() -> None:
    accumulator = StreamAccumulator("asked")
    for event, data in [
        ("", json.dumps(content_chunk("a"))),
        ("", '{"broken'),
        ("", json.dumps(content_chunk("b"))),
        ("", "[DONE]"),
        ("", json.dumps(content_chunk("after"))),
    ]:
        accumulator.feed_event(event, data)
    assert accumulator.done and accumulator.result()["choices"][0]["message"]["content"] == "ab"
    with pytest.raises(ProxyError) as info:
        StreamAccumulator("m").feed_event("error", '{"message": "gone", "type": "server_error"}')
    assert info.value.status == 502 and info.value.message == "gone"


def test_stream_accumulator_raises_on_error_event() -> None:
    accumulator = StreamAccumulator("m")
    with pytest.raises(ProxyError) as info:
        accumulator.feed({"error": {"message": "overloaded", "type": "server_error", "code": 503}})
    assert info.value.status == 502 and info.value.message == "overloaded"


# --------------------------------------------------------------------------- small pure parts

DEDUP_CASES = [
    ('{"a": 1, "b": "x"}', '{"b":"x","a":1}', True),
    ('{"a": 1}', '{"a": 1.0}', True),
    ('{"a": 1}', '{"a": true}', False),
    ('{"a": null}', '{"a": false}', False),
    ('{"a": [1, 2]}', '{"a": [2, 1]}', False),
    ('{"a": {"b": [true]}}', '{ "a" : { "b" : [ true ] } }', True),
    ("", "{}", True),
    ("not json", "not json ", True),
    ('{"a": "1"}', '{"a": 1}', False),
]


@pytest.mark.parametrize(("a", "b", "same"), DEDUP_CASES)
def test_call_key(a: str, b: str, same: bool) -> None:
    assert (call_key("f", a) == call_key("f", b)) is same
    assert call_key("f", a) != call_key("g", a)


def test_ledger_cancels_one_copy_each() -> None:
    ledger = CallLedger()
    assert ledger.admit_rescued("f", '{"a":1}') and ledger.admit_rescued("f", '{"a":1}')
    assert not ledger.admit_native("f", '{"a": 1}')
    assert not ledger.admit_native("f", '{"a": 1}')
    assert ledger.admit_native("f", '{"a": 1}')  # a third copy is a real third call
    assert not ledger.admit_rescued("f", '{"a":1}')


XML_CASES = [
    ("read_file", '{"path": "src/a.ts"}', "<read_file>\n<path>src/a.ts</path>\n</read_file>"),
    ("list_files", "{}", "<list_files>\n</list_files>"),
    (
        "execute_command",
        '{"command": "a < b && c > d", "timeout": 30, "dry": false, "opts": {"x": [1, "é"]}}',
        '<execute_command>\n<command>a < b && c > d</command>\n<timeout>30</timeout>\n<dry>false</dry>\n'
        '<opts>{"x":[1,"é"]}</opts>\n</execute_command>',
    ),
    ("write_to_file", '{"content": "x</content>y", "path": "p"}', "<write_to_file>\n<content>x</content>y</content>\n<path>p</path>\n</write_to_file>"),
    ("broken", "{not json", "{not json"),  # no call the model made: kept as text
]


@pytest.mark.parametrize(("name", "arguments", "xml"), XML_CASES)
def test_call_to_xml(name: str, arguments: str, xml: str) -> None:
    assert call_to_xml(name, arguments) == xml


DEFAULT_XML_CLIENT = ("cline", "kilo", "roo")


@pytest.mark.parametrize(
    ("agent", "patterns", "expected"),
    [
        ("Cline/3.38.0 toolcall-conformance", DEFAULT_XML_CLIENT, True),
        ("Kilo-Code/4.1", DEFAULT_XML_CLIENT, True),
        ("KiloCode/4.1", DEFAULT_XML_CLIENT, True),
        ("RooCode/3", DEFAULT_XML_CLIENT, True),
        ("Roo-Code/3.1", DEFAULT_XML_CLIENT, True),
        ("roo-cline/3.3.0", DEFAULT_XML_CLIENT, True),
        ("Mozilla/5.0 (X11) Code/1.90 CLINE/3", DEFAULT_XML_CLIENT, True),
        ("Cline3", DEFAULT_XML_CLIENT, True),
        ("Groovy/1.0", DEFAULT_XML_CLIENT, False),
        ("Kilometer/2", DEFAULT_XML_CLIENT, False),
        ("kilocode/4.1", DEFAULT_XML_CLIENT, False),
        ("Incline-Agent/1", DEFAULT_XML_CLIENT, False),
        ("Broom/1 Kangaroo/2", DEFAULT_XML_CLIENT, False),
        ("OpenAI/Python 1.99", DEFAULT_XML_CLIENT, False),
        ("kilocode/4.1", ("kilocode",), True),
        ("RooCode/3", ("roocode",), True),
        ("Roo-Code/3.1", ("roo-code",), True),
        ("RooCode/3", ("rooc",), False),
        ("Cline/3.38.0", ("---",), False),
        ("Cline/3.38.0", (), False),
        (None, ("cline",), False),
        ("", ("cline",), False),
    ],
)
def test_xml_client_detection(agent: str | None, patterns: tuple[str, ...], expected: bool) -> None:
    assert is_xml_client(agent, patterns) is expected


def test_xml_client_patterns_are_split_into_words_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A configuration's patterns are split once, not on every request; the User-Agent each time."""
    split: list[str] = []
    real = xml_client.words
    monkeypatch.setattr(xml_client, "words", lambda text: split.append(text) or real(text))
    xml_client._targets.cache_clear()
    patterns = ("Cline", "split-once-test")
    agents = ["Split-Once-Test/1", "Cline/3", "curl/8"]
    assert [is_xml_client(agent, patterns) for agent in agents] == [True, True, False]
    assert sorted(split) == sorted([*patterns, *agents])


REQUEST_ERRORS = [
    (b"{bad json", "invalid_json", None),
    (b"[1, 2]", "invalid_body", None),
    (b'{"model": "m"}', "missing_required_parameter", "messages"),
    (b'{"messages": {"role": "user"}}', "invalid_type", "messages"),
    (b'{"messages": [], "stream": "yes"}', "invalid_type", "stream"),
]


@pytest.mark.parametrize(("raw", "code", "param"), REQUEST_ERRORS)
def test_bad_requests(raw: bytes, code: str, param: str | None) -> None:
    with pytest.raises(ProxyError) as info:
        parse_chat_request(raw)
    error = info.value.body["error"]
    assert info.value.status == 400
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, param)
    assert error["message"]


def test_parse_chat_request() -> None:
    raw = json.dumps(
        {
            "model": "m",
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "r"}, {"role": "tool"}],
            "tools": [{"type": "function", "function": {"name": "f"}}, {"bad": 1}],
        }
    ).encode()
    chat = parse_chat_request(raw)
    assert (chat.stream, chat.include_usage, chat.model) == (True, True, "m")
    assert [t.name for t in chat.tools] == ["f"]
    assert count_tool_messages(chat.body) == 2
    assert not parse_chat_request(b'{"messages": [], "stream_options": {"include_usage": true}}').include_usage


CLIENT_HEADERS = [
    ("Host", "proxy:8000"),
    ("Content-Length", "12"),
    ("Connection", "keep-alive, X-Hop"),
    ("X-Hop", "1"),
    ("Transfer-Encoding", "chunked"),
    ("Expect", "100-continue"),
    ("Authorization", "Bearer client"),
    ("X-Api-Key", "sk-client"),
    ("User-Agent", "Cline/3"),
    ("X-Conformance-Nonce", "tcc-1"),
    ("Accept-Encoding", "gzip"),
    ("Proxy-Authorization", "secret"),
]
END_TO_END = {"user-agent": "Cline/3", "x-conformance-nonce": "tcc-1", "accept-encoding": "identity"}
CLIENT_CREDENTIALS = {"authorization": "Bearer client", "x-api-key": "sk-client"}
JSON_BODY = {"content-type": "application/json"}


@pytest.mark.parametrize(
    ("api_key", "options", "expected"),
    [
        (None, {}, {**END_TO_END, **CLIENT_CREDENTIALS, **JSON_BODY}),
        ("k", {}, {**END_TO_END, "authorization": "Bearer k", **JSON_BODY}),
        ("k", {"key_header": "x-api-key"}, {**END_TO_END, "x-api-key": "k", **JSON_BODY}),
        (None, {"with_body": False}, {**END_TO_END, **CLIENT_CREDENTIALS}),
        ("k", {"with_body": False}, {**END_TO_END, "authorization": "Bearer k"}),
    ],
    ids=["passed-through", "key-replaces-both-credentials", "messages-key-replaces-both", "get", "get-with-key"],
)
def test_forward_headers(api_key: str | None, options: dict[str, Any], expected: dict[str, str]) -> None:
    """Hop-by-hop headers (``Expect`` included: this server has read the body already)
    never go upstream, and a configured key leaves none of the client's credentials."""
    assert forward_headers(CLIENT_HEADERS, api_key, **options) == expected


SYSTEM_CASES = [
    (
        "one-system",
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        [{"role": "user", "content": "<system_context>\nBe brief.\n</system_context>\n\nHi"}],
    ),
    (
        "several-and-parts",
        [
            {"role": "system", "content": "A"},
            {"role": "user", "content": [{"type": "text", "text": "Q"}]},
            {"role": "system", "content": [{"type": "text", "text": "B"}]},
            {"role": "assistant", "content": "x"},
        ],
        [
            {"role": "user", "content": [{"type": "text", "text": "<system_context>\nA\n\nB\n</system_context>\n\n"}, {"type": "text", "text": "Q"}]},
            {"role": "assistant", "content": "x"},
        ],
    ),
    ("no-system", [{"role": "user", "content": "Hi"}], None),
    ("no-user", [{"role": "system", "content": "S"}], None),
]


@pytest.mark.parametrize(("case_id", "messages", "expected"), SYSTEM_CASES, ids=[c[0] for c in SYSTEM_CASES])
def test_system_to_user(case_id: str, messages: list[Any], expected: list[Any] | None) -> None:
    out = system_to_user({"model": "m", "messages": messages})
    if expected is None:
        assert out is None
    else:
        assert out == {"model": "m", "messages": expected}


EVENTS_TEXT = (
    b": keep-alive\n\ndata: {\"a\": \"\xc3\xa9\"}\n\n"
    b"data:{\"b\":1}\r\n\r\n"
    b"event: error\ndata: {\"error\": {\"message\": \"x\"}}\n\n"
    b"id: 7\nretry: 10\ndata: line1\ndata: line2\r\r"
    b"data: [DONE]\n\n"
)
EXPECTED_EVENTS = [  # an event without a name is a "message", as the SSE standard has it
    ("message", '{"a": "é"}'),
    ("message", '{"b":1}'),
    ("error", '{"error": {"message": "x"}}'),
    ("message", "line1\nline2"),
    ("message", "[DONE]"),
]


class Pieces(httpx.AsyncByteStream):
    def __init__(self, pieces: Sequence[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


def read_events(pieces: Sequence[bytes]) -> list[tuple[str, str]]:
    """The events the proxy reads from an upstream SSE body delivered in ``pieces``."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Pieces(pieces))

    async def collect() -> list[tuple[str, str]]:
        return [(event.event, event.data) async for batch in events(response) for event in batch]

    return asyncio.run(collect())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(EVENTS_TEXT)), max_size=12))
def test_upstream_events_whatever_the_network_split(cuts: list[int]) -> None:
    """Whatever the network boundaries (inside CRLF, inside a UTF-8 character), the same events."""
    points = sorted(set(cuts))
    assert read_events([EVENTS_TEXT[a:b] for a, b in zip([0, *points], [*points, len(EVENTS_TEXT)])]) == EXPECTED_EVENTS


def test_upstream_events_leave_out_events_without_data_and_keep_an_unfinished_last_one() -> None:
    """A backend that closes right after its last data line has still said it."""
    assert read_events([b"event: ping\n\ndata:\n\ndata: a\n\ndata: b\r"]) == [("message", "a"), ("message", "b")]


def test_upstream_events_of_one_read_come_together() -> None:
    """The relay writes what one network read brought in one write: the reader keeps it together."""
    response = httpx.Response(200, headers={"content-type": "text/event-stream"},
                              stream=Pieces([b"data: a\n\ndata: b\n\ndata: c", b"\n\n", b"data: d\n\ndata: e"]))

    async def collect() -> list[list[str]]:
        return [[event.data for event in batch] async for batch in events(response)]

    assert asyncio.run(collect()) == [["a", "b"], ["c"], ["d"], ["e"]]


def test_upstream_events_of_a_compressed_body_are_decoded() -> None:
    """Uncompressed bodies skip httpx's decoding layers; one a server compressed anyway does not."""
    packed = gzip.compress(EVENTS_TEXT)
    response = httpx.Response(200, headers={"content-type": "text/event-stream", "content-encoding": "gzip"},
                              stream=Pieces([packed[:7], packed[7:]]))

    async def collect() -> list[tuple[str, str]]:
        return [(event.event, event.data) async for batch in events(response) for event in batch]

    assert asyncio.run(collect()) == EXPECTED_EVENTS


def test_upstream_events_of_a_long_line_delivered_byte_by_byte() -> None:
    line = b"data: " + "é".encode() * 20_000 + b"\n\n"
    assert read_events([line[i : i + 1] for i in range(len(line))]) == [("message", "é" * 20_000)]


ERROR_SHAPES = [
    ({"error": {"message": "m", "type": "t", "param": "p", "code": "c"}}, ("m", "t", "p", "c")),
    ({"object": "error", "message": "too long", "type": "BadRequestError", "param": None, "code": 400}, ("too long", "BadRequestError", None, 400)),
    ({"detail": "Not Found"}, ("Not Found", "upstream_error", None, 404)),
    ({"error": "quota"}, ("quota", "upstream_error", None, 404)),
    ("<html>bad gateway</html>", ("<html>bad gateway</html>", "upstream_error", None, 404)),
    (None, ("upstream answered HTTP 404", "upstream_error", None, 404)),
]


@pytest.mark.parametrize(("payload", "expected"), ERROR_SHAPES)
def test_upstream_errors_in_openai_shape(payload: Any, expected: tuple[Any, ...]) -> None:
    body = as_openai_error(payload, fallback_message="upstream answered HTTP 404", fallback_code=404)
    error = body["error"]
    assert (error["message"], error["type"], error["param"], error["code"]) == expected


def test_upstream_status_error_keeps_retry_after() -> None:
    error = upstream_status_error(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}', "3")
    assert error.status == 429 and error.headers == {"retry-after": "3"}
    assert error.body["error"]["message"] == "slow down"


def test_clean_completion() -> None:
    body = completion({"content": "x", "reasoning_content": "r", "refusal": None, "tool_calls": [], "function_call": None})
    body["kv_transfer_params"] = None
    body["choices"][0]["token_ids"] = [1]
    clean_completion(body)
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "x"}
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"}
    assert set(body["choices"][0]) == {"index", "message", "finish_reason"}


@pytest.mark.parametrize(
    ("upstream", "calls", "xml_client", "expected"),
    [
        ("stop", 1, False, "tool_calls"),
        ("length", 1, False, "tool_calls"),
        ("length", 0, False, "length"),
        ("tool_calls", 0, False, "stop"),
        (None, 0, False, "stop"),
        ("tool_calls", 2, True, "stop"),
        ("content_filter", 0, True, "content_filter"),
    ],
)
def test_final_finish_reason(upstream: str | None, calls: int, xml_client: bool, expected: str) -> None:
    assert final_finish_reason(upstream, calls, xml_client=xml_client) == expected
