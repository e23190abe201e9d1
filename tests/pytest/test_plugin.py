"""The pytest plugin as users run it: inner pytest sessions (pytester) against the
bundled reference proxy and against small deliberately broken proxies served here."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpcore._backends.anyio  # noqa: F401  (see below)
import httpcore._backends.sync  # noqa: F401
import httpx
import pytest
import yaml
from click.testing import CliRunner
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from support import PATIENT_TIMEOUT, WHOLE_LIBRARY_FEATURES

from harness.cli.main import main
from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import CLIENTS
from harness.core.dialects.script import natural_reason, upstream_dialects
from harness.core.dialects.servers import SERVERS
from harness.core.nonce import NONCE_HEADER
from harness.core.scenario.loading import bundled_scenarios_dir
from harness.judge.rules import RULES
from mock_backends.app import create_app as create_mock
from reference_proxy.app import create_app as create_proxy
from reference_proxy.config import ProxyConfig
from support.library import load_library, one_generated_cell_per_case

# In-process pytester runs drop every module first imported during the run. httpx
# imports httpcore lazily and maps its exceptions by class, so httpcore must be
# imported before the first run, or later tests see unmapped httpcore errors.

ServeFn = Callable[[Any], Any]
LIBRARY = {s.id: s for s in load_library()}
LIBRARY_DIALECTS = {i: s.backend.dialect for i, s in LIBRARY.items()}
STREAMED = ("plain-native-single", "plain-text-multibyte")  # a pass-through proxy is right for these
NOT_STREAMED = "plain-text-non-stream"
NEEDS_LOOP_GUARD = "features-loop-guard"
# Two xdist workers, as `toolcall-conformance run` starts them: without assertion rewriting,
# since only scenarios are collected (each worker would otherwise parse and rewrite every
# harness module it imports again: seconds of CPU where bytecode is not written).
TWO_WORKERS = ("-n", "2", "--assert=plain")

LESS_THAN = """\
id: less-than-text
title: Prose with a less-than sign
source: synthetic
backend:
  dialect: openai
  frames: ["Use a < b to compare them."]
client:
  request:
    model: m
    stream: true
    messages: [{role: user, content: "How do I compare?"}]
    tools: [{type: function, function: {name: read_file, parameters: {type: object, properties: {path: {type: string}}}}}]
expect:
  content: "Use a < b to compare them."
  finish_reason: stop
