"""The proxy builds its upstream requests without ``client.build_request``: every request is
the one ``build_request`` makes, down to every byte the transport writes from it (method,
target, header names, their case and order, values, body) and the timeouts it carries."""

from __future__ import annotations

import httpx
import pytest

from reference_proxy.config import ProxyConfig
from reference_proxy.connection import UpstreamConnection
from reference_proxy.request_shaping import forward_headers

URLS = [
    "http://127.0.0.1:8000/v1/chat/completions",
    "https://example.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    "http://[::1]:9000/v1/responses",
    "http://user:secret@h:1/v1/chat/completions#fragment",
    "http://h/v1/models?limit=2",
]
CLIENT_HEADERS = [
    [("content-type", "application/json"), ("authorization", "Bearer k"), ("user-agent", "OpenAI/Python 1.109.1")],
    [("Host", "proxy:8080"), ("Content-Length", "30"), ("Accept", "application/json"), ("X-Stainless-Lang", "python"),
     ("connection", "keep-alive, x-drop"), ("x-drop", "1"), ("anthropic-version", "2023-06-01")],
    [("accept-encoding", "gzip"), ("transfer-encoding", "chunked"), ("te", "trailers"), ("cookie", "a=1")],
    [],
]
#: Headers as a caller might pass them, not only as ``forward_headers`` makes them.
RAW_HEADERS = [
    {"Host": "elsewhere:1", "User-Agent": "u", "ACCEPT": "*/*"},
    {"content-length": "5", "x-a": ""},
    {"Transfer-Encoding": "chunked"},
    {"connection": "close"},
]
BODIES = [b'{"model": "m", "stream": true}', b"", None]


def wire(request: httpx.Request) -> tuple[object, ...]:
    """What the transport writes from a request, and what it connects to."""
    url = request.url
    return (request.method, url.raw_scheme, url.raw_host, url.port, url.raw_path, tuple(request.headers.raw),
            request.content, dict(request.extensions))


def connection(api_key: str | None = None) -> UpstreamConnection:
    return UpstreamConnection(ProxyConfig(upstream="http://127.0.0.1:1/v1", api_key=api_key,
                                          read_timeout=7.5, connect_timeout=2.5))


def headers_cases() -> list[dict[str, str]]:
    cases = [forward_headers(pairs, key) for pairs in CLIENT_HEADERS for key in (None, "sk-k")]
    cases += [forward_headers(pairs, None, with_body=False) for pairs in CLIENT_HEADERS]
    return cases + RAW_HEADERS


@pytest.mark.parametrize("headers", headers_cases())
@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("method", ["POST", "GET", "post"])
@pytest.mark.parametrize("body", BODIES)
def test_a_request_is_the_one_build_request_makes(headers: dict[str, str], url: str, method: str,
                                                  body: bytes | None) -> None:
    upstream = connection()
    for _ in range(2):  # the URL parsed on the first call, kept for the second
        built = upstream.request(method, url, headers, body)
        expected = upstream.client.build_request(method, url, headers=headers, content=body)
        assert wire(built) == wire(expected)
        assert built.url == expected.url
        assert built.stream is not None


def test_a_header_httpx_cannot_encode_fails_as_build_request_fails() -> None:
    upstream = connection()
    headers = {"x-name": "caf\u00e9"}
    with pytest.raises(UnicodeEncodeError):
        upstream.client.build_request("POST", URLS[0], headers=headers, content=b"{}")
    with pytest.raises(UnicodeEncodeError):
        upstream.request("POST", URLS[0], headers, b"{}")


def test_the_timeouts_are_the_clients() -> None:
    upstream = connection()
    timeout = upstream.request("POST", URLS[0], {}, b"{}").extensions["timeout"]
    assert timeout == {"connect": 2.5, "read": 7.5, "write": 7.5, "pool": 2.5}
