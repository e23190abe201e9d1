"""``toolcall-conformance fuzz``: generated cases against a proxy, findings as scenario files."""

from __future__ import annotations

import random
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.core.dialects.clients import DEFAULT_PROFILE
from harness.generate.fuzz.case import DIALECT_CLIENTS, NATIVE
from harness.run.options import shared_options

if TYPE_CHECKING:
    from harness.run.fuzzing import Finding, FormatResult

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")
DEFAULT_DATABASE = Path(".hypothesis") / "conformance-fuzz"


def parse_duration(text: str) -> float:
    """``90``, ``90s``, ``10m`` or ``1.5h`` as seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"--max-time {text!r}: expected seconds or a number with s, m or h (e.g. 10m)")
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2) or "s"]


def all_formats() -> list[str]:
    """Every text format the library has writers for, and native calls."""
    from harness.generate.formats import FORMATS

    return [*FORMATS, NATIVE]


def parse_formats(values: Sequence[str]) -> tuple[str, ...]:
    known = all_formats()
    chosen = [part.strip() for value in values for part in value.split(",") if part.strip()]
    unknown = [f for f in chosen if f not in known]
    if unknown:
        raise ValueError(f"--formats: unknown format(s) {', '.join(unknown)} (known: {', '.join(known)})")
    return tuple(dict.fromkeys(chosen)) or tuple(known)


def replay_args(scenario_id: str, out: Path, *, proxy_url: str | None, mock: tuple[str, int] | None,
                features: str | None, strict: bool) -> list[str]:
    args = ["toolcall-conformance", "replay", scenario_id, "--scenarios", str(out)]
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


def finding_lines(finding: Finding, replay: str) -> list[str]:
    from harness.report.scorecard import render_failures

    text = render_failures(finding.run, reproduce=lambda attempt: replay)
    return [
        f"  scenario written to {finding.path} (id {finding.scenario_id})",
        f"  replay: {replay}",
        *("    " + line for line in text.splitlines()),
    ]


@click.command("fuzz")
@shared_options("proxy-url", "features", "strict", "timeout", "proxy-header", "mock-host", "mock-port")
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
    proxy_url: str | None,
    features: tuple[str, ...],
    strict: bool,
    timeout: float,
    proxy_header: tuple[str, ...],
    mock_host: str,
    mock_port: int,
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
    from harness.run.embedded import EmbeddedServers
    from harness.generate.fuzz.case import Profile
    from harness.run.fuzzing import FuzzSettings, fuzz
    from harness.run.runner import RunSettings, parse_features, parse_headers
    from mock_backends.control import MockControl

    try:
        chosen = parse_formats(formats)
        limit = parse_duration(max_time) if max_time is not None else None
        proxy_headers = parse_headers(proxy_header)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    run_seed = seed if seed is not None else random.SystemRandom().randrange(1, 1_000_000)
    dialects: tuple[Profile, ...] = tuple(p for p in DIALECT_CLIENTS if p.name in profiles) or (DEFAULT_PROFILE,)
    servers = EmbeddedServers(mock_host=mock_host, mock_port=mock_port, with_proxy=proxy_url is None)
    with servers as urls:
        target = proxy_url.rstrip("/") if proxy_url else urls.proxy_url
        assert target is not None
        claimed = parse_features(features) if features else urls.proxy_features
        settings = RunSettings(proxy_url=target, features=claimed, strict=strict, timeout=timeout,
                               proxy_headers=proxy_headers)
        config = FuzzSettings(run=settings, formats=chosen, profiles=dialects, examples=examples, seed=run_seed,
                              max_time=limit, database=None if no_database else database, out=out)
        host, _, port = urls.mock_url.removeprefix("http://").rpartition(":")
        replay_base = dict(proxy_url=proxy_url.rstrip("/") if proxy_url else None, mock=(host, int(port)),
                           features=",".join(sorted(claimed)) if features else None, strict=strict)
        who = "the bundled reference proxy" if proxy_url is None else "your proxy"
        click.echo(f"fuzz: proxy under test {target} ({who}); mock backend at {urls.mock_url}")
        click.echo(f"fuzz: formats {', '.join(chosen)}; {examples} example(s) each; seed {run_seed} "
                   f"(reproduce with --seed {run_seed}); client profile(s) {', '.join(p.name for p in dialects)}; "
                   f"features {', '.join(sorted(claimed)) or 'none'}")

        def replay(scenario_id: str) -> str:
            return shlex.join(replay_args(scenario_id, out, **replay_base))  # type: ignore[arg-type]

        def progress(result: FormatResult) -> None:
            click.echo(format_line(result))
            if result.finding is not None:
                for line in finding_lines(result.finding, replay(result.finding.scenario_id)):
                    click.echo(line)

        with MockControl(urls.mock_url.replace("://0.0.0.0:", "://127.0.0.1:")) as mock:
            report = fuzz(config, mock, replay_command=replay, progress=progress)
    rate = report.examples / report.elapsed if report.elapsed > 0 else 0.0
    found = report.findings
    click.echo(f"fuzz: {report.examples} example(s) in {report.elapsed:.1f} s ({rate:.1f} examples/s); "
               + (f"{len(found)} format(s) failed; scenario files under {out}" if found else "no failure"))
    if found:
        sys.exit(1)