"""


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    # A wide terminal: the lines matched below are whole (tests/pytest/test_causes.py checks the wrapping).
    monkeypatch.setenv("COLUMNS", "250")


def _library(pytester: pytest.Pytester, *ids: str, extra: dict[str, str] | None = None) -> Path:
    """A scenario folder in the pytester directory with copies of bundled scenarios."""
    target = pytester.path / "scenarios"
    target.mkdir(exist_ok=True)
    for scenario_id in ids:
        source = LIBRARY[scenario_id].path
        assert source is not None
        family = target / LIBRARY[scenario_id].family
        family.mkdir(exist_ok=True)
        shutil.copy(source, family / Path(source).name)
    for name, text in (extra or {}).items():
        (target / "extra").mkdir(exist_ok=True)
        (target / "extra" / name).write_text(text)
    return target


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------- broken proxies

EventFix = Callable[[bytes], bytes | None]


def passthrough(upstream: str, fix: EventFix) -> Starlette:
    """A proxy that forwards to the mock and rewrites (or drops) each SSE event."""

    async def chat(request: Request) -> Response:
        client = httpx.AsyncClient(timeout=30)
        upstream_request = client.build_request(
            "POST", f"{upstream}/v1/chat/completions", content=await request.body(),
            headers={"content-type": "application/json", NONCE_HEADER: request.headers.get(NONCE_HEADER, "")},
        )
        response = await client.send(upstream_request, stream=True)
        if "text/event-stream" not in response.headers.get("content-type", ""):
            body = await response.aread()
            await client.aclose()
            return Response(body, status_code=response.status_code, media_type="application/json")

        async def events() -> AsyncIterator[bytes]:
            pending = b""
            try:
                async for piece in response.aiter_bytes():
                    *done, pending = (pending + piece).split(b"\n\n")
                    for event in done:
                        fixed = fix(event)
                        if fixed is not None:
                            yield fixed + b"\n\n"
            finally:
                await response.aclose()
                await client.aclose()

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def drop_done(event: bytes) -> bytes | None:
    return None if event.strip() == b"data: [DONE]" else event


def lose_trailing_less_than(event: bytes) -> bytes | None:
    """Holds back a '<' at the end of a delta as a possible tag start, then forgets it."""
    if not event.startswith(b"data: {"):
        return event
    chunk = json.loads(event[6:])
    for choice in chunk.get("choices", ()):
        content = choice.get("delta", {}).get("content")
        if isinstance(content, str) and content.endswith("<"):
            choice["delta"]["content"] = content[:-1]
    return b"data: " + json.dumps(chunk).encode()


async def never_answers(request: Request) -> Response:
    while not await request.is_disconnected():
        await asyncio.sleep(0.05)
    return Response()


def _statement(rule_id: str) -> str:
    rule = RULES[rule_id]
    return f"rule {rule.id} [{rule.severity}, {rule.group}]: {rule.statement}"


# --------------------------------------------------------------------------- tests


def test_inert_without_conformance_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if line.startswith("conformance")]
    assert "tool-call conformance" not in result.stdout.str()


def test_reference_proxy_passes_and_reports(pytester: pytest.Pytester) -> None:
    folder = _library(pytester, *STREAMED, NOT_STREAMED, NEEDS_LOOP_GUARD)
    report_json, report_md = pytester.path / "out" / "r.json", pytester.path / "out" / "r.md"
    result = pytester.runpytest(
        "--conformance", "--conformance-scenarios", str(folder), "--conformance-features", "xml-client", "-rs", "-v",
        "--conformance-upstream-dialect", "natural", "--conformance-report-json", str(report_json), "--conformance-report-md", str(report_md),
    )
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines([
        "conformance: 4 scenario(s) against the bundled reference proxy at http://127.0.0.1:*/v1",
        "conformance: mock backend at http://127.0.0.1:*",
        "conformance: upstream dialect: each scenario's own (natural); timeout *",
        "conformance: claimed features: xml-client; *",
        "conformance::plain-native-single PASSED*",
        "*tool-call conformance*",
        "*plain * 3/3*",
        "SKIPPED * scenario requires feature loop-guard (pass --features loop-guard if your proxy has it)",
    ])
    data = json.loads(report_json.read_text())
    assert data["totals"] == {"passed": 3, "failed": 0, "xfailed": 0, "skipped": 1, "error": 0, "score": "3/3"}
    assert data["context"]["features"] == ["xml-client"] and data["context"]["reference proxy"] is True
    assert {s["scenario"]: s["outcome"] for s in data["scenarios"]} == {
        **{i: "passed" for i in (*STREAMED, NOT_STREAMED)}, NEEDS_LOOP_GUARD: "skipped"}
    markdown = report_md.read_text()
    assert "**Score: 3/3** passed, 1 skipped" in markdown
    assert f"- `{NEEDS_LOOP_GUARD}` skipped: scenario requires feature loop-guard" in markdown
    assert "Every rule passes for every scenario that ran (3)." in markdown and "`plain-native-single`" not in markdown


@pytest.mark.parametrize("upstream_flags", [(), ("--strict-upstream",)])
def test_failure_text_names_rule_statement_and_replay(pytester: pytest.Pytester, servers: ServeFn,
                                                      upstream_flags: tuple[str, ...]) -> None:
    """The replay line takes the run's options, a strict upstream's among them (replay plays it too)."""
    folder = _library(pytester, STREAMED[0])
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", str(folder), "--conformance-strict", "--tb=long",
                                *(f"--conformance-{flag[2:]}" for flag in upstream_flags))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "rules broken: SSE-004 (profile openai)",
        "plain-native-single: *",
        "=== streaming, as the scenario's request says ===",
        _statement("SSE-004"),
        "  the stream has no 'data: [DONE]' terminator",
        "  answer as received (HTTP 200, * bytes, byte * marked; *",
        "    >> * | data: {…,\"choices\":[[]{\"index\":0,\"delta\":{\"content\":\"\"},*\"finish_reason\":\"tool_calls\","
        "\"stop_reason\":null}]}",
        f"reproduce: *toolcall-conformance replay plain-native-single --proxy-url {proxy_url} "
        f"--scenarios {folder} --mock-url {mock_url} {' '.join((*upstream_flags, '--strict'))}",
        "FAILED conformance::plain-native-single - rules broken: SSE-004*",
    ])


@pytest.mark.parametrize("style", ["auto", "short", "line", "no"])
def test_every_tb_style_is_honoured(
    pytester: pytest.Pytester, servers: ServeFn, style: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default view groups the failures by cause (each finding and where it is, the
    replay command); ``--tb=short`` shows each failure compact, ``--tb=line`` one line per
    failure, ``--tb=no`` nothing; ``--tb=long`` (above) adds the raw answer around every
    finding. The short summary keeps to one line per failure also on CI, where pytest
    prints its messages untruncated."""
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("COLUMNS", "80")  # the grouped view as an 80-column terminal shows it
    folder = _library(pytester, STREAMED[0])
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", str(folder), "--conformance-strict", f"--tb={style}")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "answer as received" not in out and "rule SSE-004" not in out or style == "short"
    if style == "auto":
        result.stdout.fnmatch_lines(["*= 1 failed scenario(s), one cause =*", "SSE-004 broken in 1 scenario(s)",
                                     "  SSE-004 [[]spec]: *", "  plain-native-single:", "    SSE-004 at byte *",
                                     "   replay: *toolcall-conformance replay*", "     *--mock-url *",
                                     "more: -v (every scenario), --tb=short *"])
        assert "answer as received" not in out and "FAILED conformance::" not in out
        return
    if style == "short":
        result.stdout.fnmatch_lines([_statement("SSE-004"), "  the stream has no 'data: [DONE]' terminator",
                                     "  at byte *", "reproduce: *toolcall-conformance replay plain-native-single *",
                                     "the raw answer around each finding: --tb=long"])
        assert "answer as received" not in out
    elif style == "line":
        result.stdout.fnmatch_lines([f"{folder}/plain/native-single.yaml:1: plain-native-single: SSE-004"])
        assert "rule SSE-004" not in out
    else:
        assert "rule SSE-004" not in out and "native-single.yaml" not in out
    summary = "plain-native-single: SSE-004" if style == "line" else "rules broken: SSE-004 (profile openai)"
    result.stdout.fnmatch_lines([f"FAILED conformance::plain-native-single - {summary}"])


