"""Captured exchanges, read into one neutral model.

People save what they saw in the field with whatever tool was at hand: ``curl -N``
output, a ``chat.completion`` or Messages body, a browser or mitmproxy HAR, a proxy's
JSON-lines log, in either API dialect (OpenAI chat completions, Anthropic Messages).
Each reader turns its format into ``Capture`` objects holding the request, the
response's deltas in their original split points and what the backend reported, so
the importer never cares where a capture came from. This module tells the formats
apart and hands each to its reader: ``capture_chat`` and ``capture_messages`` (an
answer of either dialect), ``capture_har`` and ``capture_jsonl`` (files of several
exchanges); ``capture_exchange`` puts request and answer together.

Pure: bytes in, captures out. Secrets never enter the model: credential headers are
dropped on reading and their values, with anything that looks like an API key, are
redacted from the request body. Every problem is one ``CaptureError`` line naming the
file and what is wrong.
"""

from __future__ import annotations

from harness.capture.chat import read_chunks, read_completion_object, read_sse
from harness.capture.errors import CaptureError
from harness.capture.exchange import make_capture, request_from_text
from harness.capture.har import read_har
from harness.capture.jsonl import read_jsonl
from harness.capture.model import FORMAT_NAMES, CaptureFile, CaptureFormat
from harness.capture.secrets import Secrets
from harness.capture.text import decode_text, detect_format, parse_json, strip_http_head

# --------------------------------------------------------------------------- entry point


def read_captures(
    data: bytes,
    name: str,
    *,
    fmt: CaptureFormat | None = None,
    request: bytes | None = None,
    request_name: str | None = None,
    entry: int | None = None,
) -> CaptureFile:
    """Read one capture file.

    ``name`` is how messages and the scenario's ``source`` refer to the file (give the
    bare file name). ``request`` is the JSON body of a separately saved request, for
    the SSE and JSON formats; ``entry`` picks one exchange of a HAR (its entry number)
    or JSONL file (its line number).
    """
    fmt = fmt or detect_format(data, name)
    if fmt in ("har", "jsonl"):
        if request is not None:
            raise CaptureError(f"{name}: --request applies to SSE and JSON captures; a {FORMAT_NAMES[fmt]} file "
                               "carries its own requests")
        return read_har(data, name, entry) if fmt == "har" else read_jsonl(data, name, entry)
    if entry is not None:
        raise CaptureError(f"{name}: --entry applies to HAR and JSON-lines files; this is one exchange")
    secrets = Secrets()
    body = None
    if request is not None:
        body = request_from_text(request, request_name or "request", secrets)
    if fmt == "sse":
        resp = read_sse(data, name)
    else:
        text = decode_text(strip_http_head(data, name), name).strip()
        if not text:
            raise CaptureError(f"{name}: the file is empty")
        obj = parse_json(text, name)
        resp = read_chunks(obj, name) if isinstance(obj, list) else read_completion_object(obj, name)
    streamed = fmt == "sse" or resp.events != 1 or resp.done
    return CaptureFile(
        (make_capture(resp, origin=name, fmt=fmt, streamed=streamed, request=body, headers={}, secrets=secrets,
                  file=name),)
    )
