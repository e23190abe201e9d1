"""``toolcall-conformance mock``: run the mock backend as a standalone upstream for any proxy."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click
import uvicorn

from harness.core.errors import ScenarioError
from harness.core.nonce import NONCE_HEADER
from harness.core.replay.fault_rate import FaultRate
from harness.core.scenario.loading import bundled_scenarios_dir, validate_paths
from harness.run.servers import listen_socket
from mock_backends.app import create_app, logger


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on.")
@click.option(
    "--port", default=9000, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on (0: any free)."
)
@click.option(
    "--scenarios",
    "paths",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Scenario folder or file to preload, so runs can be armed by id (repeatable; default: the bundled library).",
)
@click.option("--quiet", is_flag=True, help="Do not log a line per request.")
@click.option("--fault-rate", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Share of requests answered with an upstream fault (drop, stall, 503, 429), drawn from --fault-seed.")
@click.option("--fault-seed", type=int, default=0, show_default=True, help="Seed the faulted requests are drawn from.")
@click.option("--fault-stall", type=click.FloatRange(0.0), default=2.0, show_default=True,
              help="Seconds a drawn stall lasts.")
def mock(host: str, port: int, paths: tuple[Path, ...], quiet: bool, fault_rate: float, fault_seed: int,
         fault_stall: float) -> None:
    """Run the mock OpenAI-compatible backend that replays scenarios to a proxy.

    Point the proxy's upstream at http://HOST:PORT with any path prefix (/v1, /openai/v1, or a full
    .../chat/completions URL). Each request is answered by the run whose nonce it carries; arm runs
    with POST /_mock/runs (see docs/mock-backend.md).
    """
    try:
        scenarios, problems = validate_paths(paths or (bundled_scenarios_dir(),))
    except ScenarioError as exc:
        raise click.ClickException(_one_line(str(exc))) from exc
    if problems:
        more = f" (and {len(problems) - 1} more; run 'toolcall-conformance validate')" if len(problems) > 1 else ""
        raise click.ClickException(f"cannot load scenarios: {_one_line(str(problems[0]))}{more}")
    rate = FaultRate(fault_rate, fault_seed, fault_stall) if fault_rate > 0 else None
    app = create_app(scenarios, fault_rate=rate)
    try:
        sock = listen_socket(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    url = f"http://{host}:{sock.getsockname()[1]}"
    example = scenarios[0].id if scenarios else "<scenario id>"
    click.echo(f"mock backend listening on {url} ({len(scenarios)} scenario(s) preloaded)")
    click.echo(f"  proxy upstream: {url}/v1 (any prefix works: POST .../chat/completions, GET .../models)")
    click.echo(
        f"  arm a run:      curl -s -X POST {url}/_mock/runs -H 'content-type: application/json' "
        f"-d '{{\"scenario_id\": \"{example}\"}}'"
    )
    click.echo(f"  then send the returned nonce in the {NONCE_HEADER} header, the 'user' field or a user message;")
    click.echo("  a request without one takes the oldest armed run that has received none (one client at a time)")
    click.echo(f"  recorded requests: GET {url}/_mock/runs/<nonce>")
    if rate is not None:
        click.echo(f"  faults: {rate.rate:.1%} of requests (drop, stall {rate.stall_seconds:g} s, 503, 429), "
                   f"seed {rate.seed}")
    if not quiet:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", datefmt="%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=2)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
