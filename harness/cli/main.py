"""The ``toolcall-conformance`` command.

Each subcommand is a thin shell over a pure core; the servers' and tools' commands live
with their packages and are named here, imported only when a command line names them, so
this module only wires them together.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.core.errors import ConformanceError
from harness.core.scenario.loading import awaiting_review, bundled_scenarios_dir, review_note, validate_paths
from harness.run.options import BUNDLED_MODES, BY_NAME, OPTIONS, click_option, closest, unknown_long_options


class _LazyCommands(click.Group):
    """A group whose commands declared elsewhere (``module:attribute``) are imported when
    named: the servers' and tools' commands import FastAPI, uvicorn, Locust and the SDKs,
    a second and more that ``validate`` or the mock's own start need not pay."""

    def __init__(self, *args: Any, lazy: Mapping[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self._lazy.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        assert isinstance(command, click.Command) and command.name == cmd_name, where
        return command


@click.group(cls=_LazyCommands, context_settings={"help_option_names": ["-h", "--help"]},
             lazy={"mock": "mock_backends.cli:mock", "soak": "harness.run.soak:soak", "proxy": "reference_proxy.cli:proxy",
                   "import": "harness.cli.importing:import_command", "fuzz": "harness.cli.fuzzing:fuzz_command",
                   "agents": "harness.cli.agents:agents_command", "record": "harness.cli.recording:record_command",
                   "drift": "harness.cli.recording:drift_command"})
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
    pending = awaiting_review(scenarios)
    for scenario in pending:
        click.echo(f"warning: {review_note(scenario)}", err=True)
    waiting = f", {len(pending)} awaiting review" if pending else ""
    click.echo(f"{len(scenarios)} valid, {len(problems)} problem(s){waiting}")
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


def run_main() -> None:
    """Entry point that turns our own errors into one line and exit status 2."""
    try:
        main(standalone_mode=True)
    except ConformanceError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)


# --------------------------------------------------------------------------- run / replay

F = TypeVar("F", bound=Callable[..., Any])


def table_options(*, replay: bool) -> Callable[[F], F]:
    """The option table's entries as click options: those ``run`` offers (defaults left
    to the plugin) or those ``replay`` takes (with their defaults)."""

    def decorate(command: F) -> F:
        for option in reversed(OPTIONS):
            if not (option.replay if replay else option.cli):
                continue
            command = click_option(option, with_default=replay)(command)
        return command

    return decorate


def _pytest_long_options() -> set[str]:
    """Every ``--option`` pytest and its plugins know here (from ``pytest --help``)."""
    import contextlib
    import io
    import re

    import pytest

    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
        pytest.main(["--help", "-p", "no:cacheprovider"])
    return set(re.findall(r"(?<![\w-])--[a-zA-Z][\w-]*", text.getvalue()))


def _mistyped(args: Sequence[str]) -> list[str]:
    """A line for every ``--option`` among ``args`` that neither pytest nor this command
    knows but that looks like a misspelt option of ours (pytest asked only then)."""
    ours = [o.cli_flag for o in OPTIONS if o.cli]
    suspects = [(arg, match) for arg in unknown_long_options(args, ours)
                if (match := closest(arg, ours)) is not None]
    if not suspects:
        return []
    known = _pytest_long_options()
    return [f"error: no such option: {arg} (did you mean --{match}? see 'toolcall-conformance run --help')"
            for arg, match in suspects if arg not in known]


@main.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    epilog="Every other argument goes to pytest: -k EXPR, -x, -n 4 (pytest-xdist), --lf, --junitxml PATH, "
    "--tb long (the raw answers around every finding) ... The same options work in a plain pytest run as "
    "--conformance-<name> (see docs/harness.md).",
)
@table_options(replay=False)
@click.argument("pytest_args", nargs=-1, type=click.UNPROCESSED)
def run(pytest_args: tuple[str, ...], **values: Any) -> None:
    """Run the conformance suite (pytest with the plugin) and print the score card;
    exit status non-zero on any failure."""
    import os

    import pytest

    hints = _mistyped(pytest_args)
    if hints:
        for hint in hints:
            click.echo(hint, err=True)
        sys.exit(int(pytest.ExitCode.USAGE_ERROR))
    # Only scenarios are collected, so no assert statement needs pytest's rewriting: without
    # it an xdist worker does not parse and rewrite every module it imports (seconds each
    # where bytecode is not cached). A pytest-asyncio installed beside the harness has nothing
    # to run: its warning about a setting the user's folder leaves unset is noise here.
    assertions = [] if any(a == "--assert" or a.startswith("--assert=") for a in pytest_args) else ["--assert=plain"]
    args = [
        "--conformance-only", *assertions,
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        "-W", 'ignore:The configuration option "asyncio_default_fixture_loop_scope" is unset',
    ]
    for option in OPTIONS:
        if option.cli:
            args += option.pytest_args(values[option.dest])
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        args += ["-p", "harness.pytest.plugin"]
    sys.exit(int(pytest.main([*args, *quiet(pytest_args), *default_workers(pytest_args, values), *pytest_args])))


