"""Python clients of the mock's control API: arm runs, read what the proxy sent, disarm.

``MockControl`` speaks the HTTP control API, to a mock anywhere; ``LocalControl`` does the
same on the registry of a mock this process serves, without a round trip per arm and per
read (two HTTP requests an exchange, arming and finishing, cost more than the rest of the harness's
side of it).
Both are a ``Control``. Only the control plane is short-cut: the proxy still reaches the
mock over its socket. Every failure (unreachable mock, invalid scenario, unknown nonce)
becomes one ``MockError`` whose message says what went wrong and where, in the mock's words.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from functools import cache
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self

import httpx

from harness.core.errors import MockError
from harness.core.exchange import BackendActivity, RecordedRequest
from harness.core.scenario.model import Scenario

if TYPE_CHECKING:
    from mock_backends.registry import Registry, Run


@dataclass(frozen=True)
class Lockstep:
    """A lockstep group to arm runs in: ``size`` members, each step waiting at most ``patience`` s
    for the slowest, then ``pause`` s before its events are written."""

    group: str
    size: int
    patience: float = 2.0
    pause: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"group": self.group, "size": self.size, "patience": self.patience, "pause": self.pause}


class Control(Protocol):
    """What the harness asks of a mock backend (``MockControl``'s methods say what each does)."""

    base_url: str

    def arm(self, scenario: Scenario, *, lockstep: Lockstep | None = None) -> str: ...
    def arm_id(self, scenario_id: str) -> str: ...
    def recorded(self, nonce: str) -> list[RecordedRequest]: ...
    def state(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]: ...
    def finish(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]: ...
    def activity(self, nonce: str) -> BackendActivity: ...
    def disarm(self, nonce: str) -> None: ...
    def health(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...


class _Closing:
    """A control is a context manager that closes itself at the end of the block."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every control client: building one loads the CA bundle, which costs
    more than arming, reading and finishing a run over loopback (a harness that plays one case per
    client, as the mutant checks do, built one per case)."""
    return httpx.create_ssl_context()


class MockControl(_Closing):
    """Talks to a running mock backend at ``base_url`` (its root, e.g. ``http://127.0.0.1:9000``).

    The control API answers in milliseconds on an idle machine; the timeout only bounds a
    mock that hangs, and is generous because a busy CI machine can starve it for seconds."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, verify=_tls())

    def close(self) -> None:
        self._http.close()

    def _call(self, method: str, path: str, *, json: Any = None, expect: int = 200) -> httpx.Response:
        what = f"{method} {self.base_url}{path}"
        try:
            response = self._http.request(method, path, json=json)
        except (TypeError, ValueError) as exc:
            raise MockError(f"{what}: the request cannot be sent as JSON: {exc}") from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise MockError(f"{what}: cannot reach the mock backend: {type(exc).__name__}: {exc}") from exc
        if response.status_code != expect:
            raise MockError(f"{what}: HTTP {response.status_code}: {_error_message(response)}")
        return response

    def _json(self, response: httpx.Response) -> dict[str, Any]:
        try:
            data = response.json()
        except ValueError as exc:
            raise MockError(f"{response.request.url}: the answer is not JSON: {response.text[:200]!r}") from exc
        if not isinstance(data, dict):
            raise MockError(f"{response.request.url}: expected a JSON object, got {type(data).__name__}")
        return data

    def arm(self, scenario: Scenario, *, lockstep: Lockstep | None = None) -> str:
        """Arm a run of ``scenario`` (sent whole, so it needs no preloading); returns its nonce.
        With ``lockstep``, its streamed answer advances event by event with the other runs
        of that group (``docs/mock-backend.md``)."""
        body: dict[str, Any] = {"scenario": scenario.shared_mapping()}
        if lockstep is not None:
            body["lockstep"] = lockstep.to_json()
        return self._nonce(self._call("POST", "/_mock/runs", json=body, expect=201))

    def arm_id(self, scenario_id: str) -> str:
        """Arm a run of a scenario the mock preloaded; returns its nonce."""
        return self._nonce(self._call("POST", "/_mock/runs", json={"scenario_id": scenario_id}, expect=201))

    def _nonce(self, response: httpx.Response) -> str:
        nonce = self._json(response).get("nonce")
        if not isinstance(nonce, str):
            raise MockError(f"{response.request.url}: the answer carries no nonce: {response.text[:200]!r}")
        return nonce

    def recorded(self, nonce: str) -> list[RecordedRequest]:
        """Every request the run received so far, oldest first, each with its answer."""
        return self.state(nonce)[0]

    def state(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]:
        """What the run received so far, and how busy answering it has kept the mock."""
        return self._state(nonce, self._json(self._call("GET", f"/_mock/runs/{nonce}")))

    def finish(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]:
        """Forget the run, and say what it received and how busy it kept the mock (``state``'s
        answer, in the same request); a request carrying its nonce is answered 404 afterwards."""
        return self._state(nonce, self._json(self._call("DELETE", f"/_mock/runs/{nonce}")))

    @staticmethod
    def _state(nonce: str, data: dict[str, Any]) -> tuple[list[RecordedRequest], BackendActivity]:
        try:
            requests = [RecordedRequest.from_json(item) for item in data["requests"]]
            return requests, BackendActivity.from_json(data.get("activity") or {})
        except (KeyError, TypeError, ValueError) as exc:
            raise MockError(f"recorded requests of {nonce} are malformed: {exc}") from exc

    def activity(self, nonce: str) -> BackendActivity:
        return self.state(nonce)[1]

    def disarm(self, nonce: str) -> None:
        """Forget the run; a request carrying its nonce is answered 404 afterwards."""
        self._call("DELETE", f"/_mock/runs/{nonce}")

    def health(self) -> dict[str, Any]:
        return self._json(self._call("GET", "/_mock/health"))


class LocalControl(_Closing):
    """``MockControl``'s answers, from the ``registry`` of a mock served by this process at
    ``base_url``: what a run received is read straight from the run (the registry and its runs
    are safe to use from another thread than the server's)."""

    def __init__(self, base_url: str, registry: Registry) -> None:
        self.base_url = base_url.rstrip("/")
        self._registry = registry

    def close(self) -> None:
        pass  # nothing of its own to release: the mock is its server's

    def arm(self, scenario: Scenario, *, lockstep: Lockstep | None = None) -> str:
        group = None
        if lockstep is not None:
            group, problem = self._registry.lockstep.join_spec(lockstep.to_json())
            if problem is not None:
                raise MockError(f"arming {scenario.id} on the mock at {self.base_url}: {problem}")
        return self._registry.arm(scenario, group).nonce

    def arm_id(self, scenario_id: str) -> str:
        try:
            return self._registry.arm_id(scenario_id).nonce
        except MockError as exc:
            raise MockError(f"the mock at {self.base_url}: {exc}") from exc

    def recorded(self, nonce: str) -> list[RecordedRequest]:
        return self.state(nonce)[0]

    def state(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]:
        run = self._run(nonce)
        return run.recorded(), run.activity()

    def finish(self, nonce: str) -> tuple[list[RecordedRequest], BackendActivity]:
        state = self.state(nonce)
        self._registry.disarm(nonce)
        return state

    def activity(self, nonce: str) -> BackendActivity:
        return self._run(nonce).activity()

    def disarm(self, nonce: str) -> None:
        self._run(nonce)
        self._registry.disarm(nonce)

    def health(self) -> dict[str, Any]:
        return self._registry.health()

    def _run(self, nonce: str) -> Run:
        try:
            return self._registry.armed(nonce)
        except MockError as exc:
            raise MockError(f"the mock at {self.base_url}: {exc}") from exc


def _error_message(response: httpx.Response) -> str:
    try:
        data = response.json()
        message = data["error"]["message"]
        if isinstance(message, str):
            return message
    except (ValueError, KeyError, TypeError):
        pass
    return response.text[:500] or response.reason_phrase
