"""The reference proxy's Messages path without sockets: the stream pipeline, whole
answers, form conversion, tool_choice emulation, request validation and errors.

Pipeline cases are data: upstream Messages events in, and what a client folds out of
the proxy's events (text, tool_use blocks, stop_reason, error). Every output is first
checked against the Messages stream grammar, so each case also tests the framing.
Most cases use the scripted rescuer of ``support.scripted_rescuer`` (what the pipeline does
with rescue events); a few run the real parser on frames cut inside markup.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest

from reference_proxy.anthropic_errors import error_type_for, render_error, status_for, stream_error
from reference_proxy.anthropic_message import MessageAccumulator, finish_message, message_as_events
from reference_proxy.anthropic_stream import AnthropicStreamPipeline, final_stop_reason
from reference_proxy.errors import ProxyError, internal_error, invalid_request, upstream_status_error, upstream_timeout
from reference_proxy.pipeline import default_rescuer
from reference_proxy.request_shaping import anthropic_tools, forward_headers, parse_messages_request
from reference_proxy.rescue import Event, Text, ToolSpec
from reference_proxy.tool_choice import DIRECTIVE_ANY, ONE_CALL, directive, emulate_tool_choice
from support.messages_stream import TOOL_USE_ID, check_and_fold, parse_events
from support.scripted_rescuer import LEAK, LEAK_EVENTS, TOOLS, factory

READ_TOOLS = (ToolSpec("Read", {"type": "object", "properties": {"file_path": {"type": "string"}}}),)


# --------------------------------------------------------------------------- upstream events


def start(model: str = "up-model", **usage: int) -> dict[str, Any]:
    message = {"id": "msg_up", "type": "message", "role": "assistant", "content": [], "model": model,
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1, **usage}}
    return {"type": "message_start", "message": message}


def text_block(index: int, *texts: str) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}} for t in texts),
        {"type": "content_block_stop", "index": index},
    ]


def tool_block(index: int, name: str, *fragments: str, ident: str = "toolu_01UpstreamNative") -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index,
         "content_block": {"type": "tool_use", "id": ident, "name": name, "input": {}}},
        *({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": f}}
          for f in fragments),
        {"type": "content_block_stop", "index": index},
    ]


def end(reason: str = "end_turn", output_tokens: int = 12) -> list[dict[str, Any]]:
    return [
        {"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
         "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]


WEATHER = ("get_weather", {"city": "Paris"})
PING = {"type": "ping"}
THINKING = [
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Paris first."}},
    {"type": "content_block_stop", "index": 0},
]
INVOKE = '<function_calls>\n<invoke name="Read">\n<parameter name="file_path">a.py</parameter>\n</invoke>\n</function_calls>'


@dataclass(frozen=True)
class StreamCase:
    id: str
    events: Sequence[Mapping[str, Any] | str]  # a str is raw ``data`` (fed through feed_data)
    text: str
    calls: Sequence[tuple[str, Any]] = ()
    stop_reason: str | None = "end_turn"
    script: Mapping[str, Sequence[Event]] | None = None
    at_finish: Sequence[Event] = ()
    tools: Sequence[ToolSpec] = TOOLS
    real_rescuer: bool = False
    end: Literal["none", "close", "fail"] = "none"
    error_type: str | None = None
    blocks: Sequence[str] | None = None  # the block types, in order, when the case is about them
    duplicates: int = 0
    skipped: int = 0


STREAM_CASES = [
    StreamCase("text-only", [start(), *text_block(0, "Hello", " world"), *end()], "Hello world", blocks=["text"]),
    StreamCase(
        "rescued-call-after-text",
        [start(), *text_block(0, "Let me look. ", LEAK), *end()],
        "Let me look.",
        [WEATHER],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
        blocks=["text", "tool_use"],
    ),
    StreamCase(
        "text-after-call-opens-a-new-block-without-leading-space",
        [start(), *text_block(0, "Before.", LEAK, "\n\nAfter."), *end()],
        "Before.After.",
        [WEATHER],
        "tool_use",
        script={LEAK: [Text("\n"), *LEAK_EVENTS, Text("\n")]},
        blocks=["text", "tool_use", "text"],
    ),
    StreamCase(
        "white-space-alone-opens-no-block",
        [start(), *text_block(0, "\n\n", LEAK, "\n \n"), *end()],
        "",
        [WEATHER],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
        blocks=["tool_use"],
    ),
    StreamCase(
        "trailing-space-of-a-text-answer-kept",
        [start(), *text_block(0, "a ", "b\n"), *end()],
        "a b\n",
    ),
    StreamCase(
        "native-reindexed-after-rescued",
        [start(), *text_block(0, "x", LEAK), *tool_block(1, "read_file", "", '{"path":', ' "a.txt"}'), *end("tool_use")],
        "x",
        [WEATHER, ("read_file", {"path": "a.txt"})],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
        blocks=["text", "tool_use", "tool_use"],
    ),
    StreamCase(
        "native-duplicate-of-rescued-dropped",
        [start(), *text_block(0, LEAK), *tool_block(1, "get_weather", '{"city": "Paris"}'), *end("tool_use")],
        "",
        [WEATHER],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
        duplicates=1,
    ),
    StreamCase(
        "rescued-duplicate-of-native-dropped",
        [start(), *tool_block(0, "get_weather", '{"city":"Paris"}'), *text_block(1, LEAK), *end("tool_use")],
        "",
        [WEATHER],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
        duplicates=1,
    ),
    StreamCase(
        "two-equal-calls-from-one-source-both-kept",
        [start(), *text_block(0, LEAK, LEAK), *end()],
        "",
        [WEATHER, WEATHER],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
    ),
    StreamCase(
        "native-without-input-gets-empty-object",
        [start(), *tool_block(0, "read_file"), *end("tool_use")],
        "",
        [("read_file", {})],
        "tool_use",
    ),
    StreamCase("nameless-native-dropped", [start(), *tool_block(0, "", '{"a":1}'), *end("tool_use")], "", [], "end_turn"),
    StreamCase("max-tokens-stays", [start(), *text_block(0, "cut"), *end("max_tokens")], "cut", stop_reason="max_tokens"),
    StreamCase(
        "thinking-block-passed-and-reindexed",
        [start(), *THINKING, *text_block(1, "Answer."), *end()],
        "Answer.",
        blocks=["thinking", "text"],
    ),
    StreamCase("ping-passed-on", [start(), PING, *text_block(0, "hi"), PING, *end()], "hi"),
    StreamCase(
        "unknown-event-ignored",
        [start(), *text_block(0, "a"), {"type": "message_annotation", "kind": "x"}, *end()],
        "a",
    ),
    StreamCase(
        "malformed-event-skipped",
        [start(), '{"type":"content_block_start","index":0', *text_block(0, "a", "b"), *end()],
        "ab",
        skipped=1,
    ),
    StreamCase("no-message-stop", [start(), *text_block(0, "a"), end()[0]], "a", end="close"),
    StreamCase("body-ends-without-message-delta", [start(), *text_block(0, "a")], "a", end="close"),
    StreamCase(
        "body-ends-inside-a-native-call-completes-it",
        [start(), *tool_block(1, "read_file", '{"path": "x"}')[:2]],
        "",
        [("read_file", {"path": "x"})],
        "tool_use",
        end="close",
    ),
    StreamCase("no-message-start-is-supplied", [*text_block(0, "a"), *end()], "a"),
    StreamCase(
        "failure-flushes-held-text-then-error",
        [start(), *text_block(0, "see ", "<tool")[:3]],
        "see <tool",
        stop_reason=None,
        script={"<tool": []},
        at_finish=[Text("<tool")],
        end="fail",
        error_type="timeout_error",
    ),
    StreamCase(
        "failure-drops-incomplete-native",
        [start(), *text_block(0, "x"), *tool_block(1, "read_file", '{"pa')[:2]],
        "x",
        stop_reason=None,
        end="fail",
        error_type="timeout_error",
    ),
    StreamCase("failure-after-message-delta-ends-normally", [start(), *text_block(0, "done"), end()[0]], "done", end="fail"),
    StreamCase(
        "upstream-error-event-keeps-its-type",
        [start(), *text_block(0, "a")[:2], {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}],
        "a",
        stop_reason=None,
        error_type="overloaded_error",
    ),
    StreamCase(
        "without-tools-no-rescue",
        [start(), *text_block(0, LEAK), *end()],
        LEAK,
        script={LEAK: LEAK_EVENTS},
        tools=(),
    ),
    StreamCase(
        "real-parser-invoke-split-inside-tags",
        [start(), *text_block(0, "Reading.\n\n<functi", "on_calls>\n<inv", 'oke name="Re', 'ad">\n<parameter name="file_p',
                                 'ath">a.py</parameter>\n</invoke>\n</function_ca', "lls>"), *end()],
        "Reading.",
        [("Read", {"file_path": "a.py"})],
        "tool_use",
        tools=READ_TOOLS,
        real_rescuer=True,
    ),
    StreamCase(
        "real-parser-count-wrapper",
        [start(), *text_block(0, "Ok.\n\ncou", 'nt\n<invoke name="Read">\n<parameter name="file_path">a.py</parameter>\n',
                                 "</invoke>\n</function_calls>"), *end()],
        "Ok.",
        [("Read", {"file_path": "a.py"})],
        "tool_use",
        tools=READ_TOOLS,
        real_rescuer=True,
    ),
    StreamCase(
        "real-parser-undeclared-tool-stays-text",
        [start(), *text_block(0, INVOKE.replace("Read", "Write")), *end()],
        INVOKE.replace("Read", "Write"),
        tools=READ_TOOLS,
        real_rescuer=True,
    ),
    StreamCase(
        "real-parser-unfinished-marker-flushed-at-the-end",
        [start(), *text_block(0, "Go.\n\n", INVOKE[:60]), *end()],
        "Go.\n\n" + INVOKE[:60],
        tools=READ_TOOLS,
        real_rescuer=True,
    ),
]


def run_pipeline(case: StreamCase) -> tuple[AnthropicStreamPipeline, str]:
    pipeline = AnthropicStreamPipeline(
        tools=case.tools,
        request_model="asked-model",
        rescuer_factory=default_rescuer if case.real_rescuer else factory(case.script, case.at_finish),
    )
    out = [pipeline.feed_data(e) if isinstance(e, str) else pipeline.feed(e) for e in case.events]
    if case.end == "close":
        out.append(pipeline.close())
    elif case.end == "fail":
        out.append(pipeline.fail({"message": "upstream read timed out", "type": "upstream_error", "code": "upstream_timeout"}))
    return pipeline, "".join(out)


@pytest.mark.parametrize("case", STREAM_CASES, ids=[c.id for c in STREAM_CASES])
def test_stream_pipeline(case: StreamCase) -> None:
    pipeline, text = run_pipeline(case)
    assert pipeline.closed
    assert pipeline.close() == "" and pipeline.feed(end()[0]) == "" and pipeline.fail({"message": "x"}) == ""
    folded = check_and_fold(text)
    assert folded.text == case.text
    assert folded.calls == list(case.calls)
    assert folded.stop_reason == case.stop_reason
    assert (folded.error["type"] if folded.error else None) == case.error_type
    assert folded.stopped == (case.error_type is None)
    if case.blocks is not None:
        assert [b["type"] for b in folded.blocks] == list(case.blocks)
    assert pipeline.stats.duplicates == case.duplicates
    assert pipeline.stats.skipped_events == case.skipped
    assert folded.message["model"] in ("up-model", "asked-model")


@pytest.mark.parametrize(
    ("case_id", "upstream_id_kept"),
    [("native-duplicate-of-rescued-dropped", False), ("rescued-duplicate-of-native-dropped", True)],
)
def test_the_first_copy_of_a_call_keeps_its_id(case_id: str, upstream_id_kept: bool) -> None:
    """A leaked call sent before its native twin keeps the proxy's id; the twin, and the
    upstream's id with it, is dropped. A native call sent first keeps the upstream's."""
    (case,) = [c for c in STREAM_CASES if c.id == case_id]
    _, text = run_pipeline(case)
    (block,) = [b for b in check_and_fold(text).blocks if b["type"] == "tool_use"]
    assert (block["id"] == "toolu_01UpstreamNative") is upstream_id_kept
    assert re.fullmatch(r"toolu_\w+", block["id"])


def test_text_leaves_with_the_event_that_carried_it() -> None:
    pipeline = AnthropicStreamPipeline(tools=TOOLS, request_model="m", rescuer_factory=factory())
    first = parse_events(pipeline.feed(start()) + pipeline.feed(text_block(0, "Hello")[0]) + pipeline.feed(text_block(0, "Hello")[1]))
    assert [name for name, _ in first] == ["message_start", "content_block_start", "content_block_delta"]
    assert parse_events(pipeline.feed(text_block(0, " world")[1]))[0][1]["delta"] == {"type": "text_delta", "text": " world"}


def test_message_start_passes_the_upstream_message_on() -> None:
    pipeline = AnthropicStreamPipeline(tools=(), request_model="m")
    ((_, payload),) = parse_events(pipeline.feed(start(cache_read_input_tokens=4)))
    assert payload["message"]["id"] == "msg_up" and payload["message"]["model"] == "up-model"
    assert payload["message"]["usage"] == {"input_tokens": 9, "output_tokens": 1, "cache_read_input_tokens": 4}
    assert pipeline.model == "up-model"


def test_native_input_fragments_pass_as_they_came() -> None:
    pipeline = AnthropicStreamPipeline(tools=TOOLS, request_model="m", rescuer_factory=factory())
    text = "".join(pipeline.feed(e) for e in [start(), *tool_block(0, "read_file", "", '{"path":', ' "a"}'), *end()])
    fragments = [p["delta"]["partial_json"] for _, p in parse_events(text) if p["type"] == "content_block_delta"]
    assert fragments == ['{"path":', ' "a"}']
    assert [p["content_block"]["id"] for _, p in parse_events(text) if p["type"] == "content_block_start"] == ["toolu_01UpstreamNative"]


def test_overflow_is_recorded() -> None:
    pipeline = AnthropicStreamPipeline(tools=TOOLS, request_model="m", rescuer_factory=factory(overflow=True))
    pipeline.feed(start())
    pipeline.feed(text_block(0, "x")[0])
    pipeline.feed(text_block(0, "x")[1])
    assert pipeline.stats.overflowed


@pytest.mark.parametrize(
    ("upstream", "calls", "expected"),
    [("end_turn", 0, "end_turn"), ("tool_use", 0, "end_turn"), (None, 0, "end_turn"), ("max_tokens", 0, "max_tokens"),
     ("end_turn", 1, "tool_use"), ("max_tokens", 2, "tool_use"), ("stop_sequence", 0, "stop_sequence")],
)
def test_final_stop_reason(upstream: str | None, calls: int, expected: str) -> None:
    assert final_stop_reason(upstream, calls) == expected


# --------------------------------------------------------------------------- whole answers


def message(*content: Mapping[str, Any], stop_reason: str = "end_turn") -> dict[str, Any]:
    return {"id": "msg_up", "type": "message", "role": "assistant", "model": "up-model", "content": list(content),
            "stop_reason": stop_reason, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 4}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(name: str, value: Any, ident: str = "toolu_native01") -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": value}


@dataclass(frozen=True)
class WholeCase:
    id: str
    body: dict[str, Any]
    blocks: Sequence[Mapping[str, Any]]  # the expected content, tool_use ids left out
    stop_reason: str
    script: Mapping[str, Sequence[Event]] | None = None
    tools: Sequence[ToolSpec] = TOOLS


WHOLE_CASES = [
    WholeCase("text-unchanged", message(text("  Hello  ")), [text("  Hello  ")], "end_turn"),
    WholeCase(
        "rescued-between-trimmed-texts",
        message(text("Before. LEAK After.")),
        [text("Before."), {"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}, text("After.")],
        "tool_use",
        script={"Before. LEAK After.": [Text("Before. "), *LEAK_EVENTS, Text(" After.")]},
    ),
    WholeCase(
        "native-duplicate-dropped",
        message(text(LEAK), tool_use("get_weather", {"city": "Paris"}), stop_reason="tool_use"),
        [{"type": "tool_use", "name": "get_weather", "input": {"city": "Paris"}}],
        "tool_use",
        script={LEAK: LEAK_EVENTS},
    ),
    WholeCase(
        "native-kept-with-its-id",
        message(text("Reading."), tool_use("read_file", {"path": "a"}), stop_reason="tool_use"),
        [text("Reading."), tool_use("read_file", {"path": "a"})],
        "tool_use",
    ),
    WholeCase("nameless-native-dropped", message(tool_use("", {}), stop_reason="tool_use"), [], "end_turn"),
    WholeCase("other-blocks-kept", message({"type": "thinking", "thinking": "t", "signature": "s"}, text("a")),
              [{"type": "thinking", "thinking": "t", "signature": "s"}, text("a")], "end_turn"),
    WholeCase("no-tools-no-rescue", message(text(LEAK)), [text(LEAK)], "end_turn", script={LEAK: LEAK_EVENTS}, tools=()),
    WholeCase("max-tokens-stays", message(text("cut"), stop_reason="max_tokens"), [text("cut")], "max_tokens"),
]


@pytest.mark.parametrize("case", WHOLE_CASES, ids=[c.id for c in WHOLE_CASES])
def test_finish_message(case: WholeCase) -> None:
    body = json.loads(json.dumps(case.body))
    stats = finish_message(body, tools=case.tools, rescuer_factory=factory(case.script))
    got = []
    for block in body["content"]:
        if block["type"] == "tool_use" and block["id"] != "toolu_native01":  # rescued: a fresh id
            assert TOOL_USE_ID.match(block["id"]) and isinstance(block["input"], dict)
            block = {k: v for k, v in block.items() if k != "id"}
        got.append(block)
    assert got == list(case.blocks)
    assert body["stop_reason"] == stats.finish_reason == case.stop_reason
    assert body["usage"] == case.body["usage"] and body["id"] == "msg_up"


def test_finish_message_with_the_real_parser_types_values() -> None:
    tools = (ToolSpec("job", {"type": "object", "properties": {"label": {"type": "string"}}}),)
    leak = ('<invoke name="job">\n<parameter name="label">42</parameter>\n<parameter name="retries">3</parameter>\n'
            "</invoke>")
    body = message(text(leak))
    finish_message(body, tools=tools)
    assert [(b["type"], b.get("input")) for b in body["content"]] == [("tool_use", {"label": "42", "retries": 3})]


def test_the_text_after_a_rescued_call_is_one_block_whatever_the_parser_held() -> None:
    """The parser holds a final backtick (a fence may open) and hands it over at the end, in a
    piece of its own: it joins the text before it, not a block of its own with the space lost
    between them (found by generation, ``scenarios/phi/generated-5f03345225.yaml``)."""
    leak = 'Before.\n<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>\nAfter, e.g. `code`'
    body = message(text(leak))
    finish_message(body, tools=TOOLS)
    assert [(b["type"], b.get("text")) for b in body["content"]] == [
        ("text", "Before."), ("tool_use", None), ("text", "After, e.g. `code`")]


@pytest.mark.parametrize(
    "body",
    [
        message(text("Hi."), tool_use("read_file", {"path": "a"}), stop_reason="tool_use"),
        message(text("Only text, ünïcode ✓")),
        message({"type": "thinking", "thinking": "hm", "signature": "sig"}, tool_use("get_weather", {})),
        message(),
    ],
    ids=["text-and-tool", "text", "thinking-and-empty-input", "empty"],
)
def test_message_round_trip_through_events(body: dict[str, Any]) -> None:
    accumulator = MessageAccumulator("asked")
    for event in message_as_events(body):
        accumulator.feed_event(event["type"], json.dumps(event))
    assert accumulator.done
    assert accumulator.result() == body


def test_whole_upstream_answer_rewrapped_for_a_streaming_client() -> None:
    body = message(text("Reading. " + LEAK), stop_reason="end_turn")
    pipeline = AnthropicStreamPipeline(tools=TOOLS, request_model="m", rescuer_factory=factory({"Reading. " + LEAK: [Text("Reading. "), *LEAK_EVENTS]}))
    folded = check_and_fold("".join(pipeline.feed(e) for e in message_as_events(body)))
    assert (folded.text, folded.calls, folded.stop_reason) == ("Reading.", [WEATHER], "tool_use")
    assert folded.usage == {"input_tokens": 3, "output_tokens": 4}


def test_accumulator_skips_broken_events_and_raises_on_errors() -> None:
    accumulator = MessageAccumulator("asked")
    accumulator.feed_event("content_block_delta", "{broken")
    accumulator.feed_event("message_start", json.dumps(start()))
    with pytest.raises(ProxyError) as raised:
        accumulator.feed_event("error", json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}))
    assert raised.value.status == 529
    assert render_error(raised.value) == {"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}


# --------------------------------------------------------------------------- tool_choice

LAST_TURN_LIST = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                  {"role": "user", "content": [{"type": "text", "text": "c"}]}]
DECLARED = [{"name": "Read", "input_schema": {"type": "object"}}, {"name": "Grep", "input_schema": {"type": "object"}}]
TOOL_DIRECTIVE = directive("tool", "Read")


@pytest.mark.parametrize(
    ("case_id", "body", "expected"),
    [
        ("absent", {"messages": LAST_TURN_LIST, "tools": DECLARED}, None),
        ("auto", {"messages": LAST_TURN_LIST, "tools": DECLARED, "tool_choice": {"type": "auto"}}, None),
        ("unknown-kind-passed-on", {"messages": [], "tool_choice": {"type": "later"}}, None),
        ("none-drops-tools", {"messages": LAST_TURN_LIST, "tools": DECLARED, "tool_choice": {"type": "none"}},
         {"messages": LAST_TURN_LIST}),
        ("any-directive-as-a-text-block",
         {"messages": LAST_TURN_LIST, "tools": DECLARED, "tool_choice": {"type": "any"}},
         {"tools": DECLARED, "messages": [*LAST_TURN_LIST[:2], {"role": "user", "content": [
             {"type": "text", "text": "c"}, {"type": "text", "text": DIRECTIVE_ANY}]}]}),
        ("tool-directive-appended-to-a-string",
         {"messages": [{"role": "user", "content": "c"}], "tools": DECLARED, "tool_choice": {"type": "tool", "name": "Read"}},
         {"tools": DECLARED, "messages": [{"role": "user", "content": "c\n\n" + TOOL_DIRECTIVE}]}),
        ("directive-goes-to-the-last-user-turn",
         {"messages": [{"role": "user", "content": "c"}, {"role": "assistant", "content": "prefill"}],
          "tools": DECLARED, "tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
         {"tools": DECLARED, "messages": [{"role": "user", "content": "c\n\n" + DIRECTIVE_ANY + ONE_CALL},
                                          {"role": "assistant", "content": "prefill"}]}),
        ("no-user-turn", {"messages": [], "tools": DECLARED, "tool_choice": {"type": "any"}}, {"messages": [], "tools": DECLARED}),
    ],
)
def test_tool_choice(case_id: str, body: dict[str, Any], expected: dict[str, Any] | None) -> None:
    before = json.dumps(body)
    assert emulate_tool_choice(body) == expected
    assert json.dumps(body) == before, "the client's body is not changed in place"


def test_tool_directive_names_the_tool() -> None:
    assert "`Read`" in TOOL_DIRECTIVE and "Read" not in DIRECTIVE_ANY


@pytest.mark.parametrize(
    "choice", [{"type": "tool"}, {"type": "tool", "name": ""}, {"type": "tool", "name": "Write"}], ids=["no-name", "empty", "undeclared"]
)
def test_tool_choice_naming_no_declared_tool_is_refused(choice: dict[str, Any]) -> None:
    with pytest.raises(ProxyError) as raised:
        emulate_tool_choice({"messages": LAST_TURN_LIST, "tools": DECLARED, "tool_choice": choice})
    assert raised.value.status == 400


# --------------------------------------------------------------------------- requests, headers, errors


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"model": "m", "messages": [', "invalid_json"),
        (b"[]", "invalid_body"),
        (b'{"model": "m"}', "missing_required_parameter"),
        (b'{"messages": {}}', "invalid_type"),
        (b'{"messages": [], "stream": "yes"}', "invalid_type"),
        (b'{"messages": ["hi"]}', "invalid_type"),
        (b'{"messages": [{"content": "hi"}]}', "invalid_value"),
        (b'{"messages": [{"role": "narrator", "content": "hi"}]}', "invalid_value"),
        (b'{"messages": [{"role": "system", "content": 3}]}', "invalid_value"),
        (b'{"messages": [{"role": "system", "content": [{"type": "image", "source": {}}]}]}', "invalid_value"),
    ],
)
def test_bad_messages_requests(raw: bytes, code: str) -> None:
    with pytest.raises(ProxyError) as raised:
        parse_messages_request(raw)
    assert raised.value.status == 400 and raised.value.body["error"]["code"] == code
    assert render_error(raised.value)["error"]["type"] == "invalid_request_error"


def test_parse_messages_request() -> None:
    raw = json.dumps({"model": "claude", "stream": True, "messages": [{"role": "user", "content": "hi"}],
                      "tools": [*DECLARED, {"type": "web_search_20250305", "name": "web_search"}, {"name": ""}, "x"]})
    req = parse_messages_request(raw.encode())
    assert (req.model, req.stream) == ("claude", True)
    assert [t.name for t in req.tools] == ["Read", "Grep"] and req.tools[0].parameters == {"type": "object"}
    assert anthropic_tools({}) == ()


@pytest.mark.parametrize(
    ("client", "api_key", "expected"),
    [
        ({"x-api-key": "sk-client", "anthropic-version": "2023-06-01", "anthropic-beta": "b1", "Connection": "close"},
         None, {"x-api-key": "sk-client", "anthropic-version": "2023-06-01", "anthropic-beta": "b1"}),
        ({"x-api-key": "sk-client", "Authorization": "Bearer c", "anthropic-version": "2023-06-01"},
         "sk-proxy", {"x-api-key": "sk-proxy", "anthropic-version": "2023-06-01"}),
        ({"Authorization": "Bearer c"}, None, {"authorization": "Bearer c"}),
        ({"Authorization": "Bearer c", "Expect": "100-continue"}, "sk-proxy", {"x-api-key": "sk-proxy"}),
    ],
    ids=["passed-through", "configured-key-replaces-credentials", "authorization-passed-through",
         "configured-key-replaces-a-bearer-token"],
)
def test_forward_headers_for_a_messages_upstream(client: dict[str, str], api_key: str | None, expected: dict[str, str]) -> None:
    out = forward_headers(client.items(), api_key, key_header="x-api-key")
    assert out == {**expected, "content-type": "application/json", "accept-encoding": "identity"}


@pytest.mark.parametrize(
    ("error", "status", "body"),
    [
        (invalid_request("bad"), 400, {"type": "invalid_request_error", "message": "bad"}),
        (upstream_timeout("slow"), 504, {"type": "timeout_error", "message": "upstream timed out: slow"}),
        (internal_error(), 500, {"type": "api_error", "message": "internal proxy error"}),
        (upstream_status_error(529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},'
                                    b'"request_id":"r1"}', None), 529, {"type": "overloaded_error", "message": "Overloaded"}),
        (upstream_status_error(429, b'{"error": {"message": "slow down", "type": "rate_limit"}}', "3"), 429,
         {"type": "rate_limit_error", "message": "slow down"}),
        (upstream_status_error(502, b"<html>Bad Gateway</html>", None), 502,
         {"type": "api_error", "message": "<html>Bad Gateway</html>"}),
        (upstream_status_error(503, b'{"detail": "loading"}', None), 503, {"type": "api_error", "message": "loading"}),
        (upstream_status_error(403, b"", None), 403, {"type": "permission_error", "message": "upstream answered HTTP 403"}),
    ],
    ids=["client", "timeout", "internal", "anthropic-body-verbatim", "openai-body", "html", "detail", "empty"],
)
def test_errors_in_the_messages_shape(error: ProxyError, status: int, body: dict[str, Any]) -> None:
    rendered = render_error(error)
    assert error.status == status
    assert rendered["type"] == "error" and rendered["error"] == body
    if error.upstream is not None and isinstance(error.upstream, dict) and "request_id" in error.upstream:
        assert rendered["request_id"] == "r1"


def test_retry_after_is_kept() -> None:
    assert upstream_status_error(429, b"{}", "7").headers == {"retry-after": "7"}


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "overloaded_error", "message": "Busy"}, ("overloaded_error", "Busy")),
        ({"type": "upstream_error", "message": "gone", "code": "upstream_disconnected"}, ("api_error", "gone")),
        ({"type": "upstream_error", "message": "slow", "code": "upstream_timeout"}, ("timeout_error", "slow")),
        ({}, ("api_error", "upstream error")),
    ],
)
def test_stream_error_payload(error: dict[str, Any], expected: tuple[str, str]) -> None:
    payload = stream_error(error)
    assert payload["type"] == "error" and (payload["error"]["type"], payload["error"]["message"]) == expected


@pytest.mark.parametrize(("status", "kind"), [(400, "invalid_request_error"), (418, "invalid_request_error"),
                                              (503, "api_error"), (529, "overloaded_error"), (404, "not_found_error")])
def test_error_type_for_status(status: int, kind: str) -> None:
    assert error_type_for(status) == kind
    assert status_for({"type": kind}) == {"invalid_request_error": 400, "api_error": 500}.get(kind, status)


@pytest.mark.parametrize(
    ("events", "answered"),
    [([start(), PING], False), ([start(), *text_block(0, "hi")[:2]], True), ([start(), *THINKING[:1]], True),
     ([start(), *tool_block(0, "read_file", "{}")], True), ([start(), *text_block(0, "  ")[:2]], False)],
    ids=["nothing-yet", "text", "thinking", "native-call", "white-space-held"],
)
def test_answered_once_a_block_is_written(events: list[dict[str, Any]], answered: bool) -> None:
    """The relay sends the answer's first block at once, even from the middle of a burst."""
    pipeline = AnthropicStreamPipeline(tools=TOOLS, request_model="m", rescuer_factory=factory())
    for event in events:
        pipeline.feed(event)
    assert pipeline.answered is answered
