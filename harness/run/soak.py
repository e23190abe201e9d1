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

from harness.run.config import RunConfig, shared_options

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
SOAK_TIMEOUT = 30.0


# The soak's timeout allows for a loaded machine: many clients at once, each answer paced by --frame-delay-ms.
@click.command()
@shared_options("proxy-url", "users", "spawn-rate", "duration", "exchanges", "fault-rate", "fault-seed", "fault-stall",
                "client-fault-rate", "mock-host",
                "mock-port", "proxy-pid", "scenario", "features", "frame-delay-ms", "timeout", "progress-every",
                defaults={"timeout": SOAK_TIMEOUT})
def soak(config: RunConfig) -> None:
    """Soak the proxy under test with many clients at once, on Locust, judging every exchange.

    Prints a progress line every few seconds and, at the end, the exchanges, the ok ones,
    rule failures by rule id, the faulted exchanges handled, first-content and total
    p50/p99, the proxy's RSS over time (with --proxy-pid), and a verdict: the exit status is
    non-zero when an exchange broke a rule, a proxy kept its upstream request open after its
    client hung up, or the proxy's memory grew. docs/soak.md shows the same
    locustfile on Locust's own master and workers.
    """
    from locust.util.timespan import parse_timespan

    from harness.run.processes import ending_on_sigterm, free_port, running

    proxy_url, duration, users, timeout = config.proxy_url, config.duration, config.users, config.timeout
    fault_rate, fault_stall, proxy_pid = config.fault_rate, config.fault_stall, config.proxy_pid
    try:
        parse_timespan(duration)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--duration") from exc

    seed = config.fault_seed if config.fault_seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    port = config.mock_port or free_port()
    mock_args = ["--host", config.mock_host, "--port", str(port), "--quiet", "--fault-rate", str(fault_rate),
                 "--fault-seed", str(seed), "--fault-stall", str(fault_stall)]
    with ExitStack() as stack:
        stack.enter_context(ending_on_sigterm())
        # The mock and the reference proxy start side by side, each from its own command alone.
        mock = stack.enter_context(running("the mock backend", mock_args, port, "/_mock/health",
                                           command="mock_backends.cli:mock", wait=False))
        mock_url = f"http://127.0.0.1:{port}"
        if proxy_url is None:
            proxy_port = free_port()
            proxy = stack.enter_context(running(
                "the reference proxy", ["--upstream", f"{mock_url}/v1", "--port", str(proxy_port), "--log-level",
                                        "warning"], proxy_port, "/health", command="reference_proxy.cli:proxy"))
            proxy_url = f"{proxy.url}/v1"
            proxy_pid = proxy_pid or proxy.process.pid
            click.echo(f"soak: the reference proxy at {proxy_url} (pid {proxy_pid})")
        else:
            click.echo(f"soak: proxy under test {proxy_url}; its upstream must be {mock.url}/v1")
        mock.await_health()
        until = f"{config.exchanges} exchanges or {duration}" if config.exchanges else duration
        click.echo(f"soak: {users} user(s) for {until}; faults {fault_rate:.1%} of upstream requests and "
                   f"{config.client_fault_rate:.1%} of clients, seed {seed} (reproduce with --fault-seed {seed})")
        rate = config.spawn_rate or float(min(users, 100))
        command = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
            "--users", str(users), "--spawn-rate", f"{rate:g}", "--soak-duration", duration,
            "--host", proxy_url.rstrip("/"), "--stop-timeout", f"{timeout:g}", "--loglevel", "WARNING",
            "--mock-url", mock_url, "--fault-rate", str(fault_rate), "--fault-seed", str(seed),
            "--fault-stall", str(fault_stall), "--client-fault-rate", str(config.client_fault_rate),
            "--exchange-timeout", f"{timeout:g}",
            "--progress-every", f"{config.progress_every:g}", "--soak-scenarios", ",".join(config.scenario),
            "--soak-features", ",".join(sorted(config.features or ())),
            "--frame-delay-ms", f"{config.frame_delay_ms:g}",
        ]
        if proxy_pid:
            command += ["--proxy-pid", str(proxy_pid)]
        if config.exchanges:
            command += ["--soak-exchanges", str(config.exchanges)]
        status = subprocess.call(command)
    sys.exit(status)
