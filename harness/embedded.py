"""The servers a conformance run brings along: the mock backend and, when no proxy
URL is given, the reference proxy wired to it.

Both run in this process on loopback (or where ``--mock-host/--mock-port`` say, so
an external proxy can be configured to call the mock) and are always stopped when
the run ends, however it ends.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from types import TracebackType

from harness.errors import ConformanceError
from harness.servers import serve


@dataclass(frozen=True)
class EmbeddedUrls:
    mock_url: str  # the mock's root; proxies call {mock_url}/v1/chat/completions
    proxy_url: str | None  # the reference proxy's base URL ({...}/v1), when started
    proxy_features: frozenset[str]  # what the reference proxy claims (empty when not started)


class EmbeddedServers:
    """Start with ``start()`` (or ``with``); ``close()`` stops everything started.

    ``mock_url``: a mock that already runs; only the reference proxy is started then."""

    def __init__(
        self, *, mock_host: str = "127.0.0.1", mock_port: int = 0, with_proxy: bool = True, mock_url: str | None = None
    ) -> None:
        self._mock_url = mock_url.rstrip("/") if mock_url else None
        self._mock_host = mock_host
        self._mock_port = mock_port
        self._with_proxy = with_proxy
        self._stack = ExitStack()
        self.urls: EmbeddedUrls | None = None

    def start(self) -> EmbeddedUrls:
        from mock_backends.app import create_app as create_mock

        try:
            if self._mock_url is not None:
                mock_url = self._mock_url
            else:
                try:
                    mock = self._stack.enter_context(serve(create_mock(), self._mock_host, self._mock_port))
                except OSError as exc:
                    raise ConformanceError(
                        f"cannot serve the mock backend on {self._mock_host}:{self._mock_port}: {exc.strerror or exc}"
                    ) from exc
                mock_url = mock.url
            proxy_url: str | None = None
            features: frozenset[str] = frozenset()
            if self._with_proxy:
                from reference_proxy.app import create_app as create_proxy
                from reference_proxy.config import ProxyConfig

                config = ProxyConfig(upstream=f"{mock_url}/v1", log_level="warning")
                proxy = self._stack.enter_context(serve(create_proxy(config)))
                proxy_url = f"{proxy.url}/v1"
                features = config.features()
        except BaseException:
            self._stack.close()
            raise
        self.urls = EmbeddedUrls(mock_url, proxy_url, features)
        return self.urls

    def close(self) -> None:
        self._stack.close()
        self.urls = None

    def __enter__(self) -> EmbeddedUrls:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
