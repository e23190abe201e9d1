"""The mock backend's HTTP face: a route per wire dialect under any prefix, and the control API.

Thin on purpose: selection and recording live in ``registry``, each dialect's route
(its request checks, error shape and answer planning) in ``routes``, the answers in
the core's ``harness.core.replay`` planners; this module only moves bytes between them and
the socket. Every answer, errors included, is in the shape the route's clients parse.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from harness.core.dialects import OPENAI, WireDialect
from harness.core.errors import ScenarioError
from harness.core.exchange import RecordedRequest
from harness.core.nonce import find_nonce
from harness.core.replay.fault_rate import FaultRate
from harness.core.replay.openai import error_body
from harness.core.replay.servers import as_served
from harness.core.replay.wire import Delivery, Event, dumps
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Backend, Scenario
from mock_backends.conversation import pick_step, record_probe
from mock_backends.lockstep import Lockstep
from mock_backends.registry import AnswerLog, Registry, Run, RunNotFound, Selection, UnknownScenario
from mock_backends.routes import ROUTES
from mock_backends.streaming import DroppedResponse, Logged, ReplayStream, quiet_deliberate_drops

logger = logging.getLogger("mock_backends")

ALL_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
ROUTES_HELP = (
    "the mock answers " + "".join(f"POST <any prefix>{wire.endpoint} ({wire.title}), " for wire in ROUTES)
    + "GET <any prefix>/models and /_mock/ (control)"
)

# Every answer tied to a run names it, so a request that reached the mock without a nonce can be traced.
RUN_HEADER = "X-Conformance-Run"
FAULT_HEADER = "X-Conformance-Fault"  # the kind of a fault drawn by the fault rate
SELECTED_BY_HEADER = "X-Conformance-Selected-By"
_TOOK = {"queue": " (no nonce: oldest waiting run)", "only": " (no nonce: the only armed run)"}



def _json(data: Any, status: int = 200) -> Response:
    # Our own serializer: recorded bodies may hold NaN or lone surrogates, which
    # a strict encoder would turn into a 500.
    return Response(dumps(data), status_code=status, media_type="application/json")


def _error(status: int, message: str, code: str, *, param: str | None = None, **extra: Any) -> Response:
    body = error_body(message, code=code, param=param)
    body["error"].update(extra)
    return _json(body, status)


def _route_error(dialect: WireDialect, status: int, message: str, code: str, *, param: str | None = None,
                 api_type: str | None = None, server: bool = False) -> Response:
    """An error in the route's dialect. OpenAI: ``code`` names the problem. Anthropic: the
    error type is the API's own (``api_type``) or, for problems only the mock has, ``code``."""
    return _json(ROUTES[dialect].error(message, code, param=param, api_type=api_type, server=server), status)


def _route_name(dialect: WireDialect) -> str:
    """How a message names a dialect's route."""
    return f"POST ...{dialect.endpoint}"


def _speaks(request: Request) -> WireDialect:
    """The dialect to answer a request in: the one whose clients all send a header it
    carries, else the one whose route its path ends with, else OpenAI's."""
    path = request.scope["path"].rstrip("/")
    return next((wire for wire in ROUTES if wire.client_header is not None and wire.client_header in request.headers),
                next((wire for wire in ROUTES if path.endswith(wire.endpoint)), OPENAI))


def served_by(events: Callable[[], list[Event]], backend: Backend) -> Callable[[], list[Event]]:
    """``events`` as the backend's real server streams them (``harness.core.replay.servers``)."""
    return lambda: as_served(events(), backend)


