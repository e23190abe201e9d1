"""How a mutant proxy is made from the reference proxy, and what one declares.

Two ways, both in-process and both served like any app (``harness.run.servers.serve``):

* **wire** (``rewritten``): the reference proxy runs unchanged behind an ASGI wrapper
  that rewrites its SSE answer one event at a time, as it streams (nothing waits for
  the whole answer), and can rewrite a whole JSON answer too. For breakage a client
  sees on the wire: a missing field, a wrong number, an event too many or too few.
  A ``Rewriter`` sees ``SSEEvent``s, so a rewriter of Anthropic events (``event:``
  plus ``data:``) is written the same way as one of OpenAI chunks.
* **behaviour** (``with_parts``): the reference proxy's app built with some of its
  parts replaced (``reference_proxy.app.Parts``): a ``StreamPipeline`` subclass, a
  rescuer, a client detector, the reader of upstream events. Only that app instance
  has them: the reference proxy served next to it in the same process stays correct.

A ``Mutant`` is data: what it breaks (one sentence), the rules the harness must
report, the scenarios that expose it, and how to build the app.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import httpx
from httpx_sse import ServerSentEvent
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import reference_proxy.app as proxy_app
from harness.core.dialects.clients import Profile
from reference_proxy.config import ProxyConfig
from reference_proxy.parts import Parts
from reference_proxy.translate.streams import UpstreamReader
from reference_proxy.upstreams import REGISTRY, Upstream

AppFactory = Callable[[ProxyConfig], ASGIApp]
Headers = list[tuple[bytes, bytes]]


@dataclass(frozen=True)
class Mutant:
    """One deliberately broken proxy (or, with no rules, one that must pass)."""

    id: str
    breaks: str  # one sentence: what it gets wrong
    rules: tuple[str, ...]  # rule ids the harness must report for it
    scenarios: tuple[str, ...]  # scenario ids that expose it (a few, to stay fast)
    build: AppFactory
    strict: bool = False  # the rules are of `spec` severity: only enforced with --strict
    profile: Profile | None = None  # None: each scenario's own client profile
    timeout: float = 5.0  # per exchange; a hanging mutant costs this much per exchange
    # The dialect its scenarios' backends are served in, and the proxy translates to (None: each scenario's own).
    upstream: str | None = None

    def app(self, upstream: str) -> ASGIApp:
        return self.build(proxy_config(upstream, self.upstream))


def proxy_config(upstream: str, dialect: str | None = None) -> ProxyConfig:
    """The reference configuration, with the body timeout it ships with: a shorter one
    made the truncated-body cases quicker, but on a machine loaded on purpose a client's
    body can lag its headers by a second, and an honest request got 408. With a
    ``dialect``, every request goes upstream in that API, translated when the client's is the other."""
    return ProxyConfig(upstream=upstream, log_level="warning", upstream_dialect=dialect or "native")


def reference(config: ProxyConfig) -> ASGIApp:
    """The correct proxy every mutant is a variation of."""
    return proxy_app.create_app(config)


# --------------------------------------------------------------------------- wire


@dataclass(frozen=True)
class SSEEvent:
    """One server-sent event: its data (lines joined by newlines) and its ``event:`` name."""

    data: str
    event: str | None = None

    @property
    def payload(self) -> dict[str, Any] | None:
        """The data as a JSON object, or None (``[DONE]``, anything else)."""
        try:
            value = json.loads(self.data)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    @classmethod
    def of(cls, payload: Mapping[str, Any], event: str | None = None) -> SSEEvent:
        return cls(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), event)


DONE = SSEEvent("[DONE]")
Out = Iterable[dict[str, Any] | SSEEvent]
"""What a dialect's rewriter sends for one event: payloads (sent as its events) or events."""


