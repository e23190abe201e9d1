"""How a soak's client sends its request and reads the answer, misbehaving as its drawn
client fault says: hanging up after the first words, reading slowly, or sending its body
slowly. Run under Locust, whose gevent has patched ``time.sleep`` and the sockets: a
pause or a read waits for this user alone."""

from __future__ import annotations

import http.client
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import requests

from harness.core.retry import MAX_RETRIES
from harness.judge.soak import (
    FIRST_CONTENT,
    SLOW_BODY_PAUSE,
    SLOW_BODY_PIECES,
    SLOW_READ_BYTES,
    SLOW_READ_PAUSE,
    ClientFaultKind,
)

__all__ = ["Answer", "send"]

STALLED_PAUSE = 4 * SLOW_BODY_PAUSE  # a pause this long was not the one planned
# openai-python and the Anthropic SDK try a request again after a connection error, twice by
# default, the first time after 0.5 s (``harness.core.retry`` cites their ``_base_client.py``): a
# kept-alive connection the server closed just as the request went out is no lost answer.
CONNECTION_RETRIES, RETRY_DELAY = MAX_RETRIES, 0.5


@dataclass
class Answer:
    """What the client got: status, headers, the body's chunks with their arrival times."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False
    hung_up: float | None = None  # time.monotonic() when the client hung up (a hang-up fault)
    retries: int = 0  # connection errors before any answer, tried again as the SDKs do
    longest_pause: float = 0.0  # a slow sender's longest pause between its body's pieces, as it happened

    def stalled_itself(self) -> bool:
        """A slow sender answered 408 after pausing far longer than it meant to: the load
        generator, busy judging other answers, was the slow one, not the proxy's limit."""
        return self.status == 408 and self.longest_pause > STALLED_PAUSE


def send(session: requests.Session, url: str, body: bytes, headers: dict[str, str],
         client_fault: ClientFaultKind | None, timeout: float) -> Answer:
    """Send the request and read the answer, as a client with ``client_fault`` does; a
    connection that ends before any answer is tried again, as the SDKs do (``CONNECTION_RETRIES``)."""
    retries = 0
    while True:
        answer = _send_once(session, url, body, headers, client_fault, timeout)
        answer.retries = retries
        if answer.status is not None or answer.timed_out or answer.error is None or retries == CONNECTION_RETRIES:
            return answer
        time.sleep(RETRY_DELAY * 2**retries)
        retries += 1


def _send_once(session: requests.Session, url: str, body: bytes, headers: dict[str, str],
               client_fault: ClientFaultKind | None, timeout: float) -> Answer:
    if client_fault == "slow_body":
        return _send_slowly(url, body, headers, timeout)
    answer, start = Answer(), time.monotonic()
    read = SLOW_READ_BYTES if client_fault == "slow_read" else None
    try:
        with session.post(url, data=body, headers=headers, stream=True, timeout=(10, timeout)) as response:
            answer.status = response.status_code
            answer.headers = {k.lower(): v for k, v in response.headers.items()}
            for chunk in response.iter_content(chunk_size=read):
                answer.chunks.append((time.monotonic() - start, chunk))
                if client_fault == "disconnect" and FIRST_CONTENT.search(b"".join(c for _, c in answer.chunks)):
                    response.close()  # the socket itself: the proxy sees its client gone
                    answer.hung_up = time.monotonic()
                    break
                if time.monotonic() - start > timeout:
                    answer.timed_out = True
                    break
                if read is not None:
                    time.sleep(SLOW_READ_PAUSE)
    except requests.exceptions.Timeout:
        answer.timed_out = True
    except (requests.RequestException, OSError) as exc:
        answer.error = f"{type(exc).__name__}: {exc}"
    return answer

def _send_slowly(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Answer:
    """The body in ``SLOW_BODY_PIECES`` writes ``SLOW_BODY_PAUSE`` apart, its length announced
    (as the SDKs send it), then the answer read as it comes."""
    answer, start = Answer(), time.monotonic()
    parts = urlsplit(url)
    connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_class(parts.netloc, timeout=timeout)
    size = -(-len(body) // SLOW_BODY_PIECES)
    try:
        connection.putrequest("POST", parts.path + (f"?{parts.query}" if parts.query else ""),
                              skip_accept_encoding=True)
        for name, value in {**headers, "content-length": str(len(body))}.items():
            connection.putheader(name, value)
        connection.endheaders()
        for i in range(0, len(body), size):
            if i:
                time.sleep(SLOW_BODY_PAUSE)
            connection.send(body[i:i + size])
        response = connection.getresponse()
        answer.status = response.status
        answer.headers = {k.lower(): v for k, v in response.getheaders()}
        while chunk := response.read1(65536):
            answer.chunks.append((time.monotonic() - start, chunk))
            if time.monotonic() - start > timeout:
                answer.timed_out = True
                break
    except TimeoutError:
        answer.timed_out = True
    except (http.client.HTTPException, OSError) as exc:
        answer.error = f"{type(exc).__name__}: {exc}"
    finally:
        connection.close()
    return answer
