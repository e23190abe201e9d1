"""``LocalControl`` answers as ``MockControl`` does, from the registry of the mock its process serves.

The harness arms the mock it serves itself on its registry (``EmbeddedServers.control``); these
tests hold it to the HTTP control API's answers on the same mock: the same requests recorded (field
for field, as the control API's JSON gives them back), the same activity, the same errors, and
nothing left armed after ``finish``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.core.errors import MockError
from harness.core.nonce import new_nonce
from harness.run.embedded import EmbeddedServers
from mock_backends.control import Control, LocalControl, Lockstep, MockControl
from support.mock_chat import make_scenario, post
from support.mock_server import http_client

FRAMES = ["It is ", "sunny."]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, LocalControl, MockControl]]:
    """One mock served by this process, with both controls of it."""
    servers = EmbeddedServers(with_proxy=False)
    with servers as urls, MockControl(urls.mock_url) as remote:
        local = servers.control()
        assert isinstance(local, LocalControl)
        yield urls.mock_url, local, remote


def _both(served: tuple[str, LocalControl, MockControl]) -> tuple[tuple[str, Control], ...]:
    _, local, remote = served
    return ("local", local), ("http", remote)


@pytest.mark.parametrize("kind", ["local", "http"])
def test_a_run_armed_by_either_control_reads_the_same_through_both(
        served: tuple[str, LocalControl, MockControl], kind: str) -> None:
    url, local, remote = served
    armer = local if kind == "local" else remote
    scenario = make_scenario("local-control", FRAMES)
    nonce = armer.arm(scenario)
    with http_client() as http:
        for stream in (True, False):
            response = post(http, url, {**scenario.client.request, "stream": stream}, nonce)
            assert response.status_code == 200, response.text
    by_local, by_http = local.state(nonce), remote.state(nonce)
    assert by_local[0] == by_http[0]  # every field, as the control API's JSON carries it
    assert [r.body["stream"] for r in by_local[0]] == [True, False]
    assert all(r.answer is not None and r.answer.status == 200 and r.answer.body for r in by_local[0])
    local_activity, http_activity = by_local[1], by_http[1]
    assert (local_activity.answering, local_activity.busy_seconds, local_activity.ended_at) == (
        http_activity.answering, http_activity.busy_seconds, http_activity.ended_at)
    finished = armer.finish(nonce)
    assert finished[0] == by_local[0]
    for _, control in _both(served):
        with pytest.raises(MockError, match=nonce):
            control.recorded(nonce)  # finish forgot the run


@pytest.mark.parametrize("kind", ["local", "http"])
def test_errors_name_what_is_wrong_in_the_mocks_words(served: tuple[str, LocalControl, MockControl],
                                                       kind: str) -> None:
    control = dict(_both(served))[kind]
    nonce = new_nonce()
    for call in (control.recorded, control.state, control.finish, control.activity, control.disarm):
        with pytest.raises(MockError, match=f"no armed run has nonce {nonce}"):
            call(nonce)
    with pytest.raises(MockError, match="no preloaded scenario 'no-such-id'"):
        control.arm_id("no-such-id")
    with pytest.raises(MockError, match='"lockstep.size" must be an integer from 1 to 1024'):
        control.arm(make_scenario("bad-group", FRAMES), lockstep=Lockstep("g", 0))


def test_health_and_disarm_agree(served: tuple[str, LocalControl, MockControl]) -> None:
    _, local, remote = served
    before = remote.health()
    assert local.health() == before
    nonce = local.arm(make_scenario("counted", FRAMES), lockstep=Lockstep("pair", 2))
    assert remote.health()["runs"] == local.health()["runs"] == before["runs"] + 1
    remote.disarm(nonce)
    assert local.health() == before


def test_servers_that_do_not_serve_the_mock_control_it_over_http() -> None:
    with EmbeddedServers(with_proxy=False) as urls:
        outside = EmbeddedServers(with_proxy=False, mock_url=urls.mock_url)
        with outside:
            control = outside.control()
            assert isinstance(control, MockControl)
            with control:
                assert control.health()["status"] == "ok"