def quiet(pytest_args: tuple[str, ...]) -> list[str]:
    """pytest's ``-q`` unless the user chose a verbosity or a collection: pytest's header
    (platform, rootdir, plugins, the item count) tells a proxy's author nothing, and the
    plugin prints the run's own header all the same; ``-v`` brings the whole of it back."""
    import re

    chosen = any(a in ("--verbose", "--quiet", "--collect-only", "--co") or re.fullmatch(r"-[vq]+", a)
                 for a in pytest_args)
    return [] if chosen else ["-q"]


def default_workers(pytest_args: tuple[str, ...], values: dict[str, Any]) -> list[str]:
    """The whole bundled run spreads its items over up to four xdist workers by default (it
    takes half the time on two cores); a run of chosen scenarios, or one naming its own
    workers (``-n 0`` for one process), is left as asked."""
    import os

    chosen = values[BY_NAME["scenarios"].dest] or values[BY_NAME["proxy-url"].dest]
    asked = any(a in ("-n", "--numprocesses", "--dist", "no:xdist", "--collect-only", "--co", "--pdb")
                or a.startswith(("-n", "--numprocesses=", "--dist=")) for a in pytest_args)
    cores = min(os.cpu_count() or 1, 4)
    return [] if chosen or asked or cores < 2 else ["-n", str(cores)]


