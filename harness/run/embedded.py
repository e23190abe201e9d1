"""The servers a conformance run brings along: the mock backend and, when no proxy
URL is given, the reference proxy wired to it.

Both run in this process on loopback (or where ``--mock-host/--mock-port`` say, so
an external proxy can be configured to call the mock) and are always stopped when
the run ends, however it ends.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from types import TracebackType

from harness.core.errors import ConformanceError
from harness.run.recorder import Recorder, RecorderConfig
from harness.run.servers import serve
from mock_backends.control import Control, LocalControl, MockControl


@dataclass(frozen=True)
class EmbeddedUrls:
    mock_url: str  # the mock's root; proxies call {mock_url}/v1/chat/completions
    proxy_url: str | None  # the reference proxy's base URL ({...}/v1), when started (the first one)
    proxy_features: frozenset[str]  # what the reference proxy claims (empty when not started)
    # One reference proxy per upstream dialect it calls ("native": each client's own).
    proxy_urls: Mapping[str, str] = field(default_factory=dict)
    upstream_url: str = ""  # where a proxy calls upstream: the mock, or the recorder in front of it


def bundled_proxy_features() -> frozenset[str]:
    """What the reference proxy claims, without starting one (each proxy a run starts claims the same)."""
    from reference_proxy.config import ProxyConfig

    return ProxyConfig(upstream="http://127.0.0.1/v1").features()


def preload() -> None:
    """Import the mock backend's and the reference proxy's apps ahead of ``start`` (a process
    about to fork workers that each start their own)."""
    from mock_backends.app import create_app as create_mock  # noqa: F401
    from reference_proxy.app import create_app as create_proxy  # noqa: F401


class EmbeddedServers:
    """Start with ``start()`` (or ``with``); ``close()`` stops everything started.

    ``mock_url``: a mock that already runs; only the reference proxy is started then."""

    def __init__(
        self, *, mock_host: str = "127.0.0.1", mock_port: int = 0, with_proxy: bool = True, mock_url: str | None = None,
        upstream_dialects: Sequence[str] = ("native",), recorder: RecorderConfig | None = None,
    ) -> None:
        self._recorder = recorder
        self._upstream_dialects = tuple(upstream_dialects)
        self._mock_url = mock_url.rstrip("/") if mock_url else None
        self._mock_host = mock_host
        self._mock_port = mock_port
        self._with_proxy = with_proxy
        self._stack = ExitStack()
        self._local: LocalControl | None = None  # the control of the mock this process serves
        self.urls: EmbeddedUrls | None = None

    def start(self) -> EmbeddedUrls:
        from mock_backends.app import create_app as create_mock

        try:
            if self._mock_url is not None:
                mock_url = self._mock_url
            else:
                # A proxy of the user's calls the recorder where it would call the mock (--mock-port).
                fronted = self._recorder is not None and not self._with_proxy
                port = 0 if fronted else self._mock_port
                app = create_mock()
                try:
                    mock = self._stack.enter_context(serve(app, self._mock_host, port))
                except OSError as exc:
                    raise ConformanceError(
                        f"cannot serve the mock backend on {self._mock_host}:{port}: {exc.strerror or exc}"
                    ) from exc
                mock_url = mock.url
                self._local = LocalControl(mock_url, app.state.registry)
            upstream = mock_url
            if self._recorder is not None:  # the proxies call the mock through a recorder
                recorder = Recorder(dataclasses.replace(self._recorder, upstream=f"{mock_url}/v1"))
                host, port = (self._mock_host, self._mock_port) if not self._with_proxy else ("127.0.0.1", 0)
                try:
                    upstream = self._stack.enter_context(serve(recorder.app, host, port)).url
                except OSError as exc:
                    raise ConformanceError(f"cannot serve the recorder on {host}:{port}: {exc.strerror or exc}") from exc
            proxy_urls: dict[str, str] = {}
            features: frozenset[str] = frozenset()
            if self._with_proxy:
                from reference_proxy.app import create_app as create_proxy
                from reference_proxy.config import ProxyConfig

                for dialect in self._upstream_dialects:
                    config = ProxyConfig(upstream=f"{upstream}/v1", log_level="warning", upstream_dialect=dialect)
                    proxy = self._stack.enter_context(serve(create_proxy(config)))
                    proxy_urls[dialect] = f"{proxy.url}/v1"
                    features = config.features()
        except BaseException:
            self._stack.close()
            raise
        first = next(iter(proxy_urls.values()), None)
        self.urls = EmbeddedUrls(mock_url, first, features, proxy_urls, upstream)
        return self.urls

    def control(self) -> Control:
        """A control of the run's mock: on its registry when this process serves it (no HTTP round
        trip per arm and per read), else over its control API. The caller closes it."""
        assert self.urls is not None, "the servers are not started"
        if self._local is not None:
            return self._local
        return MockControl(self.urls.mock_url.replace("://0.0.0.0:", "://127.0.0.1:"))

    def close(self) -> None:
        self._stack.close()
        self._local = None
        self.urls = None

    def __enter__(self) -> EmbeddedUrls:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
