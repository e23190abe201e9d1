"""``toolcall-conformance import``: captures of every format become valid scenarios whose
frames are exactly the captured deltas, with no secret left, and bad input fails in
one line.

Expected frames and calls are written out by hand from the capture files in
``tests/captures/``; the replay test compares what the mock streams back with the
capture file itself, read by a small independent reader below.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
import yaml
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.captures import CaptureError, read_captures
from harness.import_command import import_command
from harness.importer import PLACEHOLDER_MESSAGE, ImportOptions, import_capture
from harness.nonce import NONCE_HEADER, place_nonce
from harness.scenario import load_scenario, validate_paths
from harness.servers import RunningServer
from mock_backends.app import create_app
from mock_backends.control import MockControl

CAPTURES = Path(__file__).parent / "captures"
WORKED = "vllm-qwen-tool-call.sse"
WORKED_REQUEST = "vllm-qwen-tool-call.request.json"

SECRETS = (
    "sk-proj-T3stK3yN0tR3al9f8e7d6c5b4a",  # session.har: Authorization and pasted in a message
    "abcdef0123456789",  # session.har: Cookie
    "xk-4f5e6d7c8b9a0f1e2d3c",  # session.har: x-api-key
    "zz9988776655",  # session.har: Set-Cookie
    "sk-log-0123456789abcdef",  # proxy-log.jsonl: Authorization
    "azure-abcdef0123456789",  # proxy-log.jsonl: api-key
)


def cli() -> click.Group:
    group = click.Group("toolcall-conformance")
    group.add_command(import_command)
    return group


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli(), ["import", *map(str, args)], catch_exceptions=False)


def capture_args(args: tuple[str, ...]) -> list[str]:
    """Arguments with ``@name`` standing for the file ``tests/captures/name``."""
    return [str(CAPTURES / a[1:]) if a.startswith("@") else a for a in args]


def tc(**fields: Any) -> dict[str, Any]:
    return {"tool_call": fields}


# --------------------------------------------------------------------------- one case per capture


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # options, and "@file" for files in tests/captures
    frames: list[Any]
    tool_calls: list[dict[str, Any]]
    content: str
    finish_reason: str | None  # expected; None: no finish_reason expectation
    backend_finish: str = "stop"
    request: Mapping[str, Any] = field(default_factory=dict)  # keys the written request must have
    headers: Mapping[str, str] = field(default_factory=dict)
    tools: tuple[str, ...] = ()
    inferred: bool = False  # request not captured: placeholder message, inferred tools
    usage: Mapping[str, int] | None = None
    model: str | None = None
    warnings: tuple[str, ...] = ()  # in the command's output and in the file's comments
    checks: tuple[str, ...] = ()  # in the file's review checklist
    backend_stream: Any = "auto"


WORKED_TOKENS = [
    "Let", " me", " look", " at", " the", " failing", " test", " first", ".\n", "<tool_call>", "\n", '{"',
    "name", '":', ' "', "read", "_file", '",', ' "', "arguments", '":', ' {"', "path", '":', ' "',
    "tests", "/test", "_parser", ".py", '"}}\n', "</tool_call>",
]

CASES = [
    Case(
        "sse-worked-example",
        ("@" + WORKED, "--request", "@" + WORKED_REQUEST),
        WORKED_TOKENS,
        [{"name": "read_file", "arguments": {"path": "tests/test_parser.py"}}],
        "Let me look at the failing test first.",
        "tool_calls",
        request={"stream": True, "stream_options": {"include_usage": True}, "tool_choice": "auto", "temperature": 0.2},
        tools=("read_file", "run_command"),
        usage={"prompt_tokens": 486, "completion_tokens": 31, "total_tokens": 517},
        model="Qwen/Qwen2.5-7B-Instruct",
    ),
    Case(
        "sse-crlf-comments-glued-no-request",
        ("@edge-crlf.sse",),
        ["Voilà\t", "— c'est ", "prêt 😀  ", "\r\n", '<tool_call>\n{"name": "write_file", ',
         '"arguments": {"path": "notes.txt", "content": "ligne\\t1  \\r\\n中文"}}\n</tool_call>', "  "],
        [{"name": "write_file", "arguments": {"path": "notes.txt", "content": "ligne\t1  \r\n中文"}}],
        "Voilà\t— c'est prêt 😀",
        "tool_calls",
        request={"stream": True},
        tools=("write_file",),
        inferred=True,
        model="qwen2.5-coder",
    ),
    Case(
        "sse-native-tool-calls",
        ("@native-tools.sse", "--request", "@native-tools.request.json"),
        [
            "Checking both cities.",
            tc(index=0, id="chatcmpl-tool-5c1e0a", type="function", name="get_weather"),
            tc(index=0, arguments='{"city": "'),
            tc(index=0, arguments='Paris"}'),
            tc(index=1, id="chatcmpl-tool-7d2f1b", type="function", name="get_weather", arguments=""),
            tc(index=1, arguments='{"city": "Lyon", "unit": "celsius"}'),
        ],
        [{"name": "get_weather", "arguments": {"city": "Paris"}},
         {"name": "get_weather", "arguments": {"city": "Lyon", "unit": "celsius"}}],
        "Checking both cities.",
        "tool_calls",
        backend_finish="tool_calls",
        tools=("get_weather",),
        usage={"prompt_tokens": 210, "completion_tokens": 52, "total_tokens": 262},
        warnings=("dropped reasoning text in 2 delta(s)",),
    ),
    Case(
        "sse-truncated",
        ("@truncated.sse",),
        ["The answer", " is", " forty"],
        [],
        "The answer is forty",
        None,
        inferred=True,
        warnings=("cut off inside event 5", "no finish_reason: the stream looks truncated"),
        checks=("the capture stops after frame 3", "`fault: {kind: drop, after_frame: 3}`"),
    ),
    Case(
        "json-completion",
        ("@completion.json", "--request", "@completion.request.json"),
        [
            "I'll check both files.",
            tc(index=0, id="call_a1", type="function", name="read_file", arguments='{"path": "a.txt"}'),
            tc(index=1, id="call_b2", type="function", name="read_file", arguments='{"path": "b.txt"}'),
        ],
        [{"name": "read_file", "arguments": {"path": "a.txt"}}, {"name": "read_file", "arguments": {"path": "b.txt"}}],
        "I'll check both files.",
        "tool_calls",
        backend_finish="tool_calls",
        request={"stream": False},
        tools=("read_file",),
        usage={"prompt_tokens": 80, "completion_tokens": 40, "total_tokens": 120},
        model="gpt-4o-mini-2024-07-18",
    ),
    Case(
        "har-sse-base64-invoke-xml-native-duplicate",
        ("@session.har", "--entry", "3"),
        [
            'Reading the README.\n\n<function_calls>\n<invoke name="',
            'read_file">\n<parameter name="path">README.md',
            "</parameter>\n</invoke>\n</function_calls>",
            tc(index=0, id="toolu_01", type="function", name="read_file", arguments=""),
            tc(index=0, arguments='{"path": "README.md"}'),
        ],
        [{"name": "read_file", "arguments": {"path": "README.md"}}],
        "Reading the README.",
        "tool_calls",
        backend_finish="tool_calls",
        request={"messages": [
            {"role": "user", "content": "Summarise the README. (my key is [redacted], do not share)"},
        ]},
        headers={"User-Agent": "OpenClaw/2026.1.4 (linux; node 22)"},
        tools=("read_file",),
        warnings=("dropped credential header(s) Authorization, Cookie, X-Api-Key", "redacted 1 secret-looking",
                  "repeats a call written in the text"),
    ),
    Case(
        "har-json-vtc-user-agent-dropped",
        ("@session.har", "--entry", "4"),
        ["Hi! How can I help?"],
        [],
        "Hi! How can I help?",
        "stop",
        request={"stream": False},
        usage={"prompt_tokens": 9, "completion_tokens": 6, "total_tokens": 15},
        warnings=("identified itself as 'Cline/3.38.0'",),
    ),
    Case(
        "jsonl-sse-text-qwen-tools",
        ("@proxy-log.jsonl", "--entry", "1"),
        ["<tools>", '{"name": "get_weather", "arguments": ', '{"city": "Oslo"}}', "</tools>"],
        [{"name": "get_weather", "arguments": {"city": "Oslo"}}],
        "",
        "tool_calls",
        headers={"User-Agent": "OpenAI/Python 1.54.3"},
        tools=("get_weather",),
        warnings=("dropped credential header(s) Api-Key, Authorization",),
    ),
    Case(
        "jsonl-chunk-list-qwen3-coder",
        ("@proxy-log.jsonl", "--entry", "2"),
        ["<tool_call>\n<function=run_command>\n<parameter=command>\n", "ls -la src\n</parameter>\n",
         "</function>\n</tool_call>"],
        [{"name": "run_command", "arguments": {"command": "ls -la src"}}],
        "",
        "tool_calls",
        tools=("run_command",),
        warnings=("'Kilo-Code/4.2'",),
    ),
    Case(
        "jsonl-aliases-completion-object",
        ("@proxy-log.jsonl", "--entry", "3"),
        ["Hello! What can I do for you?"],
        [],
        "Hello! What can I do for you?",
        "stop",
        model="gpt-4o-mini",
    ),
]


def _written(tmp_path: Path, case: Case) -> tuple[Path, Result]:
    out = tmp_path / "out"
    result = run(*capture_args(case.args), "-o", f"{out}/", "--id", case.id, "--family", "captured")
    assert result.exit_code == 0, result.stderr
    written = sorted(out.iterdir())
    assert [f.name for f in written] == [f"{case.id}.yaml"]
    return written[0], result


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_capture_becomes_scenario(case: Case, tmp_path: Path) -> None:
    path, result = _written(tmp_path, case)
    text = path.read_text("utf-8")
    scenarios, problems = validate_paths([path])
    assert problems == []
    (scenario,) = scenarios
    data = yaml.safe_load(text)

    assert data["backend"]["frames"] == case.frames  # exactly as captured, also after YAML
    assert data["expect"]["tool_calls"] == case.tool_calls
    assert data["expect"]["content"] == case.content
    assert data["expect"].get("finish_reason") == case.finish_reason
    assert scenario.backend.finish_reason == case.backend_finish
    assert scenario.backend.usage == case.usage
    assert scenario.backend.stream == case.backend_stream
    if case.model is not None:
        assert scenario.backend.model == case.model
    request = data["client"]["request"]
    for key, value in case.request.items():
        assert request[key] == value, key
    assert scenario.client.tool_names == case.tools
    assert dict(scenario.client.headers) == dict(case.headers)
    assert (scenario.client.profiles == ("openai",)) == bool(case.headers)
    if case.inferred:
        assert request["messages"] == [{"role": "user", "content": PLACEHOLDER_MESSAGE}]
        assert "messages holds a placeholder" in text
    assert scenario.review == "required" and scenario.family == "captured" and scenario.id == case.id
    capture_file = next(a[1:] for a in case.args if a.startswith("@"))
    assert scenario.source.startswith(f"imported from {capture_file}")
    assert str(CAPTURES) not in text and "/" not in scenario.source.split(" (")[0]
    assert text.startswith("# Imported by `toolcall-conformance import`")
    assert "SHOULD have received" in text
    for warning in case.warnings:
        assert warning in result.stderr
        assert warning in text  # also in the checklist at the top of the file
    for check in case.checks:
        assert check in " ".join(line.lstrip("# ") for line in text.splitlines())
    for secret in SECRETS:
        assert secret not in text and secret not in result.output


# --------------------------------------------------------------------------- several exchanges, stdout, overwrite


def test_every_entry_of_a_har_becomes_its_own_file(tmp_path: Path) -> None:
    result = run(CAPTURES / "session.har", "-o", tmp_path / "all")
    assert result.exit_code == 0, result.stderr
    written = sorted(p.name for p in (tmp_path / "all").iterdir())
    assert written == ["imported-session-3.yaml", "imported-session-4.yaml"]
    assert "skipped session.har entry 5: the answer is HTTP 500" in result.stderr
    scenarios, problems = validate_paths([tmp_path / "all"])
    assert problems == [] and len(scenarios) == 2
    for secret in SECRETS:
        assert all(secret not in p.read_text("utf-8") for p in (tmp_path / "all").iterdir())


def test_one_exchange_goes_to_stdout_and_files_are_not_overwritten(tmp_path: Path) -> None:
    result = run(CAPTURES / WORKED, "--request", CAPTURES / WORKED_REQUEST, "--title", "Qwen hermes call split")
    assert result.exit_code == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["id"] == "imported-vllm-qwen-tool-call" and data["title"] == "Qwen hermes call split"
    assert data["backend"]["frames"] == WORKED_TOKENS
    target = tmp_path / "case.yaml"
    target.write_text("keep me")
    refused = run(CAPTURES / WORKED, "-o", target)
    assert refused.exit_code == 2 and "already exists (pass --force" in refused.stderr
    assert target.read_text() == "keep me"
    forced = run(CAPTURES / WORKED, "-o", target, "--force")
    assert forced.exit_code == 0 and load_scenario(target).backend.frames


# --------------------------------------------------------------------------- replayed by the real mock


def stream_deltas(raw: bytes) -> list[dict[str, Any]]:
    """The text and tool-call deltas of an OpenAI SSE body, one per ``data:`` line, in
    order; the role delta's and finish chunk's empty content left out."""
    out: list[dict[str, Any]] = []
    for line in raw.decode("utf-8").replace("\r\n", "\n").split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in json.loads(line[6:]).get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out.append({"content": delta["content"]})
            for call in delta.get("tool_calls") or ():
                out.append({"tool_call": call})
    return out


@pytest.mark.parametrize(
    "capture, request_file",
    [(WORKED, WORKED_REQUEST), ("native-tools.sse", "native-tools.request.json"), ("edge-crlf.sse", None)],
)
def test_imported_scenario_replays_with_the_original_split_points(
    capture: str, request_file: str | None, servers: Callable[[Any], RunningServer], tmp_path: Path
) -> None:
    target = tmp_path / "scenario.yaml"
    extra = ["--request", str(CAPTURES / request_file)] if request_file else []
    result = run(CAPTURES / capture, *extra, "-o", target)
    assert result.exit_code == 0, result.stderr
    (scenario,), problems = validate_paths([target])
    assert problems == []

    url = servers(create_app()).url
    with MockControl(url) as control:
        nonce = control.arm(scenario)
        body = place_nonce(scenario.client.request, nonce)
        with httpx.Client(timeout=10) as http:
            response = http.post(f"{url}/v1/chat/completions", json=body, headers={NONCE_HEADER: nonce})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    original = stream_deltas((CAPTURES / capture).read_bytes())
    assert len(original) >= 6
    assert stream_deltas(response.content) == original


# --------------------------------------------------------------------------- bad input: one line, exit status 2


BAD = [
    ("not-json", ("@not-json.json",), "not-json.json: not valid JSON: Unterminated string"),
    ("cut-json-hint", ("@not-json.json",), "(the text looks cut off)"),
    ("not-a-capture", ("@garbage.txt",), "garbage.txt: not a capture this command reads"),
    ("empty", ("@empty.sse",), "empty.sse: the file is empty"),
    ("truncated-before-first-chunk", ("@cut-first-event.sse",), "cut-first-event.sse: truncated SSE"),
    ("http-error-status", ("@http-error.sse",), "'HTTP/1.1 400 Bad Request', not a successful answer"),
    ("har-without-chat", ("@no-chat.har",), "no-chat.har: no chat-completions entry among 1 HAR entries"),
    ("har-entry-not-chat", ("@session.har", "--entry", "2"), "entry 2 is not a chat-completions request"),
    ("har-entry-missing", ("@session.har", "--entry", "9"), "entry 9 does not exist (5 entries)"),
    ("har-entry-failed", ("@session.har", "--entry", "5"), "session.har entry 5: the answer is HTTP 500"),
    ("har-several-to-stdout", ("@session.har",), "2 exchanges found (session.har entry 3, session.har entry 4)"),
    ("anthropic-sse", ("@anthropic.sse",), "anthropic.sse: Anthropic Messages captures are not supported yet"),
    ("anthropic-json", ("@anthropic-message.json",), "Anthropic Messages captures are not supported yet"),
    ("anthropic-har", ("@anthropic.har",), "anthropic.har: Anthropic Messages captures are not supported yet"),
    ("request-not-json", ("@" + WORKED, "--request", "@not-a-request.json"),
     "not-a-request.json: the request is not valid JSON"),
    ("request-missing", ("@" + WORKED, "--request", "@nowhere.json"), "nowhere.json: cannot read: No such file"),
    ("capture-missing", ("@nowhere.sse",), "nowhere.sse: cannot read: No such file"),
    ("forced-wrong-format", ("--format", "json", "@" + WORKED), "vllm-qwen-tool-call.sse: not valid JSON"),
    ("forced-har", ("--format", "har", "@completion.json"), "completion.json: not a HAR file"),
    ("jsonl-entry-not-chat", ("@proxy-log.jsonl", "--entry", "4"), "/v1/embeddings is not a chat-completions request"),
    ("entry-on-single", ("@completion.json", "--entry", "1"), "--entry applies to HAR and JSON-lines files"),
    ("request-with-har", ("@session.har", "--request", "@completion.request.json"),
     "a HAR file carries its own requests"),
    ("bad-id", ("@completion.json", "--id", "Not An Id"), "--id 'Not An Id': use lower-case letters"),
    ("bad-family", ("@completion.json", "--family", "Mixed_Case"), "--family 'Mixed_Case'"),
]


@pytest.mark.parametrize("args, fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_and_status_2(args: tuple[str, ...], fragment: str) -> None:
    result = run(*capture_args(args))
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert fragment in lines[0]
    assert str(CAPTURES) not in lines[0] or "cannot read" in lines[0]


# --------------------------------------------------------------------------- the pure core on arbitrary input

_ANY: st.SearchStrategy[Any] = (
    st.none() | st.booleans() | st.integers(-1, 3) | st.text(max_size=6) | st.just([]) | st.just({})
)


def _maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(strategy, _ANY)


_CALL = st.fixed_dictionaries({}, optional={
    "index": _maybe(st.integers(0, 2)), "id": _maybe(st.sampled_from(["c1", "c2"])), "type": _ANY,
    "function": _maybe(st.fixed_dictionaries({}, optional={
        "name": _maybe(st.sampled_from(["f", "g", ""])),
        "arguments": _maybe(st.sampled_from(['{"a":', "1}", '{"a": 1}', "", "[1]"])),
    })),
})
_DELTA = st.fixed_dictionaries({}, optional={
    "role": _ANY,
    "content": _maybe(st.text(max_size=10) | st.just('<tool_call>{"name": "f", "arguments": {}}</tool_call>')),
    "tool_calls": _maybe(st.lists(_maybe(_CALL), max_size=3)),
})
_CHUNK = st.fixed_dictionaries({}, optional={
    "object": _ANY, "model": _ANY, "usage": _ANY, "error": _ANY, "type": _ANY,
    "choices": _maybe(st.lists(_maybe(st.fixed_dictionaries({}, optional={
        "index": _maybe(st.integers(0, 1)), "delta": _maybe(_DELTA), "message": _maybe(_DELTA),
        "finish_reason": _ANY,
    })), max_size=2)),
})
_REQUEST = st.fixed_dictionaries({"messages": _maybe(st.lists(_ANY, max_size=2))}, optional={
    "tools": _maybe(st.lists(_maybe(st.fixed_dictionaries({"type": _ANY, "function": _ANY})), max_size=2)),
    "stream": _ANY, "model": _ANY, "system": _ANY,
})


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    chunks=st.lists(_CHUNK, max_size=4),
    request=st.one_of(st.none(), _REQUEST),
    shape=st.sampled_from(["sse", "json", "list", "jsonl"]),
    junk=st.binary(max_size=12),
)
def test_core_rejects_anything_with_capture_errors_only(
    chunks: list[Any], request: Any, shape: str, junk: bytes
) -> None:
    """Whatever the bytes, the core answers with captures or a CaptureError, and every
    scenario it builds is valid and loads back to the captured frames."""
    body = json.dumps(request).encode() if request is not None and shape != "jsonl" else None
    if shape == "sse":
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + junk
    elif shape == "json":
        data = json.dumps(chunks[0] if chunks else {}).encode()
    elif shape == "list":
        data = json.dumps(chunks).encode()
    else:
        data = json.dumps({"request": request, "response": chunks}).encode()
    try:
        found = read_captures(data, "fuzz.sse", request=body)
    except CaptureError:
        return
    for capture in found.captures:
        try:
            imported = import_capture(capture, ImportOptions(imported_on="2025-01-01"))
        except CaptureError:
            continue
        assert imported.scenario.backend.frames == capture.frames


_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("\r\n\t \x00\x85\u2028\ufeff\x1b#:-'\"|>{}[],&*!%@`")),
    ),
    max_size=16,
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(contents=st.lists(_TEXT, min_size=1, max_size=5), arguments=_TEXT, words=_TEXT)
def test_yaml_keeps_every_character_of_every_frame(contents: list[str], arguments: str, words: str) -> None:
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in contents]
    chunks.append({"choices": [{"index": 0, "finish_reason": "stop", "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": arguments}}]}}]})
    sse = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    request = {"model": words, "stream": True, "messages": [{"role": "user", "content": words}],
               "tools": [{"type": "function", "function": {"name": "f", "description": words}}]}
    (capture,) = read_captures(sse.encode(), "text.sse", request=json.dumps(request).encode()).captures
    imported = import_capture(capture, ImportOptions(imported_on="2025-01-01"))
    data = yaml.safe_load(imported.text)
    assert data["backend"]["frames"][:-1] == contents
    assert data["backend"]["frames"][-1]["tool_call"]["arguments"] == arguments
    assert data["client"]["request"]["messages"][0]["content"] == words
