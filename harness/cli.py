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
    from mock_backends.cli import mock
    from reference_proxy.cli import proxy

    main.add_command(mock)
    main.add_command(proxy)


_attach_server_commands()


def run_main() -> None:
    """Entry point that turns our own errors into one line and exit status 2."""
    try:
        main(standalone_mode=True)
    except ConformanceError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
