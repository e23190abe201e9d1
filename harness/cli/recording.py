"""``toolcall-conformance record``: live traffic in, captures and scenarios out; and
``toolcall-conformance drift``: which recorded answers changed shape.

Not ``run --record DIR``, which writes a conformance run's own exchanges as HAR files: this
command stands in front of a real backend (or a proxy) and turns its traffic into cases.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import click
import uvicorn

from harness.capture.drift import drifts
from harness.capture.errors import CaptureError
from harness.capture.recording import MODES
from harness.core.dialects import DIALECTS
from harness.run.recorder import CaptureStore, Recorder, RecorderConfig
from harness.run.servers import listen_socket

EXIT_DRIFT = 1


@click.command("record")
@click.option("--upstream", metavar="URL", help="Base URL of the backend or proxy to record (e.g. "
              "http://127.0.0.1:8000/v1); not needed to replay with --mode none.")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path), metavar="DIR",
              help="Folder of the captures (DIR/captures/<server>/<version>/) and scenarios (DIR/scenarios/).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option("--port", default=8700, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free); point the client or the proxy's upstream here.")
@click.option("--mode", type=click.Choice(MODES), default="new-episodes", show_default=True,
              help="none: replay only, refuse a request with no recording (naming the nearest); once: record into "
                   "an empty folder, else as none; new-episodes: replay what is recorded, record the rest; "
                   "rewrite: record everything again.")
@click.option("--dialect", type=click.Choice(tuple(DIALECTS)), help="The API every request is in "
              "(default: told by the path: /chat/completions, /messages, /responses).")
@click.option("--server", metavar="NAME", help="Name the captures are kept under (default: the upstream's "
              "Server header), e.g. vllm or llama.cpp.")
@click.option("--server-version", "version", default="unknown", show_default=True, metavar="VERSION",
              help="The upstream's version, e.g. 0.11.0 (captures are kept per server and version).")
def record_command(upstream: str | None, out: Path, host: str, port: int, mode: str, dialect: str | None,
                   server: str | None, version: str) -> None:
    """Record every exchange passing through as a capture and a scenario to review.

    Each answer is relayed as it arrives (frames are never collapsed); secrets are scrubbed
    and ids canonicalised before anything is written. Shape drift (an answer whose shape
    changed since the last capture of its request) and request drift (under --mode none, a
    request no recording matches) are printed and logged to DIR/drift.jsonl.
    """
    config = RecorderConfig(out=out, upstream=upstream, mode=mode,
                            dialect=DIALECTS[dialect] if dialect else None, server=server, version=version,
                            recorded_on=datetime.now(timezone.utc).date().isoformat())
    try:
        recorder = Recorder(config, notify=lambda text: click.echo(text, err=True))
    except CaptureError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    url = f"http://{host}:{sock.getsockname()[1]}"
    held = len(recorder.store.recordings)
    click.echo(f"recorder listening on {url} (mode {mode}, {held} capture(s) in {out})")
    click.echo(f"  point the client or the proxy's upstream at {url}/v1" +
               (f"; recording {upstream}" if upstream else ""))
    server_ = uvicorn.Server(uvicorn.Config(recorder.app, log_level="warning", access_log=False, lifespan="on"))
    server_.run(sockets=[sock])


@click.command("drift")
@click.argument("folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per drift.")
def drift_command(folder: Path, as_json: bool) -> None:
    """Report shape drift in a recording folder: each request whose newest capture has another
    shape than the capture before it (same server). Exit status 1 when any did, for CI."""
    store = CaptureStore(folder)
    found = drifts(store.recordings)
    for drift in found:
        click.echo(json.dumps(drift.to_json()) if as_json else drift.describe())
    if not as_json:
        click.echo(f"{len(store.recordings)} capture(s), {len(found)} shape drift(s)", err=True)
    if found:
        sys.exit(EXIT_DRIFT)
