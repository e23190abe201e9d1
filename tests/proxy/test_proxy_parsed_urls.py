"""Upstream URLs are parsed once: a request built from the kept ``httpx.URL`` is the request built
from the string, down to every byte the transport writes from it (method, target, headers, body)."""

from __future__ import annotations

import httpx
import pytest

from reference_proxy.config import ProxyConfig
from reference_proxy.connection import MAX_PARSED_URLS, UpstreamConnection

URLS = [
    "http://127.0.0.1:8000/v1/chat/completions",
    "http://localhost/v1/messages",
    "https://example.openai.azure.com/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
    "http://[::1]:9000/v1/responses",
    "http://h:1/v1/models/qwen%2F2.5%20coder?a=1&b=%C3%A9",
    "http://h:1/path with space/ünïcode?q=x y",
    "http://user:secret@h:1/v1/chat/completions#fragment",
]
HEADERS = {"content-type": "application/json", "authorization": "Bearer k", "x-conformance-nonce": "n"}


def request_bytes(request: httpx.Request) -> tuple[object, ...]:
    """What the transport writes from a request, and what it connects to."""
    url = request.url
    return (request.method, url.raw_scheme, url.raw_host, url.port, url.raw_path, tuple(request.headers.raw),
            request.content, dict(request.extensions))


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_request_to_a_parsed_url_is_the_request_to_the_string(url: str, method: str) -> None:
    connection = UpstreamConnection(ProxyConfig(upstream="http://127.0.0.1:1/v1"))
    body = b'{"model": "m", "stream": true}' if method == "POST" else None
    plain = connection.client.build_request(method, url, headers=HEADERS, content=body)
    for _ in range(2):  # parsed on the first call, kept for the second
        kept = connection.client.build_request(method, connection.parsed_url(url), headers=HEADERS, content=body)
        assert request_bytes(kept) == request_bytes(plain)
        assert kept.url == plain.url


def test_a_url_is_parsed_once_and_the_table_stays_bounded() -> None:
    connection = UpstreamConnection(ProxyConfig(upstream="http://127.0.0.1:1/v1"))
    first = connection.parsed_url(URLS[0])
    assert connection.parsed_url(URLS[0]) is first
    for i in range(3 * MAX_PARSED_URLS):
        assert str(connection.parsed_url(f"http://h:1/v1/chat/completions?n={i}")) == f"http://h:1/v1/chat/completions?n={i}"
    assert len(connection._urls) <= MAX_PARSED_URLS


def test_a_malformed_url_fails_as_it_did() -> None:
    connection = UpstreamConnection(ProxyConfig(upstream="http://127.0.0.1:1/v1"))
    with pytest.raises(httpx.InvalidURL) as from_string:
        connection.client.build_request("POST", "http://h:abc/v1")
    with pytest.raises(httpx.InvalidURL) as parsed:
        connection.parsed_url("http://h:abc/v1")
    assert str(parsed.value) == str(from_string.value)