def test_selection_rerun_and_junit_with_the_harness_serving_the_mock(
    pytester: pytest.Pytester, servers: ServeFn
) -> None:
    folder = _library(pytester, *STREAMED, NOT_STREAMED)
    port = _free_port()
    proxy_url = servers(passthrough(f"http://127.0.0.1:{port}", drop_done)).url + "/v1"
    common = ["--conformance-proxy-url", proxy_url, "--conformance-mock-port", str(port), "--conformance-scenarios", str(folder), "-v"]
    junit = pytester.path / "junit.xml"
    first = pytester.runpytest(*common, "--conformance-strict", f"--junitxml={junit}")
    first.assert_outcomes(passed=1, failed=2)
    first.stdout.fnmatch_lines([
        f"conformance: mock backend (your proxy's upstream): http://127.0.0.1:{port}/v1",
    ])
    xml = junit.read_text()
    assert f'classname="conformance" name="{NOT_STREAMED}"' in xml
    assert xml.count("<failure") == 2 and "SSE-004" in xml

    rerun = pytester.runpytest(*common, "--conformance-strict", "--lf")
    rerun.assert_outcomes(failed=2, deselected=1)
    rerun.stdout.fnmatch_lines(["conformance::plain-native-single FAILED*", "conformance::plain-text-multibyte FAILED*"])

    # Without --strict a missing [DONE] is tolerated (spec severity): the same proxy passes.
    chosen = pytester.runpytest(*common, "-k", STREAMED[0])
    chosen.assert_outcomes(passed=1, deselected=2)
    by_mark = pytester.runpytest(*common[:-1], "-m", "native and plain", "--collect-only", "-q")
    assert [line for line in by_mark.stdout.lines if line.startswith("conformance::")] == [
        "conformance::plain-native-single"]


def test_xdist_workers_share_the_controllers_servers(pytester: pytest.Pytester) -> None:
    folder = _library(pytester, STREAMED[0], "qwen-tools-single-call")
    report = pytester.path / "r.json"
    port = _free_port()  # a worker starting its own mock on this port would fail to bind
    result = pytester.runpytest(*TWO_WORKERS, "--conformance", "--conformance-mock-port", str(port), "--conformance-scenarios", str(folder),
                                "--conformance-upstream-dialect", "natural", "--conformance-report-json", str(report))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"conformance: mock backend at http://127.0.0.1:{port}", "created: 2/2 workers",
                                 "*tool-call conformance*"])
    data = json.loads(report.read_text())
    assert sorted(s["scenario"] for s in data["scenarios"]) == [STREAMED[0], "qwen-tools-single-call"]


def test_xdist_workers_serve_their_own_when_no_port_is_fixed(pytester: pytest.Pytester) -> None:
    """The bundled reference proxy with a mock on any free port: each worker serves both, and the
    controller starts nothing (no one process plays every worker's exchanges)."""
    folder = _library(pytester, STREAMED[0], "qwen-tools-single-call")
    report = pytester.path / "r.json"
    result = pytester.runpytest(*TWO_WORKERS, "--conformance", "--conformance-scenarios", str(folder),
                                "--conformance-upstream-dialect", "natural", "--conformance-report-json", str(report))
    result.assert_outcomes(passed=2)
    header = " ".join(line.strip() for line in result.stdout.lines if line.startswith(("conformance", "  ")))
    assert "against the bundled reference proxy in each xdist worker, beside its own mock backend" in header
    assert "mock backend at" not in header
    data = json.loads(report.read_text())
    assert sorted(s["scenario"] for s in data["scenarios"]) == [STREAMED[0], "qwen-tools-single-call"]


def test_the_replay_line_names_the_upstream_a_client_of_another_api_was_played_against(pytester: pytest.Pytester) -> None:
    """A case in its own dialect played by a client of another API (an Ollama case as Codex): the
    replay line says the upstream, or replay would serve the case in the client's API instead."""
    source = LIBRARY["ollama-request-conversation"].path
    assert source is not None
    text = Path(source).read_text().replace("contains: SYS-7Q,", "contains: NOT-THERE,")
    folder = _library(pytester, extra={"request-conversation.yaml": text.replace(
        "id: ollama-request-conversation", "id: extra-request-conversation")})
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-client-profile",
                                "codex", "--conformance-upstream-dialect", "spread", "--conformance-strict",
                                "-p", "no:xdist")  # the broken upstream assertion is UP-001, a spec rule
    result.assert_outcomes(failed=1)
    joined = " ".join(line.strip() for line in result.stdout.lines)
    assert "--client-profile codex --upstream-dialect ollama" in joined


def test_known_failures_expected_stale_and_invalid(pytester: pytest.Pytester, servers: ServeFn) -> None:
    folder = _library(pytester, *STREAMED, NOT_STREAMED)
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    known = pytester.path / "known.yaml"
    known.write_text(
        "- {scenario: plain-native-single, rule: SSE-004, reason: we drop the terminator}\n"
        f"- {{scenario: {NOT_STREAMED}, reason: thought to be broken}}\n"
    )
    common = ["--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url, "--conformance-scenarios", str(folder), "--conformance-strict", "-rxf",
              "--tb=short"]
    result = pytester.runpytest(*common, "--conformance-expect-failures", str(known))
    result.assert_outcomes(xfailed=1, failed=2)
    result.stdout.fnmatch_lines([
        "[[]XPASS(strict)] listed in * but no longer failing:",
        f"  entry 2 (scenario {NOT_STREAMED}, any rule: thought to be broken)",
        "the proxy passes now: remove or narrow these entries in *known.yaml",
        "XFAIL conformance::plain-native-single - known failure: SSE-004: we drop the terminator",
        "FAILED conformance::plain-text-multibyte - rules broken: SSE-004*",
    ])
    known.write_text("- {scenario: plain-native-single, rule: SSE-4, reason: r}\n")
    bad = pytester.runpytest(*common, "--conformance-expect-failures", str(known))
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*invalid known-failures file:*", "*known.yaml:1: entry 1: unknown rule 'SSE-4'*"])


