"""The mock's Chat Completions route as its tests read it: a scenario from plain data, and
what its answer must be, derived from the scenario's frames (never from the mock's code):
what a frame says is what must arrive, as one SSE event, in order."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx
import openai

from harness.core.dialects.frames import ContentFrame, Frame, RawFrame, ToolCallFrame
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Backend, Scenario
from support.mock_server import RouteKit, answer_model, answers_stream, compact
from support.sdk_http import openai_sdk

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
]


def make_scenario(
    sid: str, frames: list[Any], *, request: Mapping[str, Any] | None = None, **backend: Any
) -> Scenario:
    """A scenario from plain data, validated like any scenario file."""
    req = {
        "model": "qwen2.5-7b-instruct",
        "stream": True,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": TOOLS,
    }
    req.update(request or {})
    return parse_scenario(
        {
            "id": sid,
            "title": sid,
            "source": "synthetic",
            "backend": {"dialect": "openai", "frames": frames, **backend},
            "client": {"request": req},
            "expect": {},
        }
    )


# --------------------------------------------------------------------------- expectations from frames




def expected_delta(frame: Frame) -> dict[str, Any]:
    if isinstance(frame, ContentFrame):
        return {"content": frame.content}
    assert isinstance(frame, ToolCallFrame), "only content and tool_call frames are deltas"
    call: dict[str, Any] = {"index": frame.index}
    for key in ("id", "type"):
        if getattr(frame, key) is not None:
            call[key] = getattr(frame, key)
    function = {k: getattr(frame, k) for k in ("name", "arguments") if getattr(frame, k) is not None}
    if function:
        call["function"] = function
    return {"tool_calls": [call]}


def expected_usage(backend: Backend) -> dict[str, int]:
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, **(backend.usage or {})}
    if backend.usage and "total_tokens" not in backend.usage:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def expected_message(backend: Backend) -> dict[str, Any]:
    contents = [f.content for f in backend.frames if isinstance(f, ContentFrame)]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(contents) if contents else None}
    calls: dict[int, dict[str, Any]] = {}
    for f in backend.frames:
        if isinstance(f, ToolCallFrame):
            call = calls.setdefault(f.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
            call["id"] = call["id"] or f.id
            call["function"]["name"] += f.name or ""
            call["function"]["arguments"] += f.arguments or ""
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


VLLM_CAPTURE = Path(__file__).parents[1] / "captures" / "vllm-qwen-tool-call.sse"


def vllm_finish_choice(finish_reason: str) -> dict[str, Any]:
    """The choice of the finish chunk as the recorded vLLM server writes it, with ``finish_reason``."""
    for line in VLLM_CAPTURE.read_text("utf-8").splitlines():
        if line.startswith("data: {"):
            choices = json.loads(line[6:])["choices"]
            if choices and choices[0]["finish_reason"] is not None:
                return {**choices[0], "finish_reason": finish_reason}
    raise AssertionError(f"{VLLM_CAPTURE} has no finish chunk")






def check_stream(
    raw: bytes, scenario: Scenario, *, model: str, include_usage: bool, done: bool = True
) -> list[tuple[int, int]]:
    """Walk the raw stream frame by frame; returns every event's (start, end) byte span."""
    spans: list[tuple[int, int]] = []
    pos = 0
    ids: set[str] = set()

    def take_json() -> dict[str, Any]:
        nonlocal pos
        end = raw.index(b"\n\n", pos) + 2
        event = raw[pos:end]
        assert event.startswith(b"data: "), event
        chunk: dict[str, Any] = json.loads(event[6:])
        # one line of compact, unescaped JSON: exactly how vLLM writes it
        assert event == b"data: " + compact(chunk) + b"\n\n"
        keys = ["id", "object", "created", "model", "choices"] + (["usage"] if "usage" in chunk else [])
        assert list(chunk) == keys
        assert chunk["object"] == "chat.completion.chunk" and chunk["model"] == model
        assert isinstance(chunk["created"], int) and chunk["id"].startswith("chatcmpl-")
        ids.add(chunk["id"])
        spans.append((pos, end))
        pos = end
        return chunk

    def choice(delta: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]

    assert take_json()["choices"] == choice({"role": "assistant", "content": ""})
    for frame in scenario.backend.frames:
        if isinstance(frame, RawFrame):
            data = frame.raw.encode("utf-8", "surrogatepass")
            assert raw[pos : pos + len(data)] == data, f"raw frame not verbatim at byte {pos}"
            spans.append((pos, pos + len(data)))
            pos += len(data)
        else:
            assert take_json()["choices"] == choice(expected_delta(frame))
    finish = take_json()["choices"]
    want = vllm_finish_choice(scenario.backend.finish_reason)
    assert finish == [want] and list(finish[0]) == list(want), "the finish chunk is shaped as vLLM's"
    if include_usage:
        last = take_json()
        assert last["choices"] == [] and last["usage"] == expected_usage(scenario.backend)
    assert raw[pos:] == (b"data: [DONE]\n\n" if done else b"")
    if done:
        spans.append((pos, len(raw)))
    assert len(ids) == 1, "every chunk of one answer carries the same id"
    return spans


