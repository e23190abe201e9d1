"""The mock's Messages route as its tests read it: a scenario from plain data, and what its
answer must be, derived from the scenario's frames as the Messages streaming grammar lays
them out (consecutive text frames one text block, a tool_use frame a block of its own, raw
frames verbatim), never from the mock's code."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx

from harness.core.dialects.frames import ContentFrame, RawFrame, ToolUseFrame
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Backend, Scenario
from support.mock_server import RouteKit, answer_model, answers_stream, compact
from support.sdk_http import anthropic_sdk

TOOLS = [
    {"name": "get_weather", "input_schema": {"type": "object"}},
    {"name": "read_file", "input_schema": {"type": "object"}},
]
BLOCK_EVENTS = {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
                "message_stop"}


def make_scenario(
    sid: str, frames: list[Any], *, request: Mapping[str, Any] | None = None, **backend: Any
) -> Scenario:
    """A scenario from plain data, validated like any scenario file."""
    req = {
        "model": "claude-mock",
        "max_tokens": 256,
        "stream": True,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": TOOLS,
    }
    req.update(request or {})
    return parse_scenario({
        "id": sid,
        "title": sid,
        "source": "synthetic",
        "backend": {"dialect": "anthropic", "frames": frames, **backend},
        "client": {"profile": "anthropic", "request": req},
        "expect": {},
    })




# --------------------------------------------------------------------------- expectations from frames


@dataclass
class Item:
    """One thing the stream must carry: a named event, or a raw frame's bytes."""

    name: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)
    raw: bytes | None = None


def usage_of(backend: Backend) -> tuple[int, int]:
    """(input, output) tokens: the Messages names, else the OpenAI ones the schema documents."""
    usage = dict(backend.usage or {})
    return (usage.get("input_tokens", usage.get("prompt_tokens", 0)),
            usage.get("output_tokens", usage.get("completion_tokens", 0)))


def api_usage(backend: Backend, *, at_start: bool) -> dict[str, Any]:
    """Usage as the Messages API writes it (no prompt caching, standard tier). message_start
    counts the first output token: 1, unless the scenario says the answer has none."""
    given, (prompt, output) = dict(backend.usage or {}), usage_of(backend)
    if at_start:
        output = min(1, output) if {"output_tokens", "completion_tokens"} & given.keys() else 1
    return {"input_tokens": prompt, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "output_tokens": output, "service_tier": "standard"}


def with_ping(items: list[Item], starts: list[int]) -> tuple[list[Item], list[int]]:
    """The API sends its ping right after the first content_block_start (with no block at
    all, right after message_start, so it is part of the head)."""
    at = next((i + 1 for i, item in enumerate(items) if item.name == "content_block_start"), 0)
    return ([*items[:at], Item("ping", {"type": "ping"}), *items[at:]],
            [start + 1 if start >= at else start for start in starts])


def layout(backend: Backend) -> tuple[list[Item], list[int]]:
    """Every item after message_start (and ping), and where each frame's items begin:
    ``starts[k]`` is the index of the first item after k frames."""
    items: list[Item] = []
    starts: list[int] = []
    text_block: int | None = None
    blocks = 0

    def stop(index: int) -> None:
        items.append(Item("content_block_stop", {"type": "content_block_stop", "index": index}))

    for frame in backend.frames:
        starts.append(len(items))
        if isinstance(frame, RawFrame):
            items.append(Item(raw=frame.raw.encode("utf-8", "surrogatepass")))
        elif isinstance(frame, ContentFrame):
            if text_block is None:
                text_block, blocks = blocks, blocks + 1
                items.append(Item("content_block_start", {"type": "content_block_start", "index": text_block,
                                                          "content_block": {"type": "text", "text": ""}}))
            items.append(Item("content_block_delta", {"type": "content_block_delta", "index": text_block,
                                                      "delta": {"type": "text_delta", "text": frame.content}}))
        else:
            assert isinstance(frame, ToolUseFrame)
            if text_block is not None:
                stop(text_block)
                text_block = None
            index, blocks = blocks, blocks + 1
            block: dict[str, Any] = {"type": "tool_use", "id": frame.id, "name": frame.name, "input": {}}
            items.append(Item("content_block_start", {"type": "content_block_start", "index": index,
                                                      "content_block": block}))
            for fragment in frame.input_json:
                items.append(Item("content_block_delta", {"type": "content_block_delta", "index": index,
                                                          "delta": {"type": "input_json_delta",
                                                                    "partial_json": fragment}}))
            stop(index)
    starts.append(len(items))
    if text_block is not None:
        stop(text_block)
    items.append(Item("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": backend.finish_reason, "stop_sequence": None},
                                        "usage": {"output_tokens": usage_of(backend)[1]}}))
    items.append(Item("message_stop", {"type": "message_stop"}))
    return items, starts


def expected_content(backend: Backend) -> list[dict[str, Any]]:
    """The non-streaming blocks: the stream's blocks, each whole (tool ids None when generated)."""
    content: list[dict[str, Any]] = []
    text: list[str] | None = None
    for frame in backend.frames:
        if isinstance(frame, ContentFrame):
            if text is None:
                text = []
                content.append({"type": "text", "text": ""})
            text.append(frame.content)
            content[-1]["text"] = "".join(text)
        elif isinstance(frame, ToolUseFrame):
            text = None
            joined = "".join(frame.input_json)
            try:
                value = json.loads(joined) if joined.strip() else {}
            except ValueError:
                value = joined
            content.append({"type": "tool_use", "id": frame.id, "name": frame.name, "input": value})
    return content


@dataclass
class Walk:
    """What reading one streamed answer established."""

    message_id: str
    frame_ends: list[int]  # byte offset just after the first k frames' items
    tool_ids: list[str]