def _answers_once(mock_url: str) -> Starlette:
    """A proxy that relays its first request (the preflight) to the mock, then never answers again."""
    seen: list[int] = []

    async def chat(request: Request) -> Response:
        seen.append(1)
        if len(seen) > 1:
            return await never_answers(request)
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"{mock_url}/v1/chat/completions", content=await request.body(),
                                       headers={"content-type": "application/json",
                                                NONCE_HEADER: request.headers.get(NONCE_HEADER, "")})
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def test_a_hanging_proxy_fails_by_the_timeout_once(pytester: pytest.Pytester, servers: ServeFn) -> None:
    """The first scenario costs the timeout; the health probe after it hangs too, so the
    later scenarios get that verdict at once, and the summary says the cause once."""
    folder = _library(pytester, *STREAMED, NOT_STREAMED)
    mock_url = servers(create_mock()).url
    proxy_url = servers(_answers_once(mock_url)).url
    result = pytester.runpytest("--conformance-proxy-url", proxy_url + "/v1", "--conformance-mock-url", mock_url, "--conformance-scenarios", str(folder),
                                "--conformance-timeout", "0.4", "-p", "no:randomly", "--tb=short")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines([_statement("HTTP-002"), "  the run gave up after 0.4 s with no response; no request for it had reached the mock backend",
                                 "*--timeout 0.4*"])
    result.stdout.fnmatch_lines(["3 scenario(s): proxy unhealthy since scenario plain-native-single "
                                 "(the health probe hangs)"])


def test_a_miswired_run_stops_at_the_preflight_with_a_diagnosis(pytester: pytest.Pytester, servers: ServeFn) -> None:
    folder = _library(pytester, *STREAMED)

    async def not_found(request: Request) -> Response:
        return Response('{"detail":"Not Found"}', status_code=404, media_type="application/json")

    proxy_url = servers(Starlette(routes=[Route("/{path:path}", not_found, methods=["POST"])])).url + "/v1"
    port = _free_port()
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-port", str(port), "--conformance-scenarios", str(folder))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    for line in ("preflight: a plain request through the proxy never reached the mock backend (0 requests received)",
                 f"  posted to: POST {proxy_url}/chat/completions",
                 """  received: HTTP 404 '{"detail":"Not Found"}'""",
                 f"  the proxy's upstream should be the mock backend: http://127.0.0.1:{port}/v1"):
        assert line in output, output
    assert "--mock-port PORT" not in output, "never suggest an option the user gave"


def test_a_proxy_calling_another_dialect_upstream_stops_at_the_preflight_naming_it(
        pytester: pytest.Pytester, servers: ServeFn) -> None:
    """A forwarder that sends chat requests to the mock's Responses route: the mock's refusal
    is read as the diagnosis it is (which route, which dialect, which option), in a few lines,
    instead of every scenario failing the same way."""
    folder = _library(pytester, *STREAMED)
    mock_url = servers(create_mock()).url
    seen: list[str] = []

    async def to_responses(request: Request) -> Response:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        seen.append(json.loads(await request.body()).get("model", ""))
        async with httpx.AsyncClient(timeout=PATIENT_TIMEOUT) as client:
            answer = await client.post(f"{mock_url}/v1/responses", content=await request.body(), headers=headers)
        return Response(answer.content, status_code=answer.status_code, media_type="application/json")

    proxy_url = servers(Starlette(routes=[Route("/{path:path}", to_responses, methods=["POST"])])).url + "/v1"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", str(folder))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = result.stdout.str() + result.stderr.str()
    assert ("preflight: the proxy called the mock's OpenAI Responses route (POST /v1/responses), but the run "
            "expects its upstream to speak OpenAI Chat Completions (/chat/completions)") in output, output
    assert ("your proxy calls the OpenAI Responses API upstream: pass --upstream-dialect responses "
            "(pytest: --conformance-upstream-dialect responses)") in output
    assert output.count("your proxy calls the OpenAI Responses API upstream") <= 2  # pytest echoes an exit reason
    # the model a routing proxy would route: a scenario's own, not a made-up name
    assert seen and seen[0] != "preflight" and seen[0] in {LIBRARY[i].client.request.get("model") for i in STREAMED}