def check_completion(data: dict[str, Any], scenario: Scenario, *, model: str) -> None:
    assert list(data) == ["id", "object", "created", "model", "choices", "usage"]
    assert data["object"] == "chat.completion" and data["model"] == model and data["id"].startswith("chatcmpl-")
    (only,) = data["choices"]
    message = copy.deepcopy(only["message"])
    expected = expected_message(scenario.backend)
    for got, want in zip(message.get("tool_calls") or (), expected.get("tool_calls") or ()):
        if want["id"] is None:  # the frames gave none: any non-empty id will do
            assert isinstance(got["id"], str) and got["id"]
            want["id"] = got["id"]
    assert message == expected
    assert only["finish_reason"] == scenario.backend.finish_reason and only["logprobs"] is None
    assert data["usage"] == expected_usage(scenario.backend)


def check_answer(response: httpx.Response, scenario: Scenario, body: Mapping[str, Any]) -> None:
    assert response.status_code == 200, response.text
    model = answer_model(scenario, body)
    if answers_stream(scenario, body):
        assert response.headers["content-type"].startswith("text/event-stream")
        options = body.get("stream_options") or {}
        check_stream(response.content, scenario, model=model, include_usage=options.get("include_usage") is True)
    else:
        assert response.headers["content-type"] == "application/json"
        check_completion(response.json(), scenario, model=model)


# --------------------------------------------------------------------------- fixtures


def post(http: httpx.Client, url: str, body: Any, nonce: str | None, *, path: str = "/v1/chat/completions",
         headers: Mapping[str, str] | None = None) -> httpx.Response:
    sent = dict(headers or {})
    if nonce is not None:
        sent[NONCE_HEADER] = nonce
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return http.post(url + path, content=content, headers={"content-type": "application/json", **sent})


def sdk(url: str, nonce: str, prefix: str = "/v1") -> openai.OpenAI:
    return openai_sdk(base_url=url + prefix, api_key="x", default_headers={NONCE_HEADER: nonce}, max_retries=0)


def sdk_reads(url: str, nonce: str, prefix: str, request: Mapping[str, Any]) -> tuple[str, list[str]]:
    client = sdk(url, nonce, prefix)
    return client.chat.completions.create(**request).choices[0].message.content or "", [
        m.id for m in client.models.list()]


CHAT = RouteKit(
    "openai", make_scenario, post, check_answer, sdk_reads, "/v1/chat/completions",
    paths=("/v1/chat/completions", "/chat/completions", "/some/prefix/v1/chat/completions",
           "/openai/v1/chat/completions/", "/v1//chat/completions"),
    query="api-version=2024-10-01", sdk_prefixes=("", "/v1", "/some/prefix/v1"), answer_id=b'{"id":"chatcmpl-',
    fault_frames=("one ", "two ", "three ✓", "four"),
)

