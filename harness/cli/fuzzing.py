"""``toolcall-conformance fuzz``: generated cases against a proxy, findings as scenario files."""

from __future__ import annotations

import contextlib
import functools
import random
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.core.dialects.clients import DEFAULT_PROFILE
from harness.core.redact import Redactor
from harness.generate.fuzz.case import DIALECT_CLIENTS
from harness.generate.fuzz.choices import all_formats, parse_duration, parse_formats
from harness.run.config import RunConfig, shared_options
from harness.run.program import program

if TYPE_CHECKING:
    from harness.generate.fuzz.case import Case
    from harness.run.fuzzing import FormatResult, Finding

DEFAULT_DATABASE = Path(".hypothesis") / "conformance-fuzz"


def replay_args(scenario_id: str, out: Path, *, proxy_url: str | None, mock: tuple[str, int] | None,
                features: str | None, strict: bool, profile: str | None = None,
                upstream: str | None = None) -> list[str]:
    args = [*program(), "replay", scenario_id, "--scenarios", str(out)]
    if profile is not None:  # a client played in another API than its cases are written in
        args += ["--client-profile", profile]
    if upstream is not None:
        args += ["--upstream-dialect", upstream]
    if proxy_url is not None:
        args += ["--proxy-url", proxy_url]
        if mock is not None:
            args += ["--mock-host", mock[0], "--mock-port", str(mock[1])]
    if features is not None:
        args += ["--features", features or ","]
    if strict:
        args.append("--strict")
    return args


def format_line(result: FormatResult) -> str:
    outcome = "no failure"
    if result.finding is not None:
        outcome = f"FAILED: {', '.join(result.finding.rules)}" + ("" if result.finding.shrunk else " (not shrunk)")
    stopped = f" (stopped: {result.stopped})" if result.stopped else ""
    width = max(map(len, all_formats()))  # the columns line up whatever the format
    return (f"  {result.format_id:<{width}} {result.examples:>6} example(s) {result.elapsed:7.1f} s "
            f"{result.rate:6.1f} examples/s  {outcome}{stopped}")


@click.command("fuzz")
@shared_options("proxy-url", "features", "strict", "timeout", "proxy-header", "mock-host", "mock-port",
                "upstream-dialect", "jobs", defaults={"upstream-dialect": "natural"})
@click.option("--examples", type=click.IntRange(min=1), default=100, show_default=True,
              help="Generated examples per format.")
@click.option("--seed", type=int, default=None, help="Seed of the generation (default: random, printed).")
@click.option("--max-time", "max_time", default=None, metavar="DURATION",
              help="Stop generating after this long (e.g. 90s, 10m, 1h); a failure found is still shrunk.")
@click.option("--formats", "formats", multiple=True, metavar="A,B",
              help="Text formats to write calls in, and 'native' (default: every format and native).")
@click.option("--client-profile", "profiles", multiple=True, type=click.Choice([p.name for p in DIALECT_CLIENTS]),
              help=f"Client dialect(s) to generate for (repeatable; default {DEFAULT_PROFILE.name}).")
@click.option("--out", type=click.Path(path_type=Path), default=Path("conformance-findings"), show_default=True,
              help="Folder the minimal failing cases are written to, one sub-folder per family.")
@click.option("--database", type=click.Path(path_type=Path), default=DEFAULT_DATABASE, show_default=True,
              help="Hypothesis example database: failures found before are replayed first.")