def test_rechunk_shrinks_to_the_boundary_the_proxy_breaks_on(pytester: pytest.Pytester, servers: ServeFn) -> None:
    folder = _library(pytester, extra={"less-than.yaml": LESS_THAN})
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, lose_trailing_less_than)).url + "/v1"
    common = ["--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url, "--conformance-scenarios", str(folder)]
    result = pytester.runpytest(*common, "--conformance-rechunk", "1", "--conformance-rechunk-seed", "7", "--tb=short")
    result.assert_outcomes(failed=1)
    assert "=== streaming, as the scenario's request says ===" not in result.stdout.str()  # as written: fine
    cut = "Use a <".__len__()
    result.stdout.fnmatch_lines([
        "conformance: 1 re-chunked variant(s) per streaming scenario, seed 7 (reproduce with --rechunk-seed 7)",
        "=== re-chunk variant 0 (per-char, seed 7, 25 split(s)) ===",
        _statement("TEXT-001"),
        "re-chunk seed 7, variant 0 (per-char)",
        "smallest split still breaking TEXT-001*: 1 boundary(ies), minimal; * re-run(s)",
        "  frame 1: 'Use a <'",
        "  frame 2: ' b to compare them.'",
        f"  boundary at character {cut}: …'Use a <' ‖ ' b to compare th'…",
        "reproduce: *toolcall-conformance replay less-than-text * --rechunk-seed 7 --rechunk-variant 0",
        f"reproduce the smallest split: *toolcall-conformance replay less-than-text * --split {cut}",
    ])


def test_unreachable_proxy_stops_the_run_with_its_url(pytester: pytest.Pytester) -> None:
    folder = _library(pytester, STREAMED[0])
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        result = pytester.runpytest("--conformance-proxy-url", url, "--conformance-scenarios", str(folder))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: cannot connect to the proxy under test at {url} (*); is it running*"])
    assert (result.stdout.str() + result.stderr.str()).count("cannot connect") == 1  # said once


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    """The scenario items a bundled run collects, without the real servers' and real clients'
    samples (each checked in test_bundled_library_is_the_default)."""
    result = pytester.runpytest("--conformance", "--collect-only", "-q", *args)
    assert result.ret == pytest.ExitCode.OK
    everything = [line.removeprefix("conformance::") for line in result.stdout.lines if line.startswith("conformance::")]
    real = {p.name for p in CLIENTS.values() if p.real}
    return [c for c in everything if not c.endswith("-server]") and not real & set(c.rpartition("[")[2].rstrip("]").split(","))]


def test_bundled_library_is_the_default(pytester: pytest.Pytester) -> None:
    """Without --proxy-url every dialect pair is played, spread over the library: each scenario
    under its own id in its own dialect, and as ``id[<other>-upstream]`` in one other it can be
    served in, the same one in every run (a case whose client never finishes its request only in
    its own); each real server and real client on a sample."""
    result = pytester.runpytest("--conformance", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    everything = [line.removeprefix("conformance::") for line in result.stdout.lines if line.startswith("conformance::")]
    # each real server's profile on a sample of cases (docs/mock-backend.md, "Upstream server profiles")
    served = [c for c in everything if c.endswith("-server]")]
    assert {c[c.rindex("[") + 1 : -len("-server]")].split(",")[-1] for c in served} == set(SERVERS)
    # each real client on a fixed part of the library (items ``id[<client>]``)
    real = {p.name for p in CLIENTS.values() if p.real}
    assert real == {t for c in everything for t in c.rpartition("[")[2].rstrip("]").split(",")} & real
    collected = _collected(pytester)
    library = load_library()
    assert len(library) == len(list(bundled_scenarios_dir().rglob("*.yaml")))
    own = [c for c in collected if "[" not in c]
    crossed = [c for c in collected if "[" in c]
    assert sorted(own) == sorted(s.id for s in library)
    by_id = {s.id: s for s in library}
    others: dict[str, list[str]] = {}
    for item in crossed:
        scenario, _, upstream = item.partition("[")
        others.setdefault(scenario, []).append(upstream.removesuffix("-upstream]"))
    for s in library:
        servable = [d.name for d, why in upstream_dialects(s).items() if why is None and d is not s.backend.dialect]
        if not servable or s.client.truncate_body:  # a request never finished reaches no upstream
            assert s.id not in others
        else:
            assert len(others[s.id]) == 1 and others[s.id][0] in servable, (s.id, others.get(s.id), servable)
    # every dialect is some scenario's other upstream, and the choice is the same in every run
    assert {u for ups in others.values() for u in ups} == set(DIALECTS)
    assert _collected(pytester) == collected
    assert len(crossed) < len(library) * (len(DIALECTS) - 1) // 2  # spread, not every pair for every scenario
    assert {by_id[i].backend.dialect.name for i in others} >= {"openai", "anthropic"}


def test_upstream_dialect_all_plays_every_scenario_in_every_dialect(pytester: pytest.Pytester) -> None:
    """``--upstream-dialect all``: each scenario under its own id, and as ``id[<other>-upstream]``
    with each other dialect."""
    collected = _collected(pytester, "--conformance-upstream-dialect", "all")
    library = load_library()
    assert sorted(collected) == sorted([s.id for s in library] +
                                       [f"{s.id}[{u}-upstream]" for s in library for u in DIALECTS
                                        if u != s.backend.dialect.name])


def test_run_command_prints_the_score_card_and_fails_on_failure(pytester: pytest.Pytester, servers: ServeFn) -> None:
    folder = _library(pytester, STREAMED[0])
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    (pytester.path / "test_unrelated.py").write_text("def test_other():\n    assert False\n")
    pytester.makeini("[pytest]\n")  # a user's folder that says nothing of pytest-asyncio
    pytester.chdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = CliRunner().invoke(main, ["run", "--proxy-url", proxy_url, "--mock-url", mock_url,
                                           "--scenarios", str(folder), "--strict", "-p", "no:cacheprovider"])
    assert result.exit_code == 1, result.output
    pytest.LineMatcher(result.output.splitlines()).fnmatch_lines([
        "conformance: 1 scenario(s) against your proxy at *",  # the run's header; pytest's own left out (-q)
        "SSE-004 broken in 1 scenario(s)", "  plain-native-single:",
        "*tool-call conformance*", "  plain * 0/1  1 failed", "1 failed in *",
    ])
    assert "rootdir:" not in result.output and "platform " not in result.output
    assert "test_other" not in result.output  # only the conformance suite is collected
    # pytest-asyncio, installed beside the harness but with nothing to run, does not warn
    assert not [w for w in caught if "is unset" in str(w.message)]


@pytest.mark.parametrize("spelling", ["xml-client", "vtc"])
def test_an_explicit_xml_client_profile_claims_the_xml_client_feature(
    pytester: pytest.Pytester, servers: ServeFn, spelling: str
) -> None:
    """``--client-profile xml-client`` says the proxy serves XML-reading clients: the xml-client cases run
    without ``--features xml-client``, and the header says where the claim came from. ``vtc`` is the
    profile's old spelling, read as ``xml-client``."""
    folder = _library(pytester, *STREAMED)
    mock_url = servers(create_mock()).url
    proxy_url = servers(create_proxy(ProxyConfig(upstream=f"{mock_url}/v1", log_level="warning"))).url + "/v1"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url, "--conformance-scenarios", str(folder),
                                "--conformance-client-profile", spelling)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "conformance: claimed features: xml-client (xml-client implied by --client-profile xml-client); client profile: xml-client; *",
        "every rule passes for every scenario that ran (2)",
    ])


