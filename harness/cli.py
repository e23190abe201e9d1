"""The ``toolcall-conformance`` command.

Each subcommand is a thin shell over a pure core; the servers' commands live with
their packages and are attached here, so this module only wires them together.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from harness.errors import ConformanceError
from harness.scenario import bundled_scenarios_dir, validate_paths


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="toolcall-conformance")
def main() -> None:
    """Conformance suite for LLM tool-call proxies: mock backends, a reference proxy
    and the rules real clients depend on."""


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
def validate(paths: tuple[Path, ...]) -> None:
    """Check scenario files (default: the bundled library); report every problem."""
    scenarios, problems = validate_paths(paths or (bundled_scenarios_dir(),))
    for problem in problems:
        click.echo(str(problem), err=True)
    click.echo(f"{len(scenarios)} valid, {len(problems)} problem(s)")
    if problems:
        sys.exit(1)


@main.command("list")
@click.option("--scenarios", "dirs", multiple=True, type=click.Path(path_type=Path), help="Scenario folder (repeatable).")
@click.option("--tag", "tags", multiple=True, help="Only scenarios with this tag (repeatable: all must match).")
@click.option("--family", "families", multiple=True, help="Only these families (repeatable).")
def list_(dirs: tuple[Path, ...], tags: tuple[str, ...], families: tuple[str, ...]) -> None:
    """Print the scenario catalogue: id, family, tags, title."""
    scenarios, problems = validate_paths(dirs or (bundled_scenarios_dir(),))
    for problem in problems:
        click.echo(str(problem), err=True)
    chosen = [
        s
        for s in scenarios
        if all(t in s.tags for t in tags) and (not families or s.family in families)
    ]
    if chosen:
        w_id = max(len(s.id) for s in chosen)
        w_fam = max(len(s.family) for s in chosen)
        for s in chosen:
            click.echo(f"{s.id:<{w_id}}  {s.family:<{w_fam}}  {','.join(s.tags) or '-'}  {s.title}")
    click.echo(f"{len(chosen)} scenario(s)", err=True)
    if problems:
        sys.exit(1)


def _attach_server_commands() -> None:
    from harness.import_command import import_command
    from mock_backends.cli import mock
    from harness.soak import soak
    from reference_proxy.cli import proxy

    main.add_command(mock)
    main.add_command(soak)
    main.add_command(proxy)
    main.add_command(import_command)


_attach_server_commands()


def run_main() -> None:
    """Entry point that turns our own errors into one line and exit status 2."""
    try:
        main(standalone_mode=True)
    except ConformanceError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


# --------------------------------------------------------------------------- run / replay


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="Every other option goes to pytest and its conformance plugin: -k, -x, -n 4, --features, --strict, "
    "--client-profile, --rechunk N, --model, --proxy-header, --expect-failures, --report-json, --report-md "
    "(see docs/harness.md or 'pytest --help').",
)
@click.option("--proxy-url", metavar="URL", help="The proxy under test (default: the bundled reference proxy).")
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def run(proxy_url: str | None, pytest_args: tuple[str, ...]) -> None:
    """Run the conformance suite (pytest with the plugin) and print the score card;
    exit status non-zero on any failure."""
    import os

    import pytest

    # This process imported the harness (and httpx's anyio) before pytest started, so
    # pytest cannot assertion-rewrite them; nothing here relies on that. Only scenarios
    # are collected, so a pytest-asyncio installed beside the harness has nothing to run:
    # its warning about a setting the user's folder leaves unset is noise here.
    args = [
        "--conformance-only",
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        "-W", 'ignore:The configuration option "asyncio_default_fixture_loop_scope" is unset',
    ]
    if proxy_url:
        args += ["--proxy-url", proxy_url]
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "harness.plugin"]
    sys.exit(int(pytest.main([*args, *pytest_args])))


@main.command()
@click.argument("scenario_id")
@click.option("--proxy-url", metavar="URL", help="The proxy under test (default: start the reference proxy).")
@click.option("--scenarios", "dirs", multiple=True, type=click.Path(path_type=Path), help="Scenario folder (repeatable).")
@click.option("--stream/--no-stream", default=None, help="Override the request's stream flag.")
@click.option("--rechunk-seed", type=int, default=None, help="Replay a re-chunked variant of this seed.")
@click.option("--rechunk-variant", type=int, default=0, show_default=True, help="Which variant of the seed.")
@click.option("--split", "split", metavar="OFFSETS", help="Content split points, e.g. 17,40 (from a shrunk failure).")
@click.option("--client-profile", type=click.Choice(["openai", "vtc", "anthropic"]), default=None,
              help="Replay under this client profile (default: the scenario's own).")
@click.option("--features", multiple=True, help="Features your proxy has (comma separated, repeatable).")
@click.option("--strict", is_flag=True, help="Also enforce 'spec' severity rules.")
@click.option("--timeout", type=float, default=10.0, show_default=True, help="Seconds before the exchange counts as hanging.")
@click.option("--model", "models", multiple=True, metavar="[FAMILY=]NAME", help="Model name to send.")
@click.option("--proxy-header", "headers", multiple=True, metavar="'NAME: VALUE'", help="Extra header for the proxy.")
@click.option("--mock-host", default="127.0.0.1", show_default=True, help="Interface the mock listens on.")
@click.option("--mock-port", type=int, default=0, help="Port of the mock (default: a free one).")
@click.option("--mock-url", default=None, help="Use a mock backend already running there.")
def replay(
    scenario_id: str,
    proxy_url: str | None,
    dirs: tuple[Path, ...],
    stream: bool | None,
    rechunk_seed: int | None,
    rechunk_variant: int,
    split: str | None,
    client_profile: str | None,
    features: tuple[str, ...],
    strict: bool,
    timeout: float,
    models: tuple[str, ...],
    headers: tuple[str, ...],
    mock_host: str,
    mock_port: int,
    mock_url: str | None,
) -> None:
    """Replay one scenario's exchange: print the answer as received and the rule verdicts."""
    from difflib import get_close_matches

    from harness.embedded import EmbeddedServers
    from harness.profiles import choose_profile, parse_profile
    from harness.report import evidence_lines, rule_heading, rules_by_id
    from harness.runner import RunSettings, parse_features, parse_headers, parse_models, with_profile_features
    from harness.runner import replay as replay_exchange
    from harness.transcript import Position
    from mock_backends.control import MockControl

    scenarios, problems = validate_paths(dirs or (bundled_scenarios_dir(),))
    for problem in problems:
        click.echo(str(problem), err=True)
    by_id = {s.id: s for s in scenarios}
    if scenario_id not in by_id:
        close = get_close_matches(scenario_id, list(by_id), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else " (see 'toolcall-conformance list')"
        raise click.UsageError(f"no scenario {scenario_id!r}{hint}")
    scenario = by_id[scenario_id]
    try:
        model_choice = parse_models(models)
        proxy_headers = parse_headers(headers)
        splits = [int(p) for p in split.split(",") if p.strip()] if split else None
        profile = parse_profile(client_profile) if client_profile else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    servers = EmbeddedServers(mock_host=mock_host, mock_port=mock_port, with_proxy=proxy_url is None,
                              mock_url=mock_url)
    with servers as urls:
        target = proxy_url.rstrip("/") if proxy_url else urls.proxy_url
        assert target is not None
        claimed = with_profile_features(parse_features(features) if features else urls.proxy_features, profile)
        settings = RunSettings(proxy_url=target, features=claimed, strict=strict, timeout=timeout,
                               models=model_choice, proxy_headers=proxy_headers, seed=rechunk_seed or 0)
        chosen, skip = choose_profile(scenario, profile, claimed)
        click.echo(f"scenario {scenario.id} ({scenario.family}): {scenario.title}")
        click.echo(f"proxy {target}{' (reference proxy)' if proxy_url is None else ''}; mock backend {urls.mock_url}"
                   f"; profile {chosen}; features {', '.join(sorted(claimed)) or 'none'}")
        if skip:
            click.echo(f"note: a conformance run would skip this: {skip}")
        with MockControl(urls.mock_url.replace("://0.0.0.0:", "://127.0.0.1:")) as mock:
            result = replay_exchange(
                scenario, settings=settings, mock=mock, profile=chosen, stream=stream,
                variant_index=rechunk_variant if rechunk_seed is not None else None, splits=splits,
            )
    ex = result.exchange
    if result.variant is not None:
        click.echo(result.variant.label)
    if splits is not None:
        click.echo(f"content split at {', '.join(map(str, splits))}")
    status = "no response" if ex.status is None else f"HTTP {ex.status}"
    timing = f"first byte {ex.first_byte:.3f} s, " if ex.first_byte is not None else ""
    click.echo(f"--- answer as received ({'streaming' if ex.stream else 'non-streaming'} request; {status}; "
               f"{len(ex.raw)} bytes; {timing}total {ex.elapsed:.3f} s) ---")
    click.echo(ex.raw.decode("utf-8", "replace"), nl=not ex.raw.endswith(b"\n"))
    click.echo("--- end of answer ---")
    if ex.timed_out:
        click.echo(f"the exchange was abandoned after {timeout:g} s")
    if ex.transport_error:
        click.echo(f"transport error: {ex.transport_error}")
    click.echo(f"{len(ex.upstream)} request(s) reached the mock backend")
    if not result.failures:
        click.echo("verdict: every applicable rule holds")
        return
    rules = rules_by_id()
    click.echo(f"verdict: {len(result.failures)} rule(s) broken")
    for failure in result.failures:
        click.echo(rule_heading(failure.rule_id, rules))
        for line in [*failure.message.splitlines(), *evidence_lines(failure.evidence)]:
            click.echo(f"  {line}")
        position = Position.of(failure.evidence)
        if position.known:
            click.echo(f"  at {position.describe()}")
    sys.exit(1)
