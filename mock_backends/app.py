"""The mock backend's HTTP face: OpenAI routes under any prefix, and the control API.

Thin on purpose: selection and recording live in ``registry``, the answers in
``openai_replay``; this module only moves bytes between them and the socket.
Every answer, errors included, is in the shape OpenAI clients parse.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from harness.errors import ScenarioError
from harness.exchange import RecordedRequest
from harness.nonce import find_nonce
from harness.scenario import Scenario, parse_scenario
from mock_backends.openai_replay import completion, dumps, error_body, plan_reply, stream_events
from mock_backends.registry import Registry, Run, RunNotFound, UnknownScenario
from mock_backends.streaming import DroppedResponse, ReplayStream

logger = logging.getLogger("mock_backends")

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ROUTES_HELP = "the mock answers POST <any prefix>/chat/completions, GET <any prefix>/models and /_mock/ (control)"


def _json(data: Any, status: int = 200) -> Response:
    # Our own serializer: recorded bodies may hold NaN or lone surrogates, which
    # a strict encoder would turn into a 500.
    return Response(dumps(data), status_code=status, media_type="application/json")


def _error(status: int, message: str, code: str, *, param: str | None = None, **extra: Any) -> Response:
    body = error_body(message, code=code, param=param)
    body["error"].update(extra)
    return _json(body, status)


def _log(method: str, path: str, status: int, *, nonce: str | None = None, scenario: str | None = None,
         kind: str = "control") -> None:
    if logger.isEnabledFor(logging.INFO):
        logger.info("%s %s %s %s %d %s", method, path, nonce or "no nonce", scenario or "-", status, kind)


def _headers(raw: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in raw:
        name = key.decode("latin-1").lower()
        text = value.decode("latin-1")
        out[name] = f"{out[name]}, {text}" if name in out else text
    return out


def _parse_body(raw: bytes) -> tuple[Any, str | None, str | None]:
    """(parsed body, body text when not JSON, problem to answer 400 with)."""
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        return None, raw.decode("utf-8", "replace"), f"the request body is not valid JSON: {exc}"
    if not isinstance(body, dict):
        return body, None, f"the request body must be a JSON object, not {type(body).__name__}"
    return body, None, None


def create_app(scenarios: Iterable[Scenario] = ()) -> FastAPI:
    """The mock backend; ``scenarios`` are preloaded so runs can be armed by id."""
    registry = Registry(scenarios)
    created = int(time.time())
    app = FastAPI(
        title="toolcall-conformance mock backend", docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.registry = registry

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, StarletteHTTPException) else 400
        method, path = request.method, request.url.path
        _log(method, path, status)
        return _error(status, f"{method} {path}: {getattr(exc, 'detail', exc)}; {ROUTES_HELP}", "invalid_route")

    async def internal_error(request: Request, exc: Exception) -> Response:
        _log(request.method, request.url.path, 500)
        return _error(500, f"the mock backend failed: {type(exc).__name__}: {exc}", "mock_error",
                      type="server_error")

    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, http_error)
    app.add_exception_handler(Exception, internal_error)

    # ------------------------------------------------------------------ control API

    @app.post("/_mock/runs")
    async def arm(request: Request) -> Response:
        path = request.url.path
        body, _, problem = _parse_body(await request.body())
        if problem is None and ("scenario" in body) == ("scenario_id" in body):
            problem = 'give exactly one of "scenario" (a scenario mapping) or "scenario_id" (a preloaded id)'
        if problem is not None:
            _log("POST", path, 400)
            return _error(400, problem, "invalid_request")
        try:
            if "scenario_id" in body:
                if not isinstance(body["scenario_id"], str):
                    _log("POST", path, 400)
                    return _error(400, '"scenario_id" must be a string', "invalid_request", param="scenario_id")
                run = registry.arm_id(body["scenario_id"])
            else:
                run = registry.arm(parse_scenario(body["scenario"], where="scenario"))
        except UnknownScenario as exc:
            _log("POST", path, 404, scenario=str(body["scenario_id"]))
            return _error(404, str(exc), "scenario_not_found", param="scenario_id")
        except ScenarioError as exc:
            _log("POST", path, 400)
            problems = [str(p) for p in exc.problems]
            return _error(400, "invalid scenario: " + "; ".join(problems), "invalid_scenario", param="scenario",
                          problems=problems)
        _log("POST", path, 201, nonce=run.nonce, scenario=run.scenario.id)
        return _json({"nonce": run.nonce, "scenario_id": run.scenario.id}, 201)

    def _run_or_404(method: str, path: str, nonce: str) -> Run | Response:
        run = registry.get(nonce)
        if run is None:
            _log(method, path, 404, nonce=nonce)
            return _error(404, f"no armed run has nonce {nonce}", "run_not_found", param="nonce")
        return run

    @app.get("/_mock/runs/{nonce}")
    async def recorded(request: Request, nonce: str) -> Response:
        found = _run_or_404("GET", request.url.path, nonce)
        if isinstance(found, Response):
            return found
        _log("GET", request.url.path, 200, nonce=nonce, scenario=found.scenario.id)
        return _json({
            "nonce": found.nonce,
            "scenario_id": found.scenario.id,
            "requests": [r.to_json() for r in list(found.requests)],
            "received": found.received,
        })

    @app.delete("/_mock/runs/{nonce}")
    async def disarm(request: Request, nonce: str) -> Response:
        found = _run_or_404("DELETE", request.url.path, nonce)
        if isinstance(found, Response):
            return found
        registry.disarm(nonce)
        _log("DELETE", request.url.path, 204, nonce=nonce, scenario=found.scenario.id)
        return Response(status_code=204)

    @app.get("/_mock/health")
    async def health(request: Request) -> Response:
        _log("GET", request.url.path, 200)
        return _json({"status": "ok", "runs": len(registry), "preloaded": len(registry.preloaded)})

    # ------------------------------------------------------------------ OpenAI routes, any prefix

    async def chat_completion(request: Request) -> Response:
        scope = request.scope
        path = scope["path"]
        raw = await request.body()
        headers = _headers(scope["headers"])
        nonce = find_nonce(headers, raw)
        run: Run | None = None
        miss: RunNotFound | None = None
        try:
            run = registry.select(nonce)
        except RunNotFound as exc:
            miss = exc
        body, raw_text, problem = _parse_body(raw)
        now = time.time()
        scenario_id = None
        if run is not None:
            scenario_id = run.scenario.id
            run.record(RecordedRequest("POST", path, scope["query_string"].decode("latin-1"), headers, body,
                                       raw_text, now))
        if problem is not None:
            _log("POST", path, 400, nonce=nonce, scenario=scenario_id, kind="invalid body")
            return _error(400, problem, "invalid_json" if raw_text is not None else "invalid_request")
        if run is None:
            assert miss is not None
            _log("POST", path, miss.status, nonce=nonce, kind="unmatched")
            return _error(miss.status, str(miss), "scenario_not_found")
        replay = run.prepared.openai
        if replay is None:
            dialect = run.scenario.backend.dialect
            _log("POST", path, 400, nonce=nonce, scenario=scenario_id, kind="wrong dialect")
            return _error(400, f"run {run.nonce} replays scenario '{scenario_id}', whose backend speaks the "
                          f"{dialect} dialect, not OpenAI chat completions; this mock serves the OpenAI dialect "
                          "only", "wrong_dialect")
        fault = replay.fault
        if replay.error is not None:
            _log("POST", path, replay.error.status, nonce=nonce, scenario=scenario_id, kind="fault http_error")
            return Response(replay.error.body, replay.error.status, dict(replay.error.headers),
                            media_type=replay.error.media_type)
        reply = plan_reply(replay, body, completion_id="chatcmpl-" + os.urandom(16).hex(), created=int(now))
        kind = "stream" if reply.stream else "json"
        _log("POST", path, 200, nonce=nonce, scenario=scenario_id, kind=f"{kind} fault {fault.kind}" if fault else kind)
        if reply.stream:
            return ReplayStream(
                stream_events(replay, reply), write_bytes=replay.write_bytes, split_multibyte=replay.split_multibyte,
                write_pause=replay.write_pause, abort=replay.drops,
            )
        wait = replay.total_delay  # a non-streaming backend answers when all is generated
        if fault is not None and fault.kind == "stall":
            wait += fault.seconds or 0.0
        if wait > 0:
            await asyncio.sleep(wait)
        answer = dumps(completion(replay, reply))
        if fault is not None and fault.kind == "drop":
            return DroppedResponse(answer[: len(answer) // 2] if fault.mid_event else b"", len(answer))
        return Response(answer, media_type="application/json")

    async def models(request: Request) -> Response:
        _log("GET", request.url.path, 200, kind="models")
        return _json({
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": created, "owned_by": "toolcall-conformance"}
                for name in registry.model_names()
            ],
        })

    async def any_prefix(request: Request) -> Response:
        method = request.scope["method"]
        path = request.scope["path"]
        trimmed = path.rstrip("/")
        if trimmed.endswith("/chat/completions"):
            if method == "POST":
                return await chat_completion(request)
            allowed = "POST"
        elif trimmed.endswith("/models"):
            if method == "GET":
                return await models(request)
            allowed = "GET"
        else:
            _log(method, path, 404, kind="no route")
            return _error(404, f"no route for {method} {path}; {ROUTES_HELP}", "invalid_route")
        _log(method, path, 405, kind="wrong method")
        response = _error(405, f"{method} is not allowed on {path} (use {allowed}); {ROUTES_HELP}",
                          "method_not_allowed")
        response.headers["allow"] = allowed
        return response

    app.add_route("/{path:path}", any_prefix, methods=ALL_METHODS, include_in_schema=False)
    return app