def test_a_run_that_checks_nothing_fails_and_says_why(pytester: pytest.Pytester) -> None:
    """Every scenario skipped is not a pass: the exit status is non-zero and the score
    card names the most common reason instead of saying that everything passes."""
    folder = _library(pytester, *STREAMED, NEEDS_LOOP_GUARD)
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-client-profile", "anthropic",
                                "--conformance-upstream-dialect", "natural")
    result.assert_outcomes(skipped=3)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines([
        "nothing was checked: all 3 scenario(s) were skipped; most often (3 of them): not meaningful under client "
        "profile anthropic *",
    ])
    assert "passes" not in result.stdout.str()


# Scenarios the reference proxy is right to skip, with the reason the run gives: none,
# since it claims every feature and conflicts with no case.
JUSTIFIED_SKIPS: dict[str, str] = {
    # Only a translating proxy can be played on it: test_a_case_only_a_translating_proxy_can_be_played_on_… plays it.
    "faults-anthropic-broken-native-arguments": "a case for a proxy that translates (Anthropic Messages cannot say its "
                                                "backend): played with --upstream-dialect openai or responses",
}


def _for_another_upstream() -> dict[str, str]:
    """The cases whose backend only another dialect than their client's can say (a Kiro
    stream's habits), skipped by a natural run with the reason it gives."""
    out: dict[str, str] = {}
    for scenario in LIBRARY.values():
        why = natural_reason(scenario, scenario.client.profile.answers)
        if why is not None:
            out[scenario.id] = why
    return out


@pytest.mark.long
@pytest.mark.parametrize(("marks", "rechunk"), [("not generated", 5), ("generated", 2)], ids=["hand-written", "generated"])
def test_whole_library_passes_the_reference_proxy_rechunked_on_two_workers(
    pytester: pytest.Pytester, marks: str, rechunk: int
) -> None:
    """The bundled library against the bundled reference proxy with every rule enforced
    (--strict), every streaming case also re-split, on two xdist workers: nothing fails,
    and nothing is skipped but the cases listed above. Two halves, so that the project's
    own parallel run can spread them; the generated cells already cut every delimiter
    across frames by design, so they are re-split twice here (five ways: the command in
    docs/scenarios.md, "Generated cases")."""
    report = pytester.path / "r.json"
    result = pytester.runpytest(*TWO_WORKERS, "--conformance", "--conformance-strict", "--conformance-rechunk", str(rechunk),
                                "--conformance-timeout", str(PATIENT_TIMEOUT),
                                "--conformance-features", ",".join(sorted(WHOLE_LIBRARY_FEATURES)),
                                "--conformance-rechunk-seed", "20261123", "-p", "no:cacheprovider", "-m", marks,
                                "--conformance-report-json", str(report), "--conformance-upstream-dialect", "natural",
                                "--conformance-upstream-profile", "none")  # the library's own cases, counted below
    data = json.loads(report.read_text())
    broken = {s["scenario"]: s["failures"] for s in data["scenarios"] if s["outcome"] not in ("passed", "skipped")}
    assert not broken, json.dumps(broken, indent=1)[:4000]
    assert result.ret == pytest.ExitCode.OK
    generated = marks == "generated"
    assert len(data["scenarios"]) == sum(("generated" in s.tags) == generated for s in LIBRARY.values())
    skipped = {s["scenario"]: s["reason"] for s in data["scenarios"] if s["outcome"] == "skipped"}
    justified = {**JUSTIFIED_SKIPS, **_for_another_upstream()}
    assert skipped == {k: v for k, v in justified.items() if ("generated" in LIBRARY[k].tags) == generated}