@main.command()
@click.argument("scenario_id")
@table_options(replay=True)
@click.option("--stream/--no-stream", default=None, help="Override the request's stream flag.")
@click.option("--rechunk-variant", type=int, default=0, show_default=True, help="Which variant of the seed.")
@click.option("--split", "split", metavar="OFFSETS", help="Content split points, e.g. 17,40 (from a shrunk failure).")
def replay(
    scenario_id: str,
    stream: bool | None,
    rechunk_variant: int,
    split: str | None,
    **values: Any,
) -> None:
    """Replay one scenario's exchange: print the answer as received and the rule verdicts."""
    from difflib import get_close_matches

    from harness.core.dialects.profiles import choose_profile
    from harness.core.redact import Redactor
    from harness.judge.readers.transcript import Position
    from harness.report.failure import evidence_lines, rule_heading
    from harness.report.summary import rules_by_id
    from harness.run.config import RunConfig
    from harness.run.embedded import EmbeddedServers
    from harness.run.runner import replay as replay_exchange
    from harness.run.settings import RunSettings, with_profile_features

    given_values = {o.name: values[o.dest] for o in OPTIONS if o.replay}
    if given_values["upstream-dialect"] in BUNDLED_MODES:
        from harness.core.dialects import dialect_choices

        raise click.UsageError(f"replay plays one exchange: --upstream-dialect takes {dialect_choices()} or natural")
    try:
        config = RunConfig.from_values({**given_values, "upstream-dialect": given_values["upstream-dialect"] or "natural"})
        splits = [int(p) for p in split.split(",") if p.strip()] if split else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    upstream = config.upstreams[0]
    dirs = config.scenarios
    given = Path(scenario_id)
    if given.suffix in (".yaml", ".yml") or given.is_file():  # a scenario file: replay its one case
        if not given.is_file():
            raise click.UsageError(f"no scenario file {scenario_id!r}; replay takes a scenario id or a scenario file")
        dirs = (str(given),)
    scenarios, problems = validate_paths(dirs or (bundled_scenarios_dir(),))
    for problem in problems:
        click.echo(str(problem), err=True)
    by_id = {s.id: s for s in scenarios}
    if given.is_file() and len(scenarios) == 1:
        scenario_id = scenarios[0].id
    if scenario_id not in by_id:
        close = get_close_matches(scenario_id, list(by_id), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else " (see 'toolcall-conformance list')"
        if dirs:
            hint += f" (looked in {', '.join(dirs)})"
        else:  # only the bundled library was looked in
            hint += ("; a scenario of your own: give its file (replay path/to/case.yaml) or its folder "
                     "(--scenarios DIR)")
        raise click.UsageError(f"no scenario {scenario_id!r}{hint}")
    scenario = by_id[scenario_id]
    if upstream is not None:
        from harness.core.dialects import NotPortable
        from harness.core.dialects.script import serve_as

        try:
            scenario = serve_as(scenario, upstream)
        except NotPortable as exc:
            raise click.UsageError(f"{scenario_id} cannot be served by a {upstream.name} upstream: {exc}") from exc
    if config.strict_upstream:  # the failure was found against a strict upstream: replay it against one
        from harness.core.dialects.script import served_strictly

        scenario = served_strictly(scenario)
    proxy_url, profile, timeout = config.proxy_url, config.client_profile, config.timeout
    redactor = Redactor.for_headers(config.proxy_header)  # what is printed names no secret
    if config.upstream_profile:
        from harness.core.dialects.servers import server
        from harness.core.replay.servers import played_by

        try:
            scenario = played_by(scenario, server(config.upstream_profile))
        except ValueError as exc:
            raise click.UsageError(f"replay plays one exchange under one upstream profile: {exc}") from exc

    def say(text: str, nl: bool = True) -> None:
        click.echo(redactor.text(text), nl=nl)

    servers = EmbeddedServers(mock_host=config.mock_host, mock_port=config.mock_port, with_proxy=proxy_url is None,
                              mock_url=config.mock_url, upstream_dialects=(upstream.name if upstream else "native",))
    with servers as urls:
        target = proxy_url or urls.proxy_url
        assert target is not None
        claimed = with_profile_features(config.features if config.features is not None else urls.proxy_features,
                                        profile)
        settings = RunSettings(proxy_url=target, features=claimed, strict=config.strict, timeout=timeout,
                               models=config.model, proxy_headers=config.proxy_header, seed=config.rechunk_seed or 0)
        chosen, skip = choose_profile(scenario, profile, claimed)
        say(f"scenario {scenario.id} ({scenario.family}): {scenario.title}")
        say(f"proxy {redactor.url(target)}{' (reference proxy)' if proxy_url is None else ''}; "
            f"mock backend {urls.mock_url}; profile {chosen.name}; features {', '.join(sorted(claimed)) or 'none'}"
            + (f"; upstream profile {scenario.backend.server.name}" if scenario.backend.server else ""))
        if skip:
            say(f"note: a conformance run would skip this: {skip}")
        with servers.control() as mock:
            result = replay_exchange(
                scenario, settings=settings, mock=mock, profile=chosen, stream=stream,
                variant_index=rechunk_variant if config.rechunk_seed is not None else None, splits=splits,
            )
    ex = result.exchange
    if result.variant is not None:
        say(result.variant.label)
    if splits is not None:
        say(f"content split at {', '.join(map(str, splits))}")
    status = "no response" if ex.status is None else f"HTTP {ex.status}"
    timing = f"first byte {ex.first_byte:.3f} s, " if ex.first_byte is not None else ""
    say(f"--- answer as received ({'streaming' if ex.stream else 'non-streaming'} request; {status}; "
        f"{len(ex.raw)} bytes; {timing}total {ex.elapsed:.3f} s) ---")
    say(ex.raw.decode("utf-8", "replace"), nl=not ex.raw.endswith(b"\n"))
    say("--- end of answer ---")
    if ex.timed_out:
        say(f"the exchange was abandoned after {timeout:g} s")
    if ex.transport_error:
        say(f"transport error: {ex.transport_error}")
    say(f"{len(ex.upstream)} request(s) reached the mock backend")
    if not result.failures:
        say("verdict: every applicable rule holds")
        return
    rules = rules_by_id()
    say(f"verdict: {len(result.failures)} rule(s) broken")
    for failure in result.failures:
        say(rule_heading(failure.rule_id, rules))  # with who breaks, for a client rule
        for line in [*failure.message.splitlines(), *evidence_lines(failure.evidence)]:
            say(f"  {line}")
        position = Position.of(failure.evidence)
        if position.known:
            say(f"  at {position.describe()}")
    sys.exit(1)


if __name__ == "__main__":  # python -m harness.cli.main, where no script is installed
    run_main()
