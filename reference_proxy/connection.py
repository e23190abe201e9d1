"""The connection to the upstream (whatever API it speaks): one pooled ``httpx.AsyncClient``, and the translation of
transport failures into the errors clients understand (502 unreachable, 504 timeout,
the upstream's own status for its 4xx/5xx answers)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from reference_proxy.config import ProxyConfig
from reference_proxy.errors import (
    as_openai_error,
    upstream_bad_response,
    upstream_status_error,
    upstream_timeout,
    upstream_unreachable,
)
from reference_proxy.http1 import LeanTransport
from reference_proxy.sse_decode import SSEDecoder

#: Upstream error bodies larger than this are cut (an error page is never that big).
MAX_ERROR_BODY = 256 * 1024
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE = 100
#: Parsed upstream URLs kept (an upstream is asked at a handful of URLs; the bound only keeps a
#: URL made per request, e.g. with a query of its own, from growing the table without end).
MAX_PARSED_URLS = 64


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class UpstreamConnection:
    """The pooled client; created at startup, closed at shutdown (or created on first use)."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self._client: httpx.AsyncClient | None = None
        self._transport: LeanTransport  # the client's, made with it
        self._urls: dict[str, httpx.URL] = {}
        self._defaults: list[tuple[bytes, bytes]] = []  # the client's own headers, made with it
        self._extensions: dict[str, Any] = {}  # its timeouts, as a request carries them

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(
                connect=self.config.connect_timeout,
                read=self.config.read_timeout,
                write=self.config.read_timeout,
                pool=self.config.connect_timeout,
            )
            # trust_env=False: a reverse proxy talks to its configured upstream directly,
            # never through an HTTP(S)_PROXY meant for the machine's outbound traffic.
            # The lean transport decodes each network read in one go instead of one
            # event per HTTP chunk (an upstream writes a chunk per token); see http1.py.
            # The cookie jar refuses every cookie: one client's upstream session must
            # never ride along on another client's requests.
            self._transport = LeanTransport(max_connections=MAX_CONNECTIONS, max_keepalive=MAX_KEEPALIVE)
            self._client = httpx.AsyncClient(
                timeout=timeout,
                transport=self._transport,
                trust_env=False,
                follow_redirects=False,
                cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            )
            self._defaults = list(self._client.headers.raw)
            self._extensions = {"timeout": timeout.as_dict()}
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def parsed_url(self, url: str) -> httpx.URL:
        """``url`` parsed once: every request goes to one of the upstream's few URLs, and parsing
        it again each time was about a twentieth of the proxy's CPU at 256 streams. An
        ``httpx.URL`` is immutable, and a request built from it is the one built from the string."""
        parsed = self._urls.get(url)
        if parsed is None:
            if len(self._urls) >= MAX_PARSED_URLS:
                self._urls.clear()
            parsed = self._urls[url] = httpx.URL(url)
        return parsed

    def request(self, method: str, url: str, headers: Mapping[str, str], content: bytes | None = None) -> httpx.Request:
        """The request ``client.build_request`` makes, header for header and byte for byte, for
        what the proxy sends (bytes or no body; a client with no base URL, query parameters or
        cookies): the client's headers minus those ``headers`` replace, then ``headers``, a
        ``Content-Length`` for a body and a leading ``Host``. ``build_request`` merges and
        re-normalises the header lists three times and looks each name up again; at 256 streams
        that was about a fourteenth of the proxy's CPU."""
        self.client  # the defaults and timeouts are made with the client
        parsed = self.parsed_url(url)
        given = [(name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
        names = {name.lower() for name, _ in given}
        raw = [pair for pair in self._defaults if pair[0].lower() not in names]
        raw += given
        method = method.upper()
        body = b"" if content is None else content
        auto: list[tuple[bytes, bytes]] = []
        if b"host" not in names and parsed.host:
            auto.append((b"Host", parsed.netloc))
        if b"content-length" not in names:
            if body:
                raw.append((b"Content-Length", str(len(body)).encode("ascii")))
            elif b"transfer-encoding" not in names and method in ("POST", "PUT", "PATCH"):
                auto.append((b"Content-Length", b"0"))
        request = httpx.Request(method, parsed, headers=auto + raw, stream=httpx.ByteStream(body),
                                extensions=self._extensions)
        request.read()
        return request

    async def open(self, method: str, url: str, headers: Mapping[str, str], content: bytes | None = None) -> httpx.Response:
        """Send a request and return the response with its body still unread.

        Raises ``ProxyError`` for transport failures and for 4xx/5xx answers (whose
        body is read, closed, and passed on in the OpenAI shape).
        """
        request = self.request(method, url, headers, content)
        transport = self._transport
        try:
            # Straight to the transport: the client's send adds authentication, redirects
            # and cookies, none of which the proxy uses (no auth, no redirects followed,
            # a jar that refuses every cookie), and a wrapper around every body read.
            response = await transport.handle_async_request(request)
        except httpx.TimeoutException as exc:
            raise upstream_timeout(describe(exc)) from None
        except httpx.HTTPError as exc:
            raise upstream_unreachable(describe(exc)) from None
        if response.status_code >= 400:
            try:
                raw = await read_limited(response, MAX_ERROR_BODY)
            except httpx.HTTPError:
                raw = b""
            finally:
                await response.aclose()
            raise upstream_status_error(response.status_code, raw, response.headers.get("retry-after"))
        return response


async def read_limited(response: httpx.Response, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    async for part in response.aiter_bytes():
        parts.append(part)
        size += len(part)
        if size >= limit:
            break
    return b"".join(parts)[:limit]


async def read_json(response: httpx.Response) -> dict[str, Any]:
    """The whole body as a JSON object; ``ProxyError`` when it is not one or the read fails."""
    try:
        raw = await response.aread()
    except httpx.TimeoutException as exc:
        raise upstream_timeout(describe(exc)) from None
    except httpx.HTTPError as exc:
        raise upstream_unreachable(describe(exc)) from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise upstream_bad_response(f"not JSON: {raw[:200]!r}") from None
    if not isinstance(body, dict):
        raise upstream_bad_response(f"expected a JSON object, got {type(body).__name__}")
    return body


async def events(response: httpx.Response) -> AsyncIterator[list[ServerSentEvent]]:
    """The events of an SSE body that carry data, a list per network read (events that
    arrive together stay together, so the relay writes them together; a UTF-8 character
    or a CRLF cut between two reads arrives whole). At the body's clean end an event
    still waiting for its blank line counts too: a backend that closes right after its
    last ``data:`` line has still said it, and nothing it said is dropped."""
    decoder = SSEDecoder()
    async for piece in body_reads(response):
        batch = [event for event in decoder.feed(piece) if event.data]
        if batch:
            yield batch
    last = [event for event in decoder.finish() if event.data]
    if last:
        yield last


def body_reads(response: httpx.Response) -> AsyncIterable[bytes]:
    """The body as the network delivers it. Uncompressed (what inference servers send),
    straight from the transport's stream: httpx's decoding layers cost two generator
    steps per token and do nothing to it."""
    stream = response.stream
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if isinstance(stream, httpx.AsyncByteStream) and encoding in ("", "identity"):
        return stream
    return response.aiter_bytes()


def is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


def error_from_event(data: str) -> dict[str, Any]:
    """The ``error`` object of an ``event: error`` payload, whatever its shape."""
    try:
        payload: Any = json.loads(data)
    except ValueError:
        payload = data
    error: dict[str, Any] = as_openai_error(payload, fallback_message="upstream reported an error", fallback_code=None)["error"]
    return error