def test_known_failures_written_from_a_run_then_pruned_when_fixed(pytester: pytest.Pytester,
                                                                 servers: ServeFn) -> None:
    """The gate without a script: a run writes its failures as the known-failures file;
    with that file the same proxy passes; an edited reason survives a rewrite; once the
    proxy is fixed, the update mode drops the entries that pass now and says which."""
    folder = _library(pytester, *STREAMED, NOT_STREAMED)
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    known, again = pytester.path / "ci" / "known.yaml", pytester.path / "again.yaml"
    broken = ["--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url, "--conformance-strict",
              "--conformance-scenarios", str(folder)]
    first = pytester.runpytest(*broken, "--conformance-write-known-failures", str(known))
    first.assert_outcomes(passed=1, failed=2)
    first.stdout.fnmatch_lines([f"1 known failure(s) written to {known} (2 failed scenario(s), 1 cause(s))"])
    entries = yaml.safe_load(known.read_text())
    # one cause in two scenarios of a family: one entry, a glob over the family, its reason from the failure
    assert entries == [{"scenario": "plain-*", "rule": "SSE-004",
                        "reason": "SSE-004: the stream has no 'data: [DONE]' terminator"}]

    gated = pytester.runpytest(*broken, "--conformance-expect-failures", str(known))
    gated.assert_outcomes(passed=1, xfailed=2)
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["0 new failures, 0 entries pass now (remove them), 1 still failing as known"])

    known.write_text(yaml.safe_dump([{**entries[0], "reason": "we drop the terminator"}]))
    rewritten = pytester.runpytest(*broken, "--conformance-expect-failures", str(known),
                                   "--conformance-write-known-failures", str(again))
    assert rewritten.ret == pytest.ExitCode.OK
    assert [e["reason"] for e in yaml.safe_load(again.read_text())][0] == "we drop the terminator"

    fixed = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-strict",
                               "--conformance-upstream-dialect", "natural",
                               "--conformance-update-known-failures", str(known))
    fixed.assert_outcomes(passed=3)
    fixed.stdout.fnmatch_lines([f"{known}: 1 entry that pass now dropped, 0 kept",
                                "  dropped entry 1 (scenario plain-*, rule SSE-004: we drop the terminator)",
                                "0 new failures, 1 entry passes now (dropped from the file), 0 still failing as known"])
    assert yaml.safe_load(known.read_text()) == []


def test_record_writes_har_files_and_one_html_report(pytester: pytest.Pytester, servers: ServeFn) -> None:
    """``--record DIR``: each item's exchanges as HAR (the client's request and the
    proxy's answer, then what reached the mock and what it sent back), and one HTML
    file with the score card, the failure's transcript and linked rule ids."""
    folder = _library(pytester, STREAMED[0], NOT_STREAMED)
    mock_url = servers(create_mock()).url
    proxy_url = servers(passthrough(mock_url, drop_done)).url + "/v1"
    record = pytester.path / "record"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", str(folder), "--conformance-strict",
                                "--conformance-record", str(record))
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([f"record: 2 HAR file(s) in {record / 'har'}; report {record / 'report.html'}"])
    log = json.loads((record / "har" / f"{STREAMED[0]}.har").read_text())["log"]
    client, upstream = log["entries"][0], log["entries"][1]
    assert client["request"]["url"] == f"{proxy_url}/chat/completions"
    assert json.loads(client["request"]["postData"]["text"])["stream"] is True
    assert "data: {" in client["response"]["content"]["text"] and "[DONE]" not in client["response"]["content"]["text"]
    assert upstream["request"]["url"] == f"{mock_url}/v1/chat/completions"
    assert upstream["response"]["status"] == 200 and "data: [DONE]" in upstream["response"]["content"]["text"]
    assert len(log["entries"]) == 4  # streamed and not, each with its upstream request
    page = (record / "report.html").read_text()
    assert f"<b>{STREAMED[0]}</b> failed" in page and "the stream has no &#x27;data: [DONE]&#x27; terminator" in page
    assert '<a href="#rule-SSE-004">SSE-004</a>' in page and '<tr id="rule-SSE-004">' in page
    assert "answer as received" in page  # the full transcript, whatever --tb says
    assert "<script" not in page and "<link" not in page and "src=" not in page  # nothing to fetch
@pytest.mark.long
def test_whole_library_passes_the_translating_reference_proxies(pytester: pytest.Pytester) -> None:
    """Every scenario served in the other upstream dialect than its own (an Anthropic client
    in front of an OpenAI upstream, and the reverse), through the reference proxy that
    translates, with every rule enforced: nothing fails, and what is skipped is a scenario
    that cannot be said in the other dialect, with that reason. Translating does not depend
    on the format a call was rescued from, so of the generated cells one per case id is
    played (``one_generated_cell_per_case``)."""
    report = pytester.path / "r.json"
    played = one_generated_cell_per_case()
    files = [arg for i in sorted(played) for arg in ("--conformance-scenarios", str(LIBRARY[i].path))]
    result = pytester.runpytest(*TWO_WORKERS, "--conformance", "--conformance-strict", "-p", "no:cacheprovider", *files,
                                "--conformance-upstream-dialect", "all", "--conformance-upstream-profile", "none",
                                "-k", "openai-upstream] or anthropic-upstream]",
                                "--conformance-timeout", str(PATIENT_TIMEOUT),
                                "--conformance-features", ",".join(sorted(WHOLE_LIBRARY_FEATURES)),
                                "--conformance-report-json", str(report))
    data = json.loads(report.read_text())
    broken = {s["scenario"]: s["failures"] for s in data["scenarios"] if s["outcome"] not in ("passed", "skipped")}
    assert not broken, json.dumps(broken, indent=1)[:4000]
    assert result.ret == pytest.ExitCode.OK
    # a scenario of either dialect is played in the other; one of a third dialect in both
    assert len(data["scenarios"]) == sum(1 if LIBRARY_DIALECTS[i].name in ("openai", "anthropic") else 2 for i in played)
    assert {s["upstream"] for s in data["scenarios"]} == {"openai", "anthropic"}
    for s in data["scenarios"]:
        assert s["upstream"] != LIBRARY_DIALECTS[s["scenario"]].name
        if s["outcome"] == "skipped":
            assert s["reason"].startswith("only meaningful with its own upstream dialect"), s
    assert sum(s["outcome"] == "passed" for s in data["scenarios"]) >= len(played) * 3 // 4