def wire(text: str) -> bytes:
    """UTF-8 of text decoded with ``surrogateescape`` (invalid bytes go back as they came);
    a lone surrogate from a JSON escape can only sit in a JSON string, so it goes back
    as that escape."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def parse_event(block: str) -> SSEEvent | None:
    """An event from its lines (no blank line inside); None for a comment-only block."""
    data: list[str] = []
    name: str | None = None
    for line in block.split("\n"):
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "data":
            data.append(value)
        elif field == "event":
            name = value
    return SSEEvent("\n".join(data), name) if data or name else None


class Rewriter:
    """Rewrites one exchange with the reference proxy; a fresh instance per request.

    The default changes nothing: override what the mutant breaks. Setting ``hang``
    makes the wrapper send nothing more and never end the answer (it lets go when
    the client hangs up)."""

    hang = False
    request = b""  # the client's request body, as the client sent it
    attempts = 1  # how often the proxy handles the request; only the last answer reaches the client
    drop_headers: tuple[str, ...] = ()  # answer headers (lower case) the client never gets
    pause = 0.0  # seconds to wait before a whole answer goes out (set it in ``on_whole``)

    def refusal(self) -> tuple[int, str, bytes] | None:
        """An answer (status, Content-Type, body) given without asking the proxy; None asks it."""
        return None

    def on_request(self, body: bytes) -> bytes:
        """The request body the proxy reads."""
        return body

    def on_event(self, event: SSEEvent) -> Iterable[SSEEvent]:
        """What to send for one event of the stream."""
        return (event,)

    def on_end(self) -> Iterable[SSEEvent]:
        """What to send after the reference proxy's stream ended."""
        return ()

    def encode(self, event: SSEEvent) -> bytes:
        """The wire form of one event."""
        head = f"event: {event.event}\n" if event.event is not None else ""
        lines = "".join(f"data: {line}\n" for line in event.data.split("\n"))
        return wire(f"{head}{lines}\n")

    def writes(self, body: bytes) -> Iterable[bytes]:
        """How the bytes of one write of the reference proxy go to the network."""
        return (body,)

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        """A whole (non-SSE) answer: its status, Content-Type and body."""
        return status, content_type, body

    # A dialect's rewriter calls these; the breakage both dialects share overrides them.

    def on_error(self, payload: dict[str, Any]) -> Out:
        """What to send for the error event of a started stream (the upstream failed)."""
        return (payload,)

    def completed(self) -> Out:
        """The events that end a stream as a complete answer ends it."""
        raise NotImplementedError(f"{type(self).__name__} does not say how its dialect ends a stream")


class WholeAnswerRewriter(Rewriter):
    """Rewrites a whole (non-streaming) answer as data: a JSON object the dialect takes
    for an answer (``is_answer``) is changed by ``on_answer`` and sent again."""

    def is_answer(self, status: int, answer: dict[str, Any]) -> bool:
        return True

    def on_answer(self, answer: dict[str, Any]) -> None:
        """Change ``answer`` in place."""

    def on_whole(self, status: int, content_type: str, body: bytes) -> tuple[int, str, bytes]:
        try:
            answer = json.loads(body)
        except ValueError:
            return status, content_type, body
        if not isinstance(answer, dict) or not self.is_answer(status, answer):
            return status, content_type, body
        self.on_answer(answer)
        return status, content_type, json.dumps(answer, ensure_ascii=False).encode()


class ChunkRewriter(Rewriter):
    """A rewriter of OpenAI chat-completion streams, chunk by chunk."""

    def on_event(self, event: SSEEvent) -> Iterable[SSEEvent]:
        payload = event.payload
        if event.data == "[DONE]":
            out = self.on_done()
        elif payload is not None and "error" in payload and "choices" not in payload:
            out = self.on_error(payload)
        elif payload is not None:
            out = self.on_chunk(payload)
        else:
            out = (event,)
        return [SSEEvent.of(item) if isinstance(item, Mapping) else item for item in out]

    def on_chunk(self, chunk: dict[str, Any]) -> Out:
        return (chunk,)

    def on_done(self) -> Out:
        return (DONE,)


