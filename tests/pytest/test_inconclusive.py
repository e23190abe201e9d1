"""A scenario played while the proxy is down is played again once it answers, or reported inconclusive
with the cause; never counted as failed (inner pytest sessions, as users run the plugin)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpcore._backends.anyio  # noqa: F401  (imported before the in-process runs, as test_plugin explains)
import httpcore._backends.sync  # noqa: F401
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harness.core.nonce import NONCE_HEADER
from harness.run import health
from mock_backends.app import create_app as create_mock
from support.library import load_library

ServeFn = Callable[[Any], Any]
LIBRARY = {s.id: s for s in load_library()}
CASES = ("plain-text-non-stream", "plain-native-single", "plain-text-multibyte")


@pytest.fixture(autouse=True)
def _quick(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.setattr(health, "RECOVERY_WAITS", (0.05, 0.05, 0.05))


def _library(pytester: pytest.Pytester) -> Path:
    target = pytester.path / "scenarios" / "plain"
    target.mkdir(parents=True)
    for scenario_id in CASES:
        source = LIBRARY[scenario_id].path
        assert source is not None
        shutil.copy(source, target / Path(source).name)
    return target.parent


def down_between(mock_url: str, first: int, last: int | None) -> Starlette:
    """A relay to the mock that answers 503 (with no Retry-After: no word of when it is back) to its
    requests number ``first`` to ``last`` (counted from 1; None: for good), as a crashed backend pool or
    an open circuit breaker without a cool-down header does."""
    seen: list[int] = []

    async def chat(request: Request) -> Response:
        seen.append(1)
        if len(seen) >= first and (last is None or len(seen) <= last):
            return Response('{"error": {"message": "no healthy upstream", "type": "server_error", "param": null, '
                            '"code": null}}', status_code=503, media_type="application/json")
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.post(f"{mock_url}/v1/chat/completions", content=await request.body(),
                                       headers={"content-type": "application/json",
                                                NONCE_HEADER: request.headers.get(NONCE_HEADER, "")})
        return Response(answer.content, status_code=answer.status_code,
                        media_type=answer.headers.get("content-type", "application/json"))

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def _run(pytester: pytest.Pytester, servers: ServeFn, first: int, last: int | None) -> tuple[Any, dict[str, Any]]:
    folder = _library(pytester)
    mock_url = servers(create_mock()).url
    proxy_url = servers(down_between(mock_url, first, last)).url + "/v1"
    report = pytester.path / "r.json"
    result = pytester.runpytest("--conformance-proxy-url", proxy_url, "--conformance-mock-url", mock_url,
                                "--conformance-scenarios", str(folder), "--conformance-report-json", str(report),
                                "-p", "no:randomly", "-rs")
    return result, json.loads(report.read_text())


def test_a_case_played_while_the_proxy_was_down_is_played_again_once_it_answers(
        pytester: pytest.Pytester, servers: ServeFn) -> None:
    # 1: preflight; 2: the first case's request (503, so it fails); 3 and 4: the health probe and the first
    # probe of the wait (503); from 5 on the proxy answers again, and the case is played again.
    result, report = _run(pytester, servers, 2, 4)
    result.assert_outcomes(passed=3)
    items = {i["scenario"]: i for i in report["scenarios"]}
    again = [n for i in items.values() for n in i["notes"] if n.startswith("played again")]
    assert len(again) == 1 and "proxy unhealthy since scenario" in again[0]


def test_cases_played_while_the_proxy_stays_down_are_inconclusive_not_failed(
        pytester: pytest.Pytester, servers: ServeFn) -> None:
    result, report = _run(pytester, servers, 2, None)
    # The case after which the proxy went down keeps its failure (and the cause); the later ones were
    # played against a proxy that refuses everything: inconclusive, with the cause, never failed.
    result.assert_outcomes(failed=1, skipped=2)
    outcomes = sorted(i["outcome"] for i in report["scenarios"])
    assert outcomes == ["failed", "inconclusive", "inconclusive"]
    later = [i for i in report["scenarios"] if i["outcome"] == "inconclusive"]
    assert all(i["failures"] == [] and i["reason"].startswith("inconclusive: proxy unhealthy since scenario")
               for i in later)
    result.stdout.fnmatch_lines(["*inconclusive: proxy unhealthy since scenario *(a plain request got HTTP 503)*"])
