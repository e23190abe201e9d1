"""``toolcall-conformance import``: captures of every format and both dialects become
valid scenarios whose frames are exactly the captured deltas, with no secret left, that
the reference proxy passes unchanged; bad input fails in one line.

Expected frames and calls are written out by hand from the capture files in
``tests/captures/``; the replay test compares what the mock streams back with the
capture file itself, read by a small independent reader below.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
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

from harness.capture.detect import read_captures
from harness.capture.errors import CaptureError
from harness.capture.importer import PLACEHOLDER_MESSAGE, ImportOptions, import_capture
from harness.cli.importing import import_command
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.frames import ContentFrame, ToolUseFrame
from harness.core.dialects.profiles import choose_profile
from harness.core.nonce import NONCE_HEADER, place_nonce
from harness.core.scenario.loading import load_scenario, validate_paths
from harness.core.scenario.model import Scenario
from harness.run.runner import play
from harness.run.servers import RunningServer, serve
from harness.run.settings import RunSettings
from mock_backends.app import create_app
from mock_backends.control import MockControl
from reference_proxy.app import create_app as create_reference_proxy
from reference_proxy.config import ProxyConfig

CAPTURES = Path(__file__).parents[1] / "captures"
WORKED = "vllm-qwen-tool-call.sse"
WORKED_REQUEST = "vllm-qwen-tool-call.request.json"

SECRETS = (
    "sk-proj-T3stK3yN0tR3al9f8e7d6c5b4a",  # session.har: Authorization and pasted in a message
    "abcdef0123456789",  # session.har: Cookie
    "xk-4f5e6d7c8b9a0f1e2d3c",  # session.har: x-api-key
    "zz9988776655",  # session.har: Set-Cookie
    "sk-log-0123456789abcdef",  # proxy-log.jsonl: Authorization
    "azure-abcdef0123456789",  # proxy-log.jsonl: api-key
    "sk-ant-api03-HarSecret0123456789abcdef",  # anthropic.har: x-api-key
    "cookie0123456789value",  # anthropic.har: Cookie
    "sk-ant-api03-Pasted9Key8In7Chat6Ab",  # anthropic.har: pasted in a message
    "sk-ant-log-0123456789abcdef",  # anthropic-log.jsonl: x-api-key
    "sk-ant-oat01-LogBearer0123456789",  # anthropic-log.jsonl: Authorization
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


def tu(**fields: Any) -> dict[str, Any]:
    return {"tool_use": fields}


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
    profile: str = "openai"  # the client's; anthropic for a Messages capture
    ping: bool = False  # the Messages stream carried ping events


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
        "har-json-xml-client-user-agent-dropped",
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
    Case(
        "messages-sse-curl-i-crlf-leaked-invoke-and-native",
        ("@anthropic.sse", "--request", "@anthropic.request.json"),
        ["I'll look at the failing test", " first.\n\n<function", '_calls>\n<invoke name="Re',
         'ad">\n<parameter name="file_path">tests/test_', "parser.py</parameter>\n</invoke>\n</function_calls>",
         tu(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="Grep",
            input_json=["", '{"pattern": "def spl', 'it", "path": "src"}'])],
        [{"name": "Read", "arguments": {"file_path": "tests/test_parser.py"}},
         {"name": "Grep", "arguments": {"pattern": "def split", "path": "src"}}],
        "I'll look at the failing test first.",
        "tool_use",
        backend_finish="tool_use",
        request={"stream": True, "max_tokens": 8192, "tool_choice": {"type": "auto"}, "system": [
            {"type": "text", "text": "You are a coding assistant working in the user's repository. Use the tools "
                                     "to read and search files."}]},
        tools=("Read", "Grep"),
        usage={"input_tokens": 1532, "output_tokens": 87},
        model="claude-sonnet-4-5-20250929",
        profile="anthropic",
        ping=True,
    ),
    Case(
        "messages-json-native-duplicate-no-request",
        ("@anthropic-message.json",),
        ['Listing the migrations first.\n\n<function_calls>\n<invoke name="Glob">\n'
         '<parameter name="pattern">db/migrations/*.sql</parameter>\n</invoke>\n</function_calls>',
         tu(id="toolu_01GlobMigrations8Qz", name="Glob", input_json=['{"pattern": "db/migrations/*.sql"}'])],
        [{"name": "Glob", "arguments": {"pattern": "db/migrations/*.sql"}}],
        "Listing the migrations first.",
        "tool_use",
        backend_finish="tool_use",
        request={"stream": False, "max_tokens": 4096},
        tools=("Glob",),
        inferred=True,
        usage={"input_tokens": 412, "output_tokens": 58},
        model="claude-3-5-haiku-20241022",
        warnings=("the native call Glob repeats a call written in the text",),
        profile="anthropic",
    ),
    Case(
        "messages-har-claude-code",
        ("@anthropic.har", "--entry", "2"),
        ["Running the", " tests to see the failure.",
         tu(id="toolu_01BashPytest5Kd", name="Bash", input_json=[
             "", '{"command": ', '"pytest -x tests/", "description": "Run the tests, stop at the first failure"}'])],
        [{"name": "Bash", "arguments": {"command": "pytest -x tests/",
                                        "description": "Run the tests, stop at the first failure"}}],
        "Running the tests to see the failure.",
        "tool_use",
        backend_finish="tool_use",
        request={"messages": [
            {"role": "user", "content": "The tests fail since the last merge. My key is [redacted], don't log it."},
        ]},
        headers={"User-Agent": "claude-cli/2.0.14 (external, cli)"},
        tools=("Bash",),
        usage={"input_tokens": 2210, "output_tokens": 64},
        warnings=("dropped credential header(s) Cookie, X-Api-Key", "redacted 1 secret-looking"),
        profile="anthropic",
        ping=True,
    ),
    Case(
        "messages-jsonl-sse-leaked-invoke",
        ("@anthropic-log.jsonl", "--entry", "2"),
        ["Checking the ", 'lockfile.\n<function_calls><invoke name="Read"><parameter name="file_',
         'path">poetry.lock</parameter></invoke></function_calls>'],
        [{"name": "Read", "arguments": {"file_path": "poetry.lock"}}],
        "Checking the lockfile.",
        "tool_use",
        backend_finish="end_turn",
        headers={"User-Agent": "Anthropic/Python 0.40.0"},
        tools=("Read",),
        usage={"input_tokens": 640, "output_tokens": 41},
        model="claude-sonnet-4-5-20250929",
        warnings=("dropped credential header(s) X-Api-Key",),
        profile="anthropic",
    ),
    Case(
        "messages-jsonl-aliases-whole-answer",
        ("@anthropic-log.jsonl", "--entry", "3"),
        ["Hello! How can I help with your code today?"],
        [],
        "Hello! How can I help with your code today?",
        "end_turn",
        backend_finish="end_turn",
        request={"stream": False},
        usage={"input_tokens": 9, "output_tokens": 13},
        warnings=("dropped credential header(s) Authorization",),
        profile="anthropic",
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
    assert scenario.backend.dialect.name == case.profile and scenario.client.profile.name == case.profile
    assert scenario.backend.ping == case.ping
    if case.profile == "anthropic":  # a Messages case runs under its own profile, User-Agent or not
        assert tuple(p.name for p in scenario.client.profiles) == ("anthropic",)
    else:  # a captured User-Agent overrides the xml-client profile's
        assert (tuple(p.name for p in scenario.client.profiles) == ("openai",)) == bool(case.headers)
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


SEVERAL = [
    ("session.har", ["imported-session-3.yaml", "imported-session-4.yaml"],
     ["skipped session.har entry 5: the answer is HTTP 500"]),
    ("anthropic.har", ["imported-anthropic-2.yaml"], []),
    ("proxy-log.jsonl", ["imported-proxy-log-1.yaml", "imported-proxy-log-2.yaml", "imported-proxy-log-3.yaml"],
     ["skipped proxy-log.jsonl line 4: http://127.0.0.1:8000/v1/embeddings is not a chat-completions"]),
    ("anthropic-log.jsonl", ["imported-anthropic-log-2.yaml", "imported-anthropic-log-3.yaml"],
     ["skipped anthropic-log.jsonl line 1: not valid JSON",
      "skipped anthropic-log.jsonl line 4: http://127.0.0.1:4000/v1/messages/count_tokens is not a chat-completions"]),
]


@pytest.mark.parametrize("capture, files, skipped", SEVERAL, ids=[s[0] for s in SEVERAL])
def test_every_exchange_of_a_file_becomes_its_own_file(
    capture: str, files: list[str], skipped: list[str], tmp_path: Path
) -> None:
    """Every importable exchange is written; an entry or line that cannot be (another
    request, an error answer, a line broken in the log) is skipped with a warning naming it."""
    result = run(CAPTURES / capture, "-o", f"{tmp_path / 'all'}/")
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "all").iterdir()) == files
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: skipped ")]
    assert len(warnings) == len(skipped)
    for line, fragment in zip(warnings, skipped):
        assert fragment in line
    scenarios, problems = validate_paths([tmp_path / "all"])
    assert problems == [] and len(scenarios) == len(files)
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
    """The text and tool deltas of an SSE body of either dialect, one per ``data:`` line,
    in order: OpenAI content and tool_calls entries (the role delta's and finish chunk's
    empty content left out), Messages text deltas, tool_use block starts and their
    input_json fragments."""
    out: list[dict[str, Any]] = []
    for line in raw.decode("utf-8").replace("\r\n", "\n").split("\n"):
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        data = json.loads(line[6:])
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out.append({"content": delta["content"]})
            for call in delta.get("tool_calls") or ():
                out.append({"tool_call": call})
        block, delta = data.get("content_block") or {}, data.get("delta") or {}
        if block.get("type") == "tool_use":
            out.append({"tool_use": {"id": block["id"], "name": block["name"]}})
        if delta.get("type") == "text_delta":
            out.append({"content": delta["text"]})
        if delta.get("type") == "input_json_delta":
            out.append({"input_json": delta["partial_json"]})
    return out


@pytest.mark.parametrize(
    "capture, request_file",
    [(WORKED, WORKED_REQUEST), ("native-tools.sse", "native-tools.request.json"), ("edge-crlf.sse", None),
     ("anthropic.sse", "anthropic.request.json")],
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
    route = "messages" if scenario.client.dialect.name == "anthropic" else "chat/completions"
    with MockControl(url) as control:
        nonce = control.arm(scenario)
        body = place_nonce(scenario.client.request, nonce, scenario.client.dialect)
        with httpx.Client(timeout=10) as http:
            response = http.post(f"{url}/v1/{route}", json=body, headers={NONCE_HEADER: nonce})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    original = stream_deltas((CAPTURES / capture).read_bytes())
    assert len(original) >= 6
    assert stream_deltas(response.content) == original


# --------------------------------------------------------------------------- played through the harness


@pytest.fixture(scope="module")
def reference_rig() -> Iterator[tuple[str, str, frozenset[str]]]:
    """A mock and the reference proxy in front of it: (mock URL, proxy URL, the proxy's features)."""
    with ExitStack() as stack:
        mock_url = stack.enter_context(serve(create_app())).url
        config = ProxyConfig(upstream=f"{mock_url}/v1", log_level="warning")
        proxy_url = stack.enter_context(serve(create_reference_proxy(config))).url
        yield mock_url, f"{proxy_url}/v1", config.features()


def _profiles(scenario: Scenario, features: frozenset[str]) -> list[Any]:
    return [p for p in scenario.client.profiles if choose_profile(scenario, p, features)[1] is None]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_imported_scenario_runs_in_the_suite_unchanged(
    case: Case, tmp_path: Path, reference_rig: tuple[str, str, frozenset[str]]
) -> None:
    """The file the import writes, review comments and all, is played by the harness as
    the plugin plays a library case (every profile it is meaningful for, streamed and
    not), and the reference proxy breaks no rule of it."""
    path, _ = _written(tmp_path, case)
    scenario = load_scenario(path)
    mock_url, proxy_url, features = reference_rig
    settings = RunSettings(proxy_url=proxy_url, features=features, timeout=10)
    profiles = _profiles(scenario, features)
    assert profiles
    for profile in profiles:
        with MockControl(mock_url) as mock:
            played = play(scenario, settings=settings, mock=mock, profile=profile)
        assert played.attempts
        failures = [f"{a.label}: {f}" for a, f in played.failures]
        assert not failures, f"{case.id} under {profile}:\n" + "\n".join(failures)


# --------------------------------------------------------------------------- bad input: one line, exit status 2


BAD = [
    ("not-json", ("@not-json.json",), "not-json.json: not valid JSON: Unterminated string"),
    ("cut-json-hint", ("@not-json.json",), "(the text looks cut off)"),
    ("not-a-capture", ("@garbage.txt",), "garbage.txt: not a capture this command reads"),
    ("empty", ("@empty.sse",), "empty.sse: the file is empty"),
    ("truncated-before-first-chunk", ("@cut-first-event.sse",), "cut-first-event.sse: truncated SSE"),
    ("http-error-status", ("@http-error.sse",), "'HTTP/1.1 400 Bad Request', not a successful answer"),
    ("har-without-chat", ("@no-chat.har",), "no-chat.har: no chat-completions or Messages entry among 1 HAR entries"),
    ("har-entry-not-chat", ("@session.har", "--entry", "2"), "entry 2 is not a chat-completions or Messages request"),
    ("har-entry-count-tokens", ("@anthropic.har", "--entry", "3"),
     "entry 3 is not a chat-completions or Messages request; the entries to import are 2"),
    ("har-entry-missing", ("@session.har", "--entry", "9"), "entry 9 does not exist (5 entries)"),
    ("har-entry-failed", ("@session.har", "--entry", "5"), "session.har entry 5: the answer is HTTP 500"),
    ("har-several-to-stdout", ("@session.har",), "2 exchanges found (session.har entry 3, session.har entry 4)"),
    ("responses-api", ("@responses-api.json",), "responses-api.json: OpenAI Responses API captures are not supported"),
    ("request-of-the-other-dialect", ("@anthropic.sse", "--request", "@completion.request.json"),
     "the request is a chat-completions request but the response is a Messages answer"),
    ("request-not-json", ("@" + WORKED, "--request", "@not-a-request.json"),
     "not-a-request.json: the request is not valid JSON"),
    ("request-missing", ("@" + WORKED, "--request", "@nowhere.json"), "nowhere.json: cannot read: No such file"),
    ("capture-missing", ("@nowhere.sse",), "nowhere.sse: cannot read: No such file"),
    ("forced-wrong-format", ("--format", "json", "@" + WORKED), "vllm-qwen-tool-call.sse: not valid JSON"),
    ("forced-har", ("--format", "har", "@completion.json"), "completion.json: not a HAR file"),
    ("jsonl-entry-not-chat", ("@proxy-log.jsonl", "--entry", "4"),
     "/v1/embeddings is not a chat-completions or Messages request"),
    ("jsonl-entry-broken-line", ("@anthropic-log.jsonl", "--entry", "1"), "anthropic-log.jsonl line 1: not valid JSON"),
    ("jsonl-nothing-usable", ("@unusable-log.jsonl",),
     "unusable-log.jsonl: none of the 2 line(s) could be imported; first: unusable-log.jsonl line 1: "),
    ("entry-on-single", ("@completion.json", "--entry", "1"), "--entry applies to HAR and JSON-lines files"),
    ("request-with-har", ("@session.har", "--request", "@completion.request.json"),
     "a HAR file carries its own requests"),
    ("bad-id", ("@completion.json", "--id", "Not An Id"), "--id 'Not An Id': use lower-case letters"),
    ("bad-family", ("@completion.json", "--family", "Mixed_Case"), "--family 'Mixed_Case'"),
    ("id-with-a-line-break", ("@completion.json", "--id", "an-id\n"), "--id 'an-id\\n': use lower-case letters"),
    ("family-with-a-line-break", ("@completion.json", "--family", "fam\n"), "--family 'fam\\n'"),
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
_BLOCK = st.fixed_dictionaries({}, optional={
    "type": _maybe(st.sampled_from(["text", "tool_use", "thinking"])), "text": _ANY, "id": _ANY,
    "name": _maybe(st.sampled_from(["f", ""])), "input": _maybe(st.just({"a": 1})),
})
_EVENT = st.fixed_dictionaries({}, optional={
    "type": _maybe(st.sampled_from(["message_start", "content_block_start", "content_block_delta",
                                    "content_block_stop", "message_delta", "message_stop", "ping", "error"])),
    "index": _maybe(st.integers(0, 2)), "content_block": _maybe(_BLOCK),
    "delta": _maybe(st.fixed_dictionaries({}, optional={
        "type": _maybe(st.sampled_from(["text_delta", "input_json_delta", "thinking_delta"])),
        "text": _maybe(st.text(max_size=6)), "partial_json": _maybe(st.sampled_from(['{"a":', "1}", ""])),
        "stop_reason": _ANY,
    })),
    "message": _maybe(st.fixed_dictionaries({}, optional={"model": _ANY, "usage": _ANY, "content": _ANY})),
    "usage": _ANY, "error": _ANY,
})
_MESSAGE = st.fixed_dictionaries({"type": st.just("message"), "content": st.lists(_maybe(_BLOCK), max_size=3)},
                                 optional={"stop_reason": _ANY, "usage": _ANY, "model": _ANY})
_REQUEST = st.fixed_dictionaries({"messages": _maybe(st.lists(_ANY, max_size=2))}, optional={
    "tools": _maybe(st.lists(_maybe(st.fixed_dictionaries({"type": _ANY, "function": _ANY})), max_size=2)),
    "stream": _ANY, "model": _ANY, "system": _ANY,
})


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    chunks=st.one_of(st.lists(_CHUNK, max_size=4), st.lists(_EVENT, max_size=6), st.lists(_MESSAGE, max_size=1)),
    request=st.one_of(st.none(), _REQUEST),
    shape=st.sampled_from(["sse", "json", "list", "jsonl"]),
    junk=st.binary(max_size=12),
)
def test_core_rejects_anything_with_capture_errors_only(
    chunks: list[Any], request: Any, shape: str, junk: bytes
) -> None:
    """Whatever the bytes, in either dialect, the core answers with captures or a
    CaptureError, and every scenario it builds is valid and loads back to the captured
    frames."""
    body = json.dumps(request).encode() if request is not None and shape != "jsonl" else None
    if shape == "sse":
        named = (f"event: {c['type']}\n" if isinstance(c.get("type"), str) else "" for c in chunks)
        data = "".join(f"{name}data: {json.dumps(c)}\n\n" for name, c in zip(named, chunks)).encode() + junk
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


def _chat_sse(contents: list[str], fragments: list[str]) -> str:
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}}]} for c in contents]
    chunks.append({"choices": [{"index": 0, "finish_reason": "stop", "delta": {"tool_calls": [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "".join(fragments)}}]}}]})
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def _messages_sse(contents: list[str], fragments: list[str], given: Any = None) -> str:
    """A Messages stream: text, then one tool_use block starting with input ``given`` ({} by default)."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": c}} for c in contents),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f",
                                                                       "input": {} if given is None else given}},
        *({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": f}}
          for f in fragments),
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)


_CHAT = _chat_sse(["Hi"], ["{}"])
_MESSAGES = _messages_sse(["Hi"], ["{}"])
_MESSAGE_STOP = 'event: message_stop\ndata: {"type": "message_stop"}\n\n'

# a transcript of either dialect, and a warning its import must give
STREAM_ENDS = [
    ("openai-after-done", _CHAT + 'data: {"choices": []}\n\n', "event 4 comes after 'data: [DONE]'; ignored"),
    ("anthropic-after-stop", _MESSAGES + 'event: ping\ndata: {"type": "ping"}\n\n', "comes after message_stop; ignored"),
    ("openai-cut-off", _CHAT.removesuffix("data: [DONE]\n\n") + 'data: {"choi\n\n', "cut off inside event 3"),
    ("anthropic-cut-off", _MESSAGES.removesuffix(_MESSAGE_STOP) + 'data: {"ty\n\n', "cut off inside event 9"),
    ("openai-no-end", _CHAT.removesuffix("data: [DONE]\n\n"), "no 'data: [DONE]' at the end"),
    ("anthropic-no-end", _MESSAGES.removesuffix(_MESSAGE_STOP), "no message_stop at the end"),
    ("openai-glued", _CHAT.removesuffix("data: [DONE]\n\n").replace("\n\ndata: ", "\ndata: "),
     "no 'data: [DONE]' at the end"),
]


@pytest.mark.parametrize(("transcript", "warning"), [c[1:] for c in STREAM_ENDS], ids=[c[0] for c in STREAM_ENDS])
def test_a_transcripts_end_is_read_alike_in_both_dialects(transcript: str, warning: str) -> None:
    (capture,) = read_captures(transcript.encode(), "stream.sse").captures
    assert any(warning in w for w in capture.warnings), capture.warnings
    assert [f.content for f in capture.frames if isinstance(f, ContentFrame)] == ["Hi"]


# the input a tool_use block starts with, its input_json_delta fragments, and the fragments its frame replays
STARTING_INPUTS: list[tuple[Any, list[str], list[str]]] = [
    ({}, ['{"a": ', "1}"], ['{"a": ', "1}"]),
    ({"a": 1}, [], ['{"a": 1}']),
    ({"a": 1}, ['{"b": ', "2}"], ['{"b": ', "2}"]),  # clients read the fragments, not the starting input
    ({"a": 1}, [""], ['{"a": 1}', ""]),
    ("text", [], ['"text"']),
]


@pytest.mark.parametrize(("given", "fragments", "replayed"), STARTING_INPUTS)
def test_a_tool_use_blocks_input_is_what_a_client_reads(given: Any, fragments: list[str], replayed: list[str]) -> None:
    """Streamed or whole, a block's input becomes the frame's fragments the way the SDK
    reads the block: its starting input only when no fragment carries any text."""
    stream = _messages_sse(["Hi"], fragments, given).encode()
    (streamed,) = read_captures(stream, "stream.sse").captures
    whole = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
             "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": given}]}
    (message,) = read_captures(json.dumps(whole).encode(), "message.json").captures
    assert [list(f.input_json) for f in streamed.frames if isinstance(f, ToolUseFrame)] == [replayed]
    assert [list(f.input_json) for f in message.frames if isinstance(f, ToolUseFrame)] == [
        [] if given == {} else [json.dumps(given)]]
    if given != {}:
        said = "no input_json_delta followed" if not "".join(fragments) else "the starting input is not"
        assert any(said in w for w in streamed.warnings)


# dialect: the SSE writer, the request's tool (its description given), the tool frame's text
# pieces as read back from the YAML, and the pieces expected (a chat capture sends the arguments whole)
DIALECTS: dict[str, tuple[Callable[[list[str], list[str]], str], Callable[[str], dict[str, Any]],
                          Callable[[Any], list[str]], Callable[[list[str]], list[str]]]] = {
    "openai": (_chat_sse, lambda d: {"type": "function", "function": {"name": "f", "description": d}},
               lambda frame: [frame["tool_call"]["arguments"]], lambda fragments: ["".join(fragments)]),
    "anthropic": (_messages_sse, lambda d: {"name": "f", "description": d, "input_schema": {"type": "object"}},
                  lambda frame: frame["tool_use"]["input_json"], lambda fragments: fragments),
}


@pytest.mark.parametrize("dialect", list(DIALECTS))
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(contents=st.lists(_TEXT, min_size=1, max_size=5), fragments=st.lists(_TEXT, min_size=1, max_size=3), words=_TEXT)
def test_yaml_keeps_every_character_of_every_frame(
    dialect: str, contents: list[str], fragments: list[str], words: str
) -> None:
    write, tool, read_pieces, expected_pieces = DIALECTS[dialect]
    request = {"model": words, "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": words}],
               "tools": [tool(words)]}
    (capture,) = read_captures(write(contents, fragments).encode(), "text.sse",
                               request=json.dumps(request).encode()).captures
    imported = import_capture(capture, ImportOptions(imported_on="2025-01-01"))
    data = yaml.safe_load(imported.text)
    assert data["backend"]["frames"][:-1] == contents
    assert read_pieces(data["backend"]["frames"][-1]) == expected_pieces(fragments)
    assert data["client"]["request"]["messages"][0]["content"] == words
    assert data["client"]["request"]["tools"][0] == tool(words)


# --------------------------------------------------------------------------- text blocks and review


AROUND_SSE = "".join(
    f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                              "model": "claude-sonnet-4-5", "content": [], "stop_reason": None,
                                              "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Reading it first.\n\n"}},
        {"type": "content_block_delta", "index": 0, "delta": {
            "type": "text_delta", "text": '<function_calls>\n<invoke name="Read">\n<parameter name="file_path">'
                                          'setup.cfg</parameter>\n</invoke>\n</function_calls>'}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "\n\nThen the fix."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}},
        {"type": "message_stop"},
    ])


def test_text_around_a_leaked_call_keeps_room_for_its_separators(
    tmp_path: Path, reference_rig: tuple[str, str, frozenset[str]]
) -> None:
    """Text before and after a leaked call: a relay that keeps the blank lines around the
    call passes as well as one that trims them (the reference proxy): the proposal is the
    blocks in order with any white space between, not the trimmed text run together."""
    capture = tmp_path / "around.sse"
    capture.write_text(AROUND_SSE)
    target = tmp_path / "around.yaml"
    result = run(capture, "-o", target, "--id", "around", "--family", "captured")
    assert result.exit_code == 0, result.stderr
    scenario = load_scenario(target)
    pattern = scenario.expect.content_regex
    assert pattern is not None and scenario.expect.content is None
    faithful, trimmed = "Reading it first.\n\n\n\nThen the fix.", "Reading it first.Then the fix."
    assert re.search(pattern, faithful, re.DOTALL) and re.search(pattern, trimmed, re.DOTALL)
    assert not re.search(pattern, "Reading it first.", re.DOTALL)
    assert "expect.content_regex: the text blocks around the calls" in target.read_text()
    mock_url, proxy_url, features = reference_rig
    with MockControl(mock_url) as mock:
        played = play(scenario, settings=RunSettings(proxy_url=proxy_url, features=features, timeout=10), mock=mock,
                      profile=CLIENTS["anthropic"])
    assert not played.failures, [str(f) for _, f in played.failures]


def test_review_required_is_flagged_by_validate_and_run(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    result = run(CAPTURES / "anthropic.sse", "--request", CAPTURES / "anthropic.request.json",
                 "-o", folder / "captured" / "pending.yaml", "--id", "pending-case", "--family", "captured")
    assert result.exit_code == 0, result.stderr
    from harness.cli.main import main

    checked = CliRunner().invoke(main, ["validate", str(folder)])
    assert checked.exit_code == 0
    assert "warning: " in checked.stderr and "review: required: the expectation of pending-case" in checked.stderr
    assert "1 valid, 0 problem(s), 1 awaiting review" in checked.stdout
    listed = CliRunner().invoke(main, ["run", "--scenarios", str(folder), "--collect-only",
                                        "-p", "no:cacheprovider"])
    # The header wraps to the terminal's width: the message is read with its lines joined.
    assert "conformance: warning: 1 scenario(s) marked 'review: required' (an import's unchecked proposal): " \
           "pending-case" in " ".join(listed.output.split())
