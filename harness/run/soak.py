"""``toolcall-conformance soak``: many clients through the proxy under test, for a long time.

A thin shell: it starts the mock (and, without ``--proxy-url``, the reference proxy) as
processes of their own, then runs Locust headless on ``harness/run/locustfile.py`` in another
process (Locust patches the standard library for gevent when imported, which this
process must not be). Locust's exit status is the command's: non-zero when any exchange
broke a rule.
"""

from __future__ import annotations

import random
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from harness.run.options import shared_options

LOCUSTFILE = Path(__file__).with_name("locustfile.py")


@click.command()
@shared_options("proxy-url", "mock-host", "features")
@click.option("--users", type=click.IntRange(1), default=32, show_default=True, help="Concurrent clients.")
@click.option("--spawn-rate", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Clients started per second (default: all within about a second, at most 100 a second).")
@click.option("--duration", default="1m", show_default=True,
              help="How long, from the first client on, as Locust reads it: 30s, 10m, 1h30m.")
@click.option("--fault-rate", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Share of upstream requests the mock faults (drop, stall, 503, 429 with Retry-After).")
@click.option("--fault-seed", type=int, default=None, help="Seed of the faulted requests (default: random, printed).")
@click.option("--fault-stall", type=click.FloatRange(0.0), default=2.0, show_default=True,
              help="Seconds a drawn stall lasts.")
# Not the table's: the soak's mock port is checked as a port here, and its timeout allows for a loaded machine.
@click.option("--mock-port", type=click.IntRange(0, 65535), default=0,
              help="Port of the mock (default: a free one); configure your proxy's upstream as http://HOST:PORT/v1.")
@click.option("--proxy-pid", type=int, default=None, help="PID of the proxy, to report its memory (RSS) over time.")
@click.option("--scenario", "scenarios", multiple=True, metavar="ID",
              help="Scenario to play (repeatable; default: the isolation scenarios, which tag every exchange).")
@click.option("--frame-delay-ms", type=click.FloatRange(0.0), default=20.0, show_default=True,
              help="Milliseconds the mock waits before each frame, as a model generating tokens does.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=30.0, show_default=True,
              help="Seconds one exchange may take.")
@click.option("--progress-every", type=click.FloatRange(min=0, min_open=True), default=5.0, show_default=True,
              help="Seconds between progress lines.")
def soak(proxy_url: str | None, users: int, spawn_rate: float | None, duration: str, fault_rate: float,
         fault_seed: int | None, fault_stall: float, mock_host: str, mock_port: int, proxy_pid: int | None,
         scenarios: tuple[str, ...], features: tuple[str, ...], frame_delay_ms: float, timeout: float,
         progress_every: float) -> None:
    """Soak the proxy under test with many clients at once, on Locust, judging every exchange.

    Prints a progress line every few seconds and, at the end, the exchanges, the ok ones,
    rule failures by rule id, the faulted exchanges handled, first-content and total
    p50/p99, and the proxy's RSS over time (with --proxy-pid). docs/soak.md shows the same
    locustfile on Locust's own master and workers.
    """
    from locust.util.timespan import parse_timespan

    from harness.run.processes import free_port, running

    try:
        parse_timespan(duration)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--duration") from exc

    seed = fault_seed if fault_seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    port = mock_port or free_port()
    mock_args = ["mock", "--host", mock_host, "--port", str(port), "--quiet", "--fault-rate", str(fault_rate),
                 "--fault-seed", str(seed), "--fault-stall", str(fault_stall)]
    with ExitStack() as stack:
        mock = stack.enter_context(running("the mock backend", mock_args, port, "/_mock/health"))
        mock_url = f"http://127.0.0.1:{port}"
        if proxy_url is None:
            proxy_port = free_port()
            proxy = stack.enter_context(running(
                "the reference proxy",
                ["proxy", "--upstream", f"{mock_url}/v1", "--port", str(proxy_port), "--log-level", "warning"],
                proxy_port, "/health"))
            proxy_url = f"{proxy.url}/v1"
            proxy_pid = proxy_pid or proxy.process.pid
            click.echo(f"soak: the reference proxy at {proxy_url} (pid {proxy_pid})")
        else:
            click.echo(f"soak: proxy under test {proxy_url}; its upstream must be {mock.url}/v1")
        click.echo(f"soak: {users} user(s) for {duration}; faults {fault_rate:.1%} of upstream requests, seed {seed} "
                   f"(reproduce with --fault-seed {seed})", nl=True)
        rate = spawn_rate or float(min(users, 100))
        command = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
            "--users", str(users), "--spawn-rate", f"{rate:g}", "--soak-duration", duration,
            "--host", proxy_url.rstrip("/"), "--stop-timeout", f"{timeout:g}", "--loglevel", "WARNING",
            "--mock-url", mock_url, "--fault-rate", str(fault_rate), "--fault-seed", str(seed),
            "--fault-stall", str(fault_stall), "--exchange-timeout", f"{timeout:g}",
            "--progress-every", f"{progress_every:g}", "--soak-scenarios", ",".join(scenarios),
            "--soak-features", ",".join(features), "--frame-delay-ms", f"{frame_delay_ms:g}",
        ]
        if proxy_pid:
            command += ["--proxy-pid", str(proxy_pid)]
        status = subprocess.call(command)
    sys.exit(status)