def test_formats_a_proxy_does_not_claim_are_coverage_not_failures(pytester: pytest.Pytester) -> None:
    """--conformance-formats hermes: the other format's cases are not played, not failed and not
    passed; the score card says how many formats the proxy rescues."""
    folder = _library(pytester, "hermes-arguments-as-string", "qwen-tools-single-call", STREAMED[0])
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect",
                                "natural", "--conformance-formats", "hermes", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines([
        "coverage: rescues 1 of the 2 formats this run has cases of (hermes); not claimed: qwen-tools",
        "*qwen-tools-single-call: skipped: not claimed: the proxy does not claim to rescue the qwen-tools format*",
    ])


def test_a_case_relying_on_another_format_is_not_claimed_without_it(pytester: pytest.Pytester) -> None:
    """A plain case whose verdict needs the Hermes markup rescued (``rescues: [hermes]``) is not
    played for a proxy that claims no format (a relaying proxy is not failed for relaying it)."""
    folder = _library(pytester, "plain-empty-tool-call", STREAMED[0])
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect",
                                "natural", "--conformance-formats", "none", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([
        "*plain-empty-tool-call: skipped: not claimed: the proxy does not claim to rescue the hermes format*",
    ])


@pytest.mark.parametrize(("family", "claimed", "rescues", "skipped_for"), [
    ("plain", None, ("hermes",), None),
    ("plain", frozenset({"hermes"}), ("hermes",), None),
    ("plain", frozenset(), ("hermes",), "hermes"),
    ("faults", frozenset({"hermes"}), ("hermes", "invoke-xml"), "invoke-xml"),
    ("qwen-tools", frozenset({"hermes"}), (), "qwen-tools"),
    ("plain", frozenset(), (), None),
])
def test_unclaimed_reason_names_the_first_format_not_claimed(
    family: str, claimed: frozenset[str] | None, rescues: tuple[str, ...], skipped_for: str | None
) -> None:
    from harness.generate.coverage import unclaimed_reason

    reason = unclaimed_reason(family, claimed, rescues)
    assert (reason is None) == (skipped_for is None)
    if skipped_for is not None:
        assert f"rescue the {skipped_for} format" in (reason or "")


def test_a_spec_only_case_is_played_with_strict_only(pytester: pytest.Pytester) -> None:
    """``spec_only: true`` (a request the spec says to refuse, no client breaks either way): skipped
    with the reason by default, played with --strict."""
    folder = _library(pytester, "bad-input-openai-unknown-role")
    result = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect",
                                "natural", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*bad-input-openai-unknown-role: skipped: a case only the spec decides*--strict*"])
    strict = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect",
                                "natural", "--conformance-strict")
    strict.assert_outcomes(passed=1)


def test_a_case_only_a_translating_proxy_can_be_played_on_waits_for_the_upstream_to_be_named(
        pytester: pytest.Pytester) -> None:
    """A Messages client's case whose backend a Messages upstream cannot say (a native call whose
    arguments are no JSON object) is skipped with the reason in the natural mode, where the proxy
    is taken to call its client's own API, and played once the upstream dialect is named."""
    folder = _library(pytester, "faults-anthropic-broken-native-arguments", "faults-openai-broken-native-arguments")
    natural = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder),
                                 "--conformance-upstream-dialect", "natural", "-rs")
    natural.assert_outcomes(passed=1, skipped=1)
    natural.stdout.fnmatch_lines(["*faults-anthropic-broken-native-arguments*: skipped: a case for a proxy that "
                                  "translates (Anthropic Messages cannot say its backend): played with "
                                  "--upstream-dialect openai or responses*"])
    named = pytester.runpytest("--conformance", "--conformance-scenarios", str(folder),
                               "--conformance-upstream-dialect", "openai", "--conformance-strict")
    named.assert_outcomes(passed=2)


def test_skipped_scenarios_are_counted_by_reason_unless_verbose(pytester: pytest.Pytester) -> None:
    """After the score card, scenarios skipped for one reason are one line with their count; with
    pytest's -v each is listed with its reason."""
    qwen = sorted(i for i, s in LIBRARY.items() if s.family == "qwen-tools" and "generated" not in s.tags)[:2]
    folder = _library(pytester, *qwen, STREAMED[0])
    common = ("--conformance", "--conformance-scenarios", str(folder), "--conformance-upstream-dialect", "natural",
              "--conformance-formats", "none")
    reason = "not claimed: the proxy does not claim to*"  # the rest wrapped to the terminal's width
    folded = pytester.runpytest(*common)
    folded.assert_outcomes(passed=1, skipped=2)
    folded.stdout.fnmatch_lines([f"  2 scenarios skipped: {reason}", "  (-v lists each skipped scenario)"])
    assert not any(f"{i}: skipped" in line for line in folded.outlines for i in qwen)
    listed = pytester.runpytest(*common, "-v")
    listed.stdout.fnmatch_lines([f"  {qwen[0]}: skipped: {reason}", f"  {qwen[1]}: skipped: {reason}"])
