"""The reference proxy served for end-to-end tests: one mock backend and two proxies (the
default configuration and every optional feature on), with clients that record what the
official SDKs read."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from harness.core.nonce import place_nonce
from harness.core.scenario.model import Scenario
from harness.run.servers import serve
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app
from reference_proxy.config import ProxyConfig
from support.sdk_http import tls


@dataclass(frozen=True)
class Proxy:
    url: str
    config: ProxyConfig


class RecordingTransport(httpx2.BaseTransport):
    """Keeps the raw body bytes of the last response, as the SDK read them (the SDK's
    HTTP library is httpx2)."""

    def __init__(self) -> None:
        self.inner = httpx2.HTTPTransport(verify=tls())
        self.raw = bytearray()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self.inner.handle_request(request)
        self.raw = bytearray()
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=_Tee(response, self.raw), extensions=response.extensions
        )

    def close(self) -> None:
        self.inner.close()


class _Tee(httpx2.SyncByteStream):
    def __init__(self, response: httpx2.Response, sink: bytearray) -> None:
        self.response = response
        self.sink = sink

    def __iter__(self) -> Iterator[bytes]:
        for part in self.response.iter_raw():
            self.sink += part
            yield part

    def close(self) -> None:
        self.response.close()


@dataclass(frozen=True)
class Rig:
    mock: MockControl
    mock_url: str
    default: Proxy  # the configuration a user gets without flags
    full: Proxy  # every optional feature the proxy has switched on
    http: httpx.Client  # shared: building a client (its TLS context) costs more than a request
    sdk_http: httpx2.Client  # the SDK's, recording what it reads
    recorder: RecordingTransport  # under ``sdk_http``

    def sdk(self, proxy: Proxy) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=f"{proxy.url}/v1", api_key="sk-test", max_retries=0, timeout=15, http_client=self.sdk_http
        )

    def anthropic_sdk(self, proxy: Proxy) -> anthropic.Anthropic:
        return anthropic.Anthropic(
            base_url=proxy.url, api_key="sk-ant-test", max_retries=0, timeout=15, http_client=self.sdk_http
        )

    def proxy_for(self, features: set[str]) -> Proxy | None:
        for proxy in (self.default, self.full):
            if features <= proxy.config.features():
                return proxy
        return None


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with serve(create_mock()) as mock:
        # The body timeout the proxy ships with (a shorter one answered an honest request
        # 408 when a loaded machine delayed its body behind its headers).
        default = ProxyConfig(upstream=f"{mock.url}/v1", log_level="warning")
        full = dataclasses.replace(default, system_to_user=True)
        with (
            serve(create_app(default)) as a,
            serve(create_app(full)) as b,
            MockControl(mock.url) as control,
            httpx.Client(timeout=15) as http,
        ):
            recorder = RecordingTransport()
            with httpx2.Client(timeout=15, transport=recorder) as sdk_http:
                yield Rig(control, mock.url, Proxy(a.url, default), Proxy(b.url, full), http, sdk_http, recorder)


def request_body(scenario: Scenario, stream: bool, nonce: str) -> dict[str, Any]:
    body = dict(scenario.client.request)
    body["stream"] = stream
    if not stream:
        body.pop("stream_options", None)
    return place_nonce(body, nonce, scenario.client.dialect)


def post(rig: Rig, proxy: Proxy, body: Mapping[str, Any], headers: Mapping[str, str]) -> httpx.Response:
    return rig.http.post(f"{proxy.url}/v1/chat/completions", json=body, headers=dict(headers))
