"""``StreamPipeline.feed_data`` parses only the delta of chunks whose envelope it has seen:
its output must be exactly that of feeding every chunk fully parsed."""

from __future__ import annotations

import itertools
import json

import pytest

from reference_proxy import pipeline as pipeline_module
from reference_proxy.pipeline import StreamPipeline
from reference_proxy.rescue import ToolSpec

ENVELOPE = '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":'
TAIL = ',"logprobs":null,"finish_reason":null}]}'


def chunk(delta: str, *, envelope: str = ENVELOPE, tail: str = TAIL) -> str:
    return envelope + delta + tail


STREAMS = {
    "text": [chunk('{"role":"assistant","content":""}'), *(chunk(json.dumps({"content": w})) for w in "ab c\n<d".split(" "))],
    "rescued call": [
        chunk('{"role":"assistant","content":""}'),
        chunk('{"content":"x <tools>{\\"name\\": \\"f\\", "}'),
        chunk('{"content":"\\"arguments\\": {\\"a\\": 1}}</tools> y"}'),
        ENVELOPE + '{},"logprobs":null,"finish_reason":"stop"}]}',
    ],
    "native call": [
        chunk('{"role":"assistant","content":null}'),
        chunk('{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}'),
        chunk('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"a\\":1}"}}]}'),
        ENVELOPE + '{},"logprobs":null,"finish_reason":"tool_calls"}]}',
    ],
    "not one value between": [
        chunk('{"content":"a"}'),
        chunk('{"content":"b"},"finish_reason":"length","x":{"content":"c"}'),
        chunk('{"content":"d"}'),
    ],
    "finish and usage in the same envelope": [
        chunk('{"content":"a"}'),
        chunk('{"content":"b"}', tail=',"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}'),
        chunk('{"content":"c"}'),
    ],
    "envelope changes": [
        chunk('{"content":"a"}'),
        chunk('{"content":"b"}', envelope=ENVELOPE.replace('"model":"m"', '"model":"n"')),
        chunk('{"content":"c"}', envelope=ENVELOPE.replace('"index":0', '"index":1')),
        chunk('{"content":"d"}'),
        chunk('"text"'),
        chunk("[1]"),
        chunk("{broken"),
        "[DONE]",
    ],
    "delta key elsewhere": [
        '{"x":{"delta":{"content":"no"}},"choices":[{"index":0,"delta":{"content":"a"}}]}',
        '{"x":{"delta":{"content":"b"}},"choices":[{"index":0,"delta":{"content":"a"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"a"},"delta":{"content":"z"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"q"},"delta":{"content":"z"}}]}',
    ],
    "two choices": [
        '{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}',
        '{"choices":[{"index":0,"delta":{"content":"c"}},{"index":1,"delta":{"content":"d"}}]}',
    ],
    "error": [chunk('{"content":"a"}'), '{"error":{"message":"boom"},"choices":[{"index":0,"delta":{"content":"a"}}]}'],
    "content strings that need a parse": [
        chunk('{"role":"assistant","content":""}'),
        chunk('{"content":""}'),
        chunk('{"content":"plain é 😀"}'),
        chunk('{"content":"say \\"hi\\""}'),
        chunk('{"content":"a\\\\b"}'),
        chunk('{"content":"line\\nnext"}'),
        chunk('{"content":"raw\tcontrol"}'),  # invalid JSON: skipped either way
        chunk('{"content":"zero\u200bwidth"}'),
        chunk('{"content":"a","x":"b"}'),
        chunk('{"content":"a"} ,"y":1'),
        chunk('{"content":"<to"}'),
        chunk('{"content":"ols>{}"}'),
        ENVELOPE + '{},"logprobs":null,"finish_reason":"stop"}]}',
        chunk('{"content":"after the finish"}'),
    ],
}


def run(data: list[str], *, parsed: bool, xml_client: bool) -> str:
    pipeline = StreamPipeline(
        tools=[ToolSpec("f", None)], xml_client=xml_client, include_usage=True, request_model="m", completion_id="c", created=1
    )
    out = []
    for item in data:
        if parsed:
            try:
                value = json.loads(item)
            except ValueError:
                value = None
            if item.strip() == "[DONE]":
                out.append(pipeline.close())
            elif isinstance(value, dict):
                out.append(pipeline.feed(value))
        else:
            out.append(pipeline.feed_data(item))
    out.append(pipeline.close())
    return "".join(out)


@pytest.mark.parametrize("xml_client", [False, True])
@pytest.mark.parametrize("name", sorted(STREAMS))
def test_feed_data_equals_feeding_parsed_chunks(name: str, xml_client: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    for parsed in (True, False):
        counter = itertools.count()
        monkeypatch.setattr(pipeline_module, "new_call_id", lambda: f"call_{next(counter)}")
        if parsed:
            expected = run(STREAMS[name], parsed=True, xml_client=xml_client)
        else:
            assert run(STREAMS[name], parsed=False, xml_client=xml_client) == expected
