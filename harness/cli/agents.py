"""``toolcall-conformance agents``: real coding agents run against the proxy (harness.agents)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from harness.agents.agents import AGENTS
from harness.agents.cases import DEFAULT_FORMATS, NATIVE, all_cases
from harness.agents.install import default_cache, install, pins
from harness.agents.runner import DEFAULT_RUN_TIMEOUT, Outcome, Target, play_all, table
from harness.generate.formats import FORMATS
from harness.core.dialects import DIALECTS
from harness.run.config import RunConfig, shared_options


def _names(value: str, known: list[str], what: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise click.BadParameter(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return names


@click.command("agents")
@shared_options("proxy-url", "mock-host", "mock-port")
@click.option("--agent", "agent_names", default=",".join(AGENTS), show_default=True, metavar="NAMES",
              help="The agents to run, comma separated.")
@click.option("--format", "format_names", default=",".join(DEFAULT_FORMATS), show_default=True, metavar="FORMATS",
              help="How the model writes the call: 'native' or text format ids, comma separated.")
@click.option("--upstream", default="native", show_default=True,
              type=click.Choice(["native", *DIALECTS]),
              help="With --proxy-url: the dialect that proxy calls the mock in ('native': each agent's own); "
                   "only the cases of that upstream are played.")
@click.option("--record", type=click.Path(path_type=Path), metavar="DIR",
              help="Save each run's event stream, stderr, verdict and every request that reached the mock.")
@click.option("--cache", type=click.Path(path_type=Path), metavar="DIR",
              help="Where the agents are installed with npm (default: $TOOLCALL_AGENTS_CACHE or "
                   "~/.cache/toolcall-conformance/agents).")
@click.option("--no-install", is_flag=True, help="Skip agents that are not installed in the cache already.")
@click.option("--run-timeout", type=float, default=DEFAULT_RUN_TIMEOUT, show_default=True, metavar="SECONDS",
              help="Seconds one agent run may take (agents never exit while nothing answers).")
def agents_command(config: RunConfig, agent_names: str,
                   format_names: str, upstream: str, record: Path | None, cache: Path | None, no_install: bool,
                   run_timeout: float) -> None:
    """Run Claude Code, Codex CLI and OpenCode offline against the proxy (default: the bundled
    reference proxy) in front of the mock, and judge what they did (docs/agents.md)."""
    chosen = [AGENTS[n] for n in _names(agent_names, list(AGENTS), "agent")]
    formats = tuple(_names(format_names, [NATIVE, *FORMATS], "format"))
    cache = cache or default_cache()
    started = time.monotonic()
    installs = {}
    for agent in chosen:
        pin = pins()[agent.id]
        installs[agent.id] = install(pin, cache, allow_download=not no_install)
        state = "ready" if installs[agent.id].binary else f"SKIPPED: {installs[agent.id].reason}"
        click.echo(f"{pin.spec}: {state}", err=True)
    target = Target(config.proxy_url, config.mock_host, config.mock_port or 0,
                    None if upstream == "native" else DIALECTS[upstream])

    def progress(outcome: Outcome) -> None:
        click.echo(f"{outcome.status:<4} {outcome.case.name} ({outcome.seconds:.1f} s)", err=True)

    outcomes = play_all(all_cases(chosen, formats), installs, target, cache=cache, timeout=run_timeout,
                        record=record, progress=progress)
    for outcome in outcomes:
        if outcome.status == "FAIL":
            click.echo(outcome.report())
    skipped = sorted({o.reason for o in outcomes if o.status == "skip"})
    for reason in skipped:
        click.echo(f"skipped: {reason}")
    click.echo(table(outcomes))
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in ("pass", "FAIL", "skip")}
    click.echo(f"{counts['pass']} passed, {counts['FAIL']} failed, {counts['skip']} skipped "
               f"in {time.monotonic() - started:.1f} s")
    if counts["FAIL"]:
        sys.exit(1)