@click.option("--no-database", is_flag=True, help="Use no example database (a run depends on its seed alone).")
def fuzz_command(
    config: RunConfig,
    examples: int,
    seed: int | None,
    max_time: str | None,
    formats: tuple[str, ...],
    profiles: tuple[str, ...],
    out: Path,
    database: Path,
    no_database: bool,
) -> None:
    """Generate answers (prose, calls in every text format, native calls, cut anywhere),
    play them through the proxy, judge them by what was generated, and write the
    smallest failing case as a scenario file."""
    from harness.core.dialects.clients import Profile
    from harness.run.embedded import EmbeddedServers
    from harness.run.fuzz_pool import CasePool, default_jobs, warm_up
    from harness.run.fuzzing import FuzzSettings, finding_lines, fuzz
    from harness.run.settings import RunSettings

    began = time.monotonic()
    try:
        chosen = parse_formats(formats)
        limit = parse_duration(max_time) if max_time is not None else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    proxy_url = config.proxy_url
    redactor = Redactor.for_headers(config.proxy_header)
    run_seed = seed if seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    dialects: tuple[Profile, ...] = tuple(p for p in DIALECT_CLIENTS if p.name in profiles) or (DEFAULT_PROFILE,)
    if config.upstream_dialect == "spread":
        raise click.UsageError("fuzz plays every case in one upstream dialect: natural, a dialect's name, or all "
                               "(each format in every dialect in turn)")
    upstreams = config.upstreams
    served = tuple(u.name if u is not None else "native" for u in upstreams)
    servers = EmbeddedServers(mock_host=config.mock_host, mock_port=config.mock_port, with_proxy=proxy_url is None,
                              upstream_dialects=served)
    found: list[Finding] = []
    examples_played, elapsed = 0, 0.0
    jobs = config.jobs or default_jobs()
    warm_up()  # paid here, not by the first example: the examples' time is theirs alone
    # The workers first: they are forked before any server thread of this process runs.
    pool = CasePool(jobs, own=served if proxy_url is None else None) if jobs > 1 else None
    with contextlib.ExitStack() as stack:
        if pool is not None:
            stack.enter_context(pool)
        urls = stack.enter_context(servers)
        claimed = config.features if config.features is not None else urls.proxy_features
        host, _, port = urls.mock_url.removeprefix("http://").rpartition(":")
        who = "the bundled reference proxy" if proxy_url is None else "your proxy"
        click.echo(f"fuzz: formats {', '.join(chosen)}; {examples} example(s) each; seed {run_seed} "
                   f"(reproduce with --seed {run_seed}); client profile(s) {', '.join(p.name for p in dialects)}; "
                   f"features {', '.join(sorted(claimed)) or 'none'}")
        workers = f"{jobs} worker processes" if pool is not None else "no worker process"
        click.echo(f"fuzz: start-up {time.monotonic() - began:.1f} s (imports, {workers}, servers), "
                   "not counted in the examples' time")
        for upstream, name in zip(upstreams, served):
            target = proxy_url or urls.proxy_urls[name]
            settings = RunSettings(proxy_url=target, features=claimed, strict=config.strict, timeout=config.timeout,
                                   proxy_headers=config.proxy_header)
            fuzz_config = FuzzSettings(run=settings, formats=chosen, profiles=dialects, upstream=upstream,
                                       examples=examples, seed=run_seed, max_time=limit,
                                       database=None if no_database else database, out=out)
            replay_base = functools.partial(
                replay_args, out=out, proxy_url=proxy_url, mock=(host, int(port)),
                features=",".join(sorted(claimed)) if config.features is not None else None, strict=config.strict,
                upstream=upstream.name if upstream is not None else None)
            calls = f"calls {upstream.title} upstream" if upstream is not None else "calls each client's own API upstream"
            click.echo(f"fuzz: proxy under test {redactor.url(target)} ({who}; {calls}); mock backend at {urls.mock_url}")

            def replay(scenario_id: str, case: Case, base: Callable[..., list[str]] = replay_base) -> str:
                played = case.profile.name if case.profile is not case.profile.case_profile else None
                return shlex.join(base(scenario_id, profile=played))

            def progress(result: FormatResult) -> None:
                click.echo(format_line(result))
                if result.finding is not None:
                    command = replay(result.finding.scenario_id, result.finding.case)
                    for line in finding_lines(result.finding, command, redactor):
                        click.echo(line)

            with servers.control() as mock:
                report = fuzz(fuzz_config, mock, replay_command=replay, progress=progress, pool=pool)
            found += report.findings
            examples_played += report.examples
            elapsed += report.elapsed
    rate = examples_played / elapsed if elapsed > 0 else 0.0
    click.echo(f"fuzz: {examples_played} example(s) in {elapsed:.1f} s ({rate:.1f} examples/s); "
               + (f"{len(found)} format(s) failed; scenario files under {out}" if found else "no failure"))
    if found:
        sys.exit(1)
