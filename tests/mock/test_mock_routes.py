"""What holds for every route of the mock alike (Chat Completions and Messages), driven over
real sockets by httpx and the official SDKs: the backend's stream setting wins over the
request's, a route answers under any prefix and through an SDK at any base URL, and a drop
fault cuts a whole answer's body. Each route's own grammar is tested in its own module."""

from __future__ import annotations

from typing import Any

import pytest
from support.mock_chat import CHAT
from support.mock_messages import MESSAGES
from support.mock_server import Mock, RouteKit, read_until_closed, shared  # noqa: F401  (fixtures)

ROUTES = [pytest.param(kit, id=kit.name) for kit in (CHAT, MESSAGES)]


@pytest.mark.parametrize(("forced", "request_stream"), [(False, True), (True, False), ("auto", True), ("auto", False)])
@pytest.mark.parametrize("kit", ROUTES)
def test_backend_stream_setting_overrides_request(shared: Mock, kit: RouteKit, forced: Any,
                                                  request_stream: bool) -> None:
    url, control, http = shared
    scenario = kit.make_scenario("forced", ["one ", "two"], stream=forced, request={"stream": request_stream})
    response = kit.post(http, url, scenario.client.request, control.arm(scenario))
    kit.check_answer(response, scenario, scenario.client.request)
    assert response.headers["content-type"].startswith("text/event-stream") == (
        forced is True or (forced == "auto" and request_stream)
    )


@pytest.mark.parametrize(("kit", "path"), [pytest.param(kit, path, id=f"{kit.name}-{path}")
                                           for kit in (CHAT, MESSAGES) for path in kit.paths])
def test_a_route_answers_under_any_prefix(shared: Mock, kit: RouteKit, path: str) -> None:
    url, control, http = shared
    scenario = kit.make_scenario("route", ["routed"])
    nonce = control.arm(scenario)
    response = kit.post(http, url, scenario.client.request, nonce, path=f"{path}?{kit.query}")
    kit.check_answer(response, scenario, scenario.client.request)
    (seen,) = control.recorded(nonce)
    assert (seen.method, seen.path, seen.query) == ("POST", path, kit.query)


@pytest.mark.parametrize(("kit", "prefix"), [pytest.param(kit, prefix, id=f"{kit.name}-{prefix}")
                                             for kit in (CHAT, MESSAGES) for prefix in kit.sdk_prefixes])
def test_sdk_with_any_base_url(shared: Mock, kit: RouteKit, prefix: str) -> None:
    url, control, _ = shared
    scenario = kit.make_scenario("sdk-prefix", ["via ", "sdk"], request={"stream": False})
    text, models = kit.sdk_reads(url, control.arm(scenario), prefix, scenario.client.request)
    assert text == "via sdk"
    assert scenario.client.request["model"] in models


@pytest.mark.parametrize("mid_event", [False, True])
@pytest.mark.parametrize("kit", ROUTES)
def test_drop_fault_non_streaming(shared: Mock, kit: RouteKit, mid_event: bool) -> None:
    url, control, http = shared
    scenario = kit.make_scenario("drop-json", list(kit.fault_frames), request={"stream": False},
                                 fault={"kind": "drop", "after_frame": 1, "mid_event": mid_event})
    response, raw, error = read_until_closed(http, url + kit.endpoint, scenario.client.request,
                                             control.arm(scenario))
    assert response.status_code == 200 and error == "RemoteProtocolError"
    promised = int(response.headers["content-length"])
    assert raw == b"" if not mid_event else (raw.startswith(kit.answer_id) and len(raw) == promised // 2)