def check_stream(raw: bytes, scenario: Scenario, *, model: str, terminated: bool = True) -> Walk:
    """Walk the raw stream item by item against the layout of the scenario's frames."""
    backend = scenario.backend
    pos = 0

    def take() -> tuple[str, dict[str, Any]]:
        nonlocal pos
        end = raw.index(b"\n\n", pos) + 2
        head, data = raw[pos : end - 2].split(b"\n")
        assert head.startswith(b"event: ") and data.startswith(b"data: "), raw[pos:end]
        payload: dict[str, Any] = json.loads(data[6:])
        assert data == b"data: " + compact(payload), "one line of compact, unescaped JSON"
        assert head == b"event: " + payload["type"].encode(), "the event line names the payload's type"
        pos = end
        return payload["type"], payload

    name, start = take()
    assert name == "message_start"
    message = start["message"]
    assert list(message) == ["id", "type", "role", "content", "model", "stop_reason", "stop_sequence", "usage"]
    assert message["id"].startswith("msg_") and message["model"] == model
    assert (message["type"], message["role"], message["content"]) == ("message", "assistant", [])
    assert message["stop_reason"] is None and message["stop_sequence"] is None
    usage = api_usage(backend, at_start=True)
    assert message["usage"] == usage and list(message["usage"]) == list(usage)
    items, starts = layout(backend)
    if backend.ping:
        items, starts = with_ping(items, starts)
    if not terminated:
        items = items[:-1]
    offsets: list[int] = []
    ids: list[str] = []
    for item in items:
        offsets.append(pos)
        if item.raw is not None:
            assert raw[pos : pos + len(item.raw)] == item.raw, f"raw frame not verbatim at byte {pos}"
            pos += len(item.raw)
            continue
        want = copy.deepcopy(item.payload)
        got = take()
        block = want.get("content_block")
        if block is not None and block["type"] == "tool_use":
            ident = got[1]["content_block"]["id"]
            if block["id"] is None:  # the frame gave none: any toolu_ id will do
                assert isinstance(ident, str) and ident.startswith("toolu_") and len(ident) > 6
                block["id"] = ident
            ids.append(ident)
        assert got == (item.name, want)
    offsets.append(pos)
    assert pos == len(raw), f"unexpected bytes after the answer: {raw[pos:pos + 200]!r}"
    generated = [i for i in ids if i not in {f.id for f in backend.frames if isinstance(f, ToolUseFrame)}]
    assert len(set(generated)) == len(generated), "generated tool ids are unique"
    return Walk(message["id"], [offsets[s] for s in starts], ids)


def check_message(data: dict[str, Any], scenario: Scenario, *, model: str) -> None:
    backend = scenario.backend
    assert list(data) == ["id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"]
    assert data["id"].startswith("msg_") and data["model"] == model
    assert (data["type"], data["role"], data["stop_sequence"]) == ("message", "assistant", None)
    want = expected_content(backend)
    for got, block in zip(data["content"], want):
        if block["type"] == "tool_use" and block["id"] is None:
            assert isinstance(got["id"], str) and got["id"].startswith("toolu_")
            block["id"] = got["id"]
    assert data["content"] == want
    assert data["stop_reason"] == backend.finish_reason
    assert data["usage"] == api_usage(backend, at_start=False)






def check_answer(response: httpx.Response, scenario: Scenario, body: Mapping[str, Any]) -> None:
    assert response.status_code == 200, response.text
    assert re.fullmatch(r"req_\w{16,}", response.headers["request-id"]), "every Messages answer has a request-id"
    model = answer_model(scenario, body)
    if answers_stream(scenario, body):
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        check_stream(response.content, scenario, model=model)
    else:
        assert response.headers["content-type"] == "application/json"
        check_message(response.json(), scenario, model=model)


def assert_anthropic_error(response: httpx.Response, status: int, kind: str, *needles: str) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    data = response.json()
    assert list(data) == ["type", "error"] and data["type"] == "error"
    error = data["error"]
    assert set(error) == {"type", "message"} and error["type"] == kind, error
    message: str = error["message"]
    for needle in needles:
        assert needle in message, (needle, message)
    return message


# --------------------------------------------------------------------------- fixtures


def post(http: httpx.Client, url: str, body: Any, nonce: str | None, *, path: str = "/v1/messages",
         headers: Mapping[str, str] | None = None) -> httpx.Response:
    sent = {"content-type": "application/json", "anthropic-version": "2023-06-01", **(headers or {})}
    if nonce is not None:
        sent[NONCE_HEADER] = nonce
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post(url + path, content=content, headers=sent)


def sdk(url: str, nonce: str, prefix: str = "") -> anthropic.Anthropic:
    return anthropic_sdk(base_url=url + prefix, api_key="x", default_headers={NONCE_HEADER: nonce},
                               max_retries=0)


def sdk_reads(url: str, nonce: str, prefix: str, request: Mapping[str, Any]) -> tuple[str, list[str]]:
    client = sdk(url, nonce, prefix)
    message = client.messages.create(**request)
    assert [b.type for b in message.content] == ["text"]
    return "".join(getattr(b, "text", "") for b in message.content), [m.id for m in client.models.list()]


MESSAGES = RouteKit(
    "anthropic", make_scenario, post, check_answer, sdk_reads, "/v1/messages",
    paths=("/v1/messages", "/messages", "/anthropic/v1/messages", "/v1/messages/", "/some/deep/prefix/v1/messages"),
    query="beta=true", sdk_prefixes=("", "/anthropic", "/some/prefix"), answer_id=b'{"id":"msg_',
    fault_frames=("one ", "two ✓", {"tool_use": {"id": "toolu_f1", "name": "get_weather",
                                                "input_json": ['{"city":', ' "Paris"}']}}, "three"),
)