def deltas(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The delta objects of a chunk's choices."""
    return [c["delta"] for c in chunk.get("choices") or () if isinstance(c.get("delta"), dict)]


def tool_calls(chunk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every ``tool_calls`` entry of a chunk."""
    return [call for delta in deltas(chunk) for call in delta.get("tool_calls") or ()]


def finish_reason(chunk: Mapping[str, Any]) -> str | None:
    reasons = [c.get("finish_reason") for c in chunk.get("choices") or ()]
    return next((r for r in reasons if r), None)


def _content_type(headers: Headers) -> str:
    return next((v.decode("latin-1") for k, v in headers if k.lower() == b"content-type"), "")


class RewritingApp:
    """Runs ``inner`` and sends its answers through a fresh ``Rewriter`` per request."""

    def __init__(self, inner: ASGIApp, rewriter: Callable[[], Rewriter]) -> None:
        self.inner = inner
        self.rewriter = rewriter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        rewriter = self.rewriter()
        refused = rewriter.refusal()
        if refused is not None:
            status, content_type, body = refused
            headers = [(b"content-type", content_type.encode("latin-1")), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        hung_up = asyncio.Event()
        start: Message | None = None
        streaming = False
        pending = b""
        whole: list[bytes] = []

        async def receive_watching() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                hung_up.set()
            elif message["type"] == "http.request":
                rewriter.request += message.get("body", b"")
            return message

        proxy_receive: Receive = receive_watching
        if rewriter.attempts > 1 or type(rewriter).on_request is not Rewriter.on_request:
            # The body is read whole first: to rewrite it, or to hand it to the proxy more than once.
            while True:
                message = await receive_watching()
                if message["type"] != "http.request" or not message.get("more_body", False):
                    break
            forwarded = rewriter.on_request(rewriter.request)
            length = str(len(forwarded)).encode()
            scope = {**scope, "headers": [*((k, v) for k, v in scope["headers"] if k != b"content-length"),
                                          (b"content-length", length)]}
            for _ in range(rewriter.attempts - 1):
                await self.inner(scope, _replayed(forwarded, None), _discarded)
            proxy_receive = _replayed(forwarded, receive_watching)

        async def send_rewritten(message: Message) -> None:
            nonlocal start, streaming, pending
            if message["type"] == "http.response.start":
                streaming = "text/event-stream" in _content_type(list(message.get("headers", [])))
                if streaming:  # the length changes with the events: sent chunked
                    dropped = (b"content-length", *(h.encode("latin-1") for h in rewriter.drop_headers))
                    headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in dropped]
                    await send({**message, "headers": headers})
                else:
                    start = message  # held until the body is known
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            more = bool(message.get("more_body", False))
            if not streaming:
                whole.append(message.get("body", b""))
                if not more:
                    assert start is not None
                    await _send_whole(send, start, rewriter, b"".join(whole))
                return
            if rewriter.hang:
                await hung_up.wait()
                return
            pending += message.get("body", b"")
            *blocks, pending = pending.split(b"\n\n")
            if not more and pending.strip():
                blocks, pending = [*blocks, pending], b""
            out: list[SSEEvent] = []
            for block in blocks:
                event = parse_event(block.decode("utf-8", "surrogateescape"))
                if event is not None:
                    out.extend(rewriter.on_event(event))
            if not more:
                out.extend(rewriter.on_end())
            body = b"".join(rewriter.encode(e) for e in out)
            for piece in rewriter.writes(body):
                await send({"type": "http.response.body", "body": piece, "more_body": True})
            if rewriter.hang:
                await hung_up.wait()
            elif not more:
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.inner(scope, proxy_receive, send_rewritten)


def _replayed(body: bytes, then: Receive | None) -> Receive:
    """A receive that gives ``body`` as the whole request, then what ``then`` gives
    (or, for an answer nobody reads, waits until the proxy stops listening)."""
    given = False

    async def receive() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        if then is None:
            await asyncio.Event().wait()
        assert then is not None
        return await then()

    return receive


async def _discarded(message: Message) -> None:
    """Where an answer nobody reads goes."""


async def _send_whole(send: Send, start: Message, rewriter: Rewriter, body: bytes) -> None:
    headers: Headers = list(start.get("headers", []))
    status, content_type, body = rewriter.on_whole(int(start["status"]), _content_type(headers), body)
    dropped = (b"content-length", b"content-type", *(h.encode("latin-1") for h in rewriter.drop_headers))
    headers = [(k, v) for k, v in headers if k.lower() not in dropped]
    await asyncio.sleep(rewriter.pause)
    headers += [(b"content-length", str(len(body)).encode()), (b"content-type", content_type.encode("latin-1"))]
    await send({**start, "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def rewritten(rewriter: Callable[[], Rewriter]) -> AppFactory:
    """A wire mutant: the reference proxy behind ``rewriter``."""
    return lambda config: RewritingApp(reference(config), rewriter)


# --------------------------------------------------------------------------- wire: breakage of both dialects
# Mixed in before a dialect's rewriter, which says what an error event is and how a
# complete stream ends.


class HangsOnUpstreamFailure(Rewriter):
    """Sends nothing more, and never ends the stream, once the upstream failed."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        self.hang = True
        return ()


class SwallowsStreamError(Rewriter):
    """Ends the stream as if the answer were complete when the upstream failed."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        return self.completed()


class CutsConnectionOnError(Rewriter):
    """Breaks the connection where the upstream's failure was to be reported."""

    def on_error(self, payload: dict[str, Any]) -> Out:
        raise ConnectionAbortedError("the mutant cuts the connection instead of reporting the failure")


# --------------------------------------------------------------------------- behaviour


class FailingPipeline(Protocol):
    def fail(self, error: Any) -> str: ...


P = TypeVar("P", bound=FailingPipeline)


def failing_after(pipeline: type[P], first: Callable[[P], None]) -> type[P]:
    """A subclass of a stream pipeline (of either dialect) that, when the upstream
    fails, runs ``first`` on itself, then fails as the pipeline does."""

    def fail(self: P, error: Any) -> str:
        first(self)
        return pipeline.fail(self, error)

    return type(f"Failing{pipeline.__name__}", (pipeline,), {"fail": fail, "__doc__": first.__doc__})


def with_parts(parts: Parts) -> AppFactory:
    """A behaviour mutant: the reference proxy's app built with ``parts``
    (``Parts(chat_pipeline=...)``, the reference's own for every part not given)."""
    return lambda config: proxy_app.create_app(config, parts=parts)


def closed_json(text: str) -> str:
    """``text``, a JSON object cut short, closed as a careless repair would close it:
    an open string ended, a dangling ``:`` given ``null``, a trailing ``,`` dropped, then
    every open bracket closed. The result parses, and means something the model never said."""
    closers: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    out = text + ('"' if in_string else "")
    stripped = out.rstrip()
    if stripped.endswith(":"):
        out = stripped + " null"
    elif stripped.endswith(","):
        out = stripped[:-1]
    return out + "".join(reversed(closers))


EventsReader = Callable[[httpx.Response], AsyncIterator[list[ServerSentEvent]]]


def upstream_with(upstream: type[Upstream], reader: Callable[[str], UpstreamReader] | None = None,
                  events: EventsReader | None = None,
                  request: Callable[[dict[str, Any]], None] | None = None) -> Parts:
    """The reference with its ``upstream`` reading its stream with ``reader`` or ``events``,
    or changing each request it sends with ``request``: a gateway mutant of one upstream API."""

    class Changed(upstream):  # type: ignore[valid-type,misc]
        def chunk_reader(self, model: str) -> UpstreamReader | None:
            return reader(model) if reader is not None else super().chunk_reader(model)

        def read_events(self, default: EventsReader) -> EventsReader:
            return events if events is not None else super().read_events(default)

        def from_chat(self, chat: Mapping[str, Any], stream: bool) -> dict[str, Any]:
            body = super().from_chat(chat, stream)
            if request is not None:
                request(body)
            return body

    upstreams: dict[str, type[Upstream]] = {**REGISTRY, upstream.name: Changed}
    return Parts(upstreams=upstreams)