async def _deliver(how: Delivery, stream: bool, events: Callable[[], list[Event]],
                   whole: Callable[[], Any], lockstep: Lockstep | None = None,
                   media_type: str = "text/event-stream") -> Response:
    """Put an answer on the wire: ``events`` as a stream (in step with its lockstep group,
    if any), or ``whole`` as one JSON body once the whole answer would have been generated."""
    fault = how.fault
    if stream:
        return ReplayStream(events(), write_bytes=how.write_bytes, split_multibyte=how.split_multibyte,
                            tear_window=how.tear_window, write_pause=how.write_pause, abort=how.drops,
                            lockstep=lockstep, media_type=media_type)
    wait = how.total_delay
    if fault is not None and fault.kind == "stall":
        wait += fault.seconds or 0.0
    if wait > 0:
        await asyncio.sleep(wait)
    answer = dumps(whole())
    if fault is not None and fault.kind == "drop":
        return DroppedResponse(answer[: len(answer) // 2] if fault.mid_event else b"", len(answer))
    return Response(answer, media_type="application/json")


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


def create_app(scenarios: Iterable[Scenario] = (), *, fault_rate: FaultRate | None = None) -> FastAPI:
    """The mock backend; ``scenarios`` are preloaded so runs can be armed by id. With
    ``fault_rate``, that share of requests to runs without a fault of their own get one
    (``harness.core.replay.fault_rate``)."""
    registry = Registry(scenarios)
    quiet_deliberate_drops()
    created = int(time.time())
    app = FastAPI(
        title="toolcall-conformance mock backend", docs_url=None, redoc_url=None, openapi_url=None
    )
    app.state.registry = registry

    async def http_error(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, StarletteHTTPException) else 400
        method, path = request.method, request.url.path
        _log(method, path, status)
        message = f"{method} {path}: {getattr(exc, 'detail', exc)}; {ROUTES_HELP}"
        dialect = _speaks(request)
        return _route_error(dialect, status, message, "invalid_route", api_type=dialect.error_type(status))

    async def internal_error(request: Request, exc: Exception) -> Response:
        _log(request.method, request.url.path, 500)
        message = f"the mock backend failed: {type(exc).__name__}: {exc}"
        dialect = _speaks(request)
        return _route_error(dialect, 500, message, "mock_error", api_type=dialect.error_type(500), server=True)

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
        lockstep: Lockstep | None = None
        if problem is None and "lockstep" in body:
            lockstep, problem = registry.lockstep.join_spec(body["lockstep"])
        if problem is not None:
            _log("POST", path, 400)
            return _error(400, problem, "invalid_request")
        try:
            if "scenario_id" in body:
                if not isinstance(body["scenario_id"], str):
                    _log("POST", path, 400)
                    return _error(400, '"scenario_id" must be a string', "invalid_request", param="scenario_id")
                run = registry.arm_id(body["scenario_id"], lockstep)
            else:
                run = registry.arm(parse_scenario(body["scenario"], where="scenario"), lockstep)
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
        try:
            return registry.armed(nonce)
        except RunNotFound as exc:
            _log(method, path, exc.status, nonce=nonce)
            return _error(exc.status, str(exc), "run_not_found", param="nonce")

    def _state(run: Run) -> dict[str, Any]:
        return {
            "nonce": run.nonce,
            "scenario_id": run.scenario.id,
            "requests": [r.to_json() for r in run.recorded()],
            "received": run.received,
            "activity": run.activity().to_json(),
        }

    @app.get("/_mock/runs/{nonce}")
    async def recorded(request: Request, nonce: str) -> Response:
        found = _run_or_404("GET", request.url.path, nonce)
        if isinstance(found, Response):
            return found
        _log("GET", request.url.path, 200, nonce=nonce, scenario=found.scenario.id)
        return _json(_state(found))

    @app.delete("/_mock/runs/{nonce}")
    async def disarm(request: Request, nonce: str) -> Response:
        found = _run_or_404("DELETE", request.url.path, nonce)
        if isinstance(found, Response):
            return found
        state = _state(found)  # its last word, so a caller done with a run needs one request, not two
        registry.disarm(nonce)
        _log("DELETE", request.url.path, 200, nonce=nonce, scenario=found.scenario.id)
        return _json(state)

    @app.get("/_mock/health")
    async def health(request: Request) -> Response:
        _log("GET", request.url.path, 200)
        return _json(registry.health())

    # ------------------------------------------------------------------ completion routes, any prefix

    async def answer(request: Request, dialect: WireDialect) -> Response:
        scope = request.scope
        path = scope["path"]
        raw = await request.body()
        headers = _headers(scope["headers"])
        nonce = find_nonce(headers, raw, registry.is_armed)
        selection: Selection | None = None
        miss: RunNotFound | None = None
        try:
            selection = registry.select(nonce)
        except RunNotFound as exc:
            miss = exc
        body, raw_text, problem = _parse_body(raw)
        now = time.time()
        run: Run | None = None
        log: AnswerLog | None = None
        scenario_id = None
        shown = nonce
        took = ""
        if selection is not None:
            run = selection.run
            scenario_id = run.scenario.id
            shown = run.nonce
            took = _TOOK.get(selection.by, "")
            log = run.record(RecordedRequest("POST", path, scope["query_string"].decode("latin-1"), headers, body,
                                             raw_text, now))

        drawn: str | None = None

        def named(response: Response) -> Response:
            """Tell whoever reads the answer which run it came from and how that run was chosen;
            a Messages answer also carries the API's request-id. The answer is logged as sent."""
            if selection is not None:
                response.headers[RUN_HEADER] = selection.run.nonce
                response.headers[SELECTED_BY_HEADER] = selection.by
            request_id = dialect.request_id_header
            if request_id is not None:
                response.headers.setdefault(request_id, "req_" + os.urandom(12).hex())
            if drawn is not None:
                response.headers[FAULT_HEADER] = drawn
            return response if log is None else Logged(response, log)

        def refuse(status: int, kind: str, message: str, code: str, *, param: str | None = None,
                   api_type: str | None = None) -> Response:
            _log("POST", path, status, nonce=shown, scenario=scenario_id, kind=kind + took)
            return named(_route_error(dialect, status, message, code, param=param, api_type=api_type))

        if problem is not None:
            return refuse(400, "invalid body", problem, "invalid_json" if raw_text is not None else "invalid_request",
                          api_type="invalid_request_error")
        if run is None:
            assert miss is not None
            return refuse(miss.status, "unmatched", str(miss), "scenario_not_found")
        backend = run.scenario.backend.dialect
        if backend is not dialect:
            return refuse(400, "wrong dialect", f"run {run.nonce} replays scenario '{scenario_id}', whose backend "
                          f"speaks the {backend.name} dialect ({_route_name(backend)}), not the {dialect.name} "
                          f"dialect of {path} ({_route_name(dialect)}); point the proxy's upstream at the route of "
                          "its backend's dialect", "wrong_dialect")
        invalid = ROUTES[dialect].check(body)
        if invalid is None and run.scenario.backend.strict:
            invalid = ROUTES[dialect].check_strict(body)
        if invalid is not None:
            return refuse(400, "invalid request", invalid.message, invalid.code or "invalid_request",
                          param=invalid.param, api_type="invalid_request_error")
        stepped = pick_step(run.prepared, dialect, body)
        if isinstance(stepped, str):
            return refuse(400, "no step", stepped, "no_matching_step", api_type="invalid_request_error")
        prepared = stepped
        if fault_rate is not None and prepared.scenario.backend.fault is None:
            drawn = fault_rate.decide(run.nonce, run.received - 1)
            if drawn is not None:
                prepared = run.with_fault(drawn, fault_rate.fault(drawn, len(prepared.scenario.backend.frames)))
        served = ROUTES[dialect].serve(prepared, body, now)
        how, stream, events, whole = served.delivery, served.stream, served.events, served.whole
        if prepared.scenario.backend.server is not None:  # streamed the way that real server streams
            events = served_by(events, prepared.scenario.backend)
        fault, error = how.fault, how.error
        if error is not None:
            _log("POST", path, error.status, nonce=shown, scenario=scenario_id, kind="fault http_error" + took)
            return named(Response(error.body, error.status, dict(error.headers), media_type=error.media_type))
        kind = "stream" if stream else "json"
        _log("POST", path, 200, nonce=shown, scenario=scenario_id,
             kind=(f"{kind} fault {fault.kind}" if fault else kind) + took)
        try:
            delivered = await _deliver(how, stream, events, whole, run.lockstep, served.media_type)
        except BaseException:
            assert log is not None
            log.end()  # a client that hung up during the wait: the answer is over
            raise
        return named(delivered)

    async def models(request: Request) -> Response:
        _log("GET", request.url.path, 200, kind="models")
        return _json(ROUTES[_speaks(request)].models(registry.model_names(), created))

    async def any_prefix(request: Request) -> Response:
        method = request.scope["method"]
        path = request.scope["path"]
        trimmed = path.rstrip("/")
        dialect = _speaks(request)
        routed = next((wire for wire in ROUTES if trimmed.endswith(wire.endpoint)), None)
        if routed is None and trimmed == "":  # an AWS JSON-protocol API posts to / and names its operation
            target = request.headers.get("x-amz-target")
            routed = next((wire for wire in ROUTES if wire.root_target is not None and wire.root_target == target),
                          None)
        if routed is not None:
            if method == "POST":
                return await answer(request, routed)
            allowed, dialect = "POST", routed
        elif trimmed.endswith("/models"):
            if method == "GET":
                return await models(request)
            allowed = "GET"
        elif path == "/" and record_probe(registry, method, path, request.scope["query_string"].decode("latin-1"),
                          _headers(request.scope["headers"])):
            _log(method, path, 200, kind="probe")
            return Response(status_code=200)
        else:
            _log(method, path, 404, kind="no route")
            return _route_error(dialect, 404, f"no route for {method} {path}; {ROUTES_HELP}", "invalid_route",
                                api_type="not_found_error")
        _log(method, path, 405, kind="wrong method")
        response = _route_error(dialect, 405, f"{method} is not allowed on {path} (use {allowed}); {ROUTES_HELP}",
                                "method_not_allowed", api_type="invalid_request_error")
        response.headers["allow"] = allowed
        return response

    app.add_route("/{path:path}", any_prefix, methods=ALL_METHODS, include_in_schema=False)
    return app
