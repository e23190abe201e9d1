"""One option table: the plugin's ``--conformance-<name>`` options, the run command's
short spellings and the replay command all come from ``harness.run.options``; the plugin
stays out of a user's way; the commands' usage errors are one clear line."""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from harness.cli.main import main
from harness.core.dialects.clients import CLIENTS
from harness.run.config import RunConfig
from harness.run.options import BY_NAME, OPTIONS, Option, replay_args
from harness.run.program import program
from harness.run.proxy_client import run_exchange
from harness.run.servers import RunningServer
from mock_backends.app import create_app as create_mock
from mock_backends.control import MockControl
from reference_proxy.app import create_app as create_proxy
from reference_proxy.config import ProxyConfig
from support.library import load_library

ServeFn = Callable[[Any], RunningServer]
LIBRARY = {s.id: s for s in load_library()}
CONFTEST = '''
def pytest_addoption(parser):
    parser.addoption("--model", default="mine")
    parser.addoption("--timeout", type=float, default=1.0)
    parser.addoption("--features", default="")
    parser.addoption("--scenarios", default="")
    parser.addoption("--proxy-url", default="")
'''


@pytest.fixture(autouse=True)
def _quiet_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_every_option_is_namespaced_for_pytest_and_short_for_the_run_command() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    for option in OPTIONS:
        assert option.pytest_flag == f"--conformance-{option.name}" and option.dest.startswith("conformance_")
        assert option.help and (option.kind != "flag" or option.default is False)
    help_text = CliRunner().invoke(main, ["run", "--help"], terminal_width=200).output
    for option in OPTIONS:
        assert (re.search(re.escape(option.cli_flag) + r"\b(?!-)", help_text) is not None) == option.cli, option.name
    replay_help = CliRunner().invoke(main, ["replay", "--help"], terminal_width=200).output
    assert all(o.cli_flag in replay_help for o in OPTIONS if o.replay)


def test_replay_arguments_come_from_the_table() -> None:
    """Defaults and options replay does not take (reports) are left out; table order."""
    args = replay_args({"proxy-url": "http://p/v1", "strict": True, "model": ["a", "qwen=b"], "timeout": 10.0,
                        "rechunk-seed": 7, "report-md": "x.md", "mock-port": 9100})
    assert args == ["--proxy-url", "http://p/v1", "--mock-port", "9100", "--strict", "--model", "a",
                    "--model", "qwen=b", "--rechunk-seed", "7"]
    assert replay_args({"timeout": 2.5}) == ["--timeout", "2.5"]


def test_a_users_conftest_with_the_same_short_options_still_works(pytester: pytest.Pytester) -> None:
    """Installing the package adds no ``--model``, ``--timeout``... of its own: a project
    defining them keeps working, and ``-p no:toolcall_conformance`` removes the plugin."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("def test_one(request):\n    assert request.config.getoption('model') == 'mine'\n")
    result = pytester.runpytest("--model", "mine", "--timeout", "3")
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if line.startswith("conformance")]
    without = pytester.runpytest("-p", "no:toolcall_conformance", "--conformance")
    assert without.ret == pytest.ExitCode.USAGE_ERROR  # the plugin is gone, so is its switch
    without.stderr.fnmatch_lines(["*unrecognized arguments: --conformance*"])


def test_a_mistyped_option_names_the_closest_one(pytester: pytest.Pytester) -> None:
    pytester.chdir()
    result = CliRunner().invoke(main, ["run", "--proxy-ulr", "http://127.0.0.1:9/v1", "-p", "no:cacheprovider"])
    assert result.exit_code == pytest.ExitCode.USAGE_ERROR
    assert "no such option: --proxy-ulr (did you mean --proxy-url?" in result.output
    # a real pytest option that merely looks like one of ours is passed on untouched (over one
    # scenario: collecting the whole bundled library would prove nothing more)
    source = LIBRARY["plain-native-single"].path
    assert source is not None
    (pytester.path / "one" / "plain").mkdir(parents=True)
    (pytester.path / "one" / "plain" / "native-single.yaml").write_text(Path(source).read_text())
    passed_on = CliRunner().invoke(main, ["run", "--strict-markers", "--collect-only", "-q", "--scenarios",
                                          str(pytester.path / "one"), "-p", "no:cacheprovider"])
    assert passed_on.exit_code == 0, passed_on.output
    assert "conformance::plain-native-single" in passed_on.output


def test_a_scenario_folder_elsewhere_does_not_move_the_rootdir(pytester: pytest.Pytester) -> None:
    source = LIBRARY["plain-native-single"].path
    assert source is not None
    elsewhere = pytester.mkdir("elsewhere")
    (elsewhere / "plain").mkdir()
    (elsewhere / "plain" / "native-single.yaml").write_text(Path(source).read_text())
    work = pytester.mkdir("work")
    known = pytester.mkdir("lists") / "known.yaml"
    known.write_text("[]\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(work)
        result = CliRunner().invoke(main, ["run", "--scenarios", str(elsewhere), "--expect-failures", str(known),
                                           "--collect-only", "-q", "-p", "no:cacheprovider"])
    assert result.exit_code == 0, result.output
    assert "conformance::plain-native-single" in result.output and "../conformance" not in result.output


def test_a_busy_port_is_one_line_of_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for command in (["proxy", "--upstream", "http://127.0.0.1:9/v1"], ["mock", "--quiet"]):
            result = CliRunner().invoke(main, [*command, "--port", str(port)])
            assert result.exit_code == 1
            assert result.output == f"Error: cannot listen on 127.0.0.1:{port}: Address already in use\n"


def test_a_deliberate_drop_is_not_logged_as_an_error(servers: ServeFn, caplog: pytest.LogCaptureFixture) -> None:
    """The mock drops connections on purpose; uvicorn's "returned without completing
    response" for them would interleave with a run's progress dots."""
    mock_url = servers(create_mock()).url
    proxy_url = servers(create_proxy(ProxyConfig(upstream=f"{mock_url}/v1", log_level="warning"))).url + "/v1"
    with caplog.at_level(logging.WARNING), MockControl(mock_url) as mock:
        for scenario_id in ("faults-openai-drop-mid-event", "faults-openai-drop-between-events"):
            scenario = LIBRARY[scenario_id]
            ex = run_exchange(scenario, proxy_url=proxy_url, mock=mock, stream=True, profile=CLIENTS["openai"], model=None,
                              proxy_headers={}, timeout=30)
            assert ex.upstream and ex.upstream[0].answer is not None  # the mock did answer, and dropped
    assert not [r for r in caplog.records if "without completing response" in r.getMessage()]


# A flag a command keeps with a meaning of its own (the table's entry of that name means something else);
# this list only shrinks.
OWN_MEANING = {
    ("fuzz", "--formats"): "the formats to write generated calls in; a run's are the formats the proxy claims",
    ("fuzz", "--client-profile"): "repeatable, the client dialects to generate for; a run takes one profile",
    ("agents", "--record"): "each agent run's events and requests; a run's writes HAR files and an HTML report",
}
# The servers' own commands, declared in their packages (which read only harness.core, not the table): the
# mock's --scenarios preloads, the proxy's --upstream-dialect names its one upstream API, and the soak passes
# its --fault-* values on to the mock's.
SERVER_COMMANDS = {"mock", "proxy"}
# A command's own default for a table option.
OWN_DEFAULT = {("soak", "--timeout"): 30.0,  # many clients at once on one machine, each answer paced
               ("fuzz", "--upstream-dialect"): "natural"}  # generated cases in their own dialect unless asked
BY_FLAG = {option.cli_flag: option for option in OPTIONS}


def _table_flags(name: str) -> list[tuple[str, click.Option, Option]]:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    return [(flag, param, BY_FLAG[flag]) for param in command.params if isinstance(param, click.Option)
            for flag in param.opts if flag in BY_FLAG and (name, flag) not in OWN_MEANING]


@pytest.mark.parametrize("command", sorted(set(main.list_commands(click.Context(main))) - SERVER_COMMANDS - {"list"}))  # list: no defaults
def test_a_flag_means_the_same_in_every_command(command: str) -> None:
    """Every command's flag that the table declares is the table's option: its help, kind, type and
    range, and its default (``run`` leaves defaults to the plugin) unless the command says otherwise."""
    for flag, param, option in _table_flags(command):
        assert param.help == option.help, (command, flag)
        assert param.multiple == (option.kind == "multiple") and param.is_flag == (option.kind == "flag"), flag
        if option.kind != "value":
            continue
        if option.choices:
            assert isinstance(param.type, click.Choice) and tuple(param.type.choices) == option.choices, flag
        elif isinstance(param.type, click.IntRange | click.FloatRange):
            assert (param.type.min, param.type.max, param.type.min_open) == (option.low, option.high,
                                                                             option.low_open), flag
        else:
            assert option.low is None and option.high is None, flag
            assert param.type.name == click.types.convert_type(option.type).name, flag
        expected = None if command == "run" else OWN_DEFAULT.get((command, flag), option.default)
        assert param.default == expected, (command, flag)


def test_every_command_with_an_option_of_the_table_reads_it_into_one_run_configuration() -> None:
    """Each option is one field of ``RunConfig``, defaulted as the table says; the plugin offers
    those of a conformance run, the run command those marked ``cli``."""
    defaults = RunConfig.from_values({})
    names = {f.name for f in fields(RunConfig)}
    for option in OPTIONS:
        field_name = option.name.replace("-", "_")
        assert field_name in names, option.name
        assert option.pytest or not option.cli, option.name
        if option.kind == "value" and option.name not in {"timeout", "upstream-dialect"}:
            assert getattr(defaults, field_name) == option.default, option.name
    assert defaults.upstream_dialect == "spread" and RunConfig.from_values({"proxy-url": "http://p/v1/"}) == replace(
        defaults, proxy_url="http://p/v1", upstream_dialect="natural", given=frozenset({"proxy-url"}))


@pytest.mark.parametrize(("values", "message"), [
    ({"timeout": -1.0}, "--timeout must be a positive number of seconds"),
    ({"rechunk": -1}, "--rechunk must be 0 or more"),
    ({"features": ["nope"]}, "--features: unknown feature(s) nope"),
    ({"model": ["=x"]}, "--model '=x': expected NAME or FAMILY=NAME"),
    ({"proxy-header": ["nocolon"]}, "--proxy-header 'nocolon': expected 'Name: value'"),
    ({"proxy-url": "http://p/v1", "upstream-dialect": "all"}, "--upstream-dialect all plays the bundled"),
])
def test_a_bad_value_is_refused_the_same_way_by_every_command(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        RunConfig.from_values(values)
    for command in ("fuzz", "replay"):
        flags = {o.cli_flag for _, _, o in _table_flags(command)}
        if all(BY_NAME[name].cli_flag in flags for name in values) and "upstream-dialect" not in values:
            args = [arg for name, value in values.items()
                    for item in (value if isinstance(value, list) else [value])
                    for arg in (BY_NAME[name].cli_flag, str(item))]
            result = CliRunner().invoke(main, [command, *(["plain-native-single"] if command == "replay" else []),
                                               *args])
            assert result.exit_code == 2 and message in result.output, (command, result.output)


def test_printed_commands_start_the_way_the_users_shell_can(tmp_path: Path) -> None:
    """``toolcall-conformance`` where PATH finds this installation's script; its path (relative
    inside the folder the user is in) where it does not; the module with this interpreter where
    no script is installed."""
    bin_dir = tmp_path / "env" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text("")
    script = bin_dir / "toolcall-conformance"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert program(path=str(bin_dir), cwd=tmp_path, executable=str(python)) == ["toolcall-conformance"]
    assert program(path="", cwd=tmp_path, executable=str(python)) == ["env/bin/toolcall-conformance"]
    assert program(path="", cwd=tmp_path / "env" / "bin" / "..", executable=str(python)) == ["bin/toolcall-conformance"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert program(path="", cwd=elsewhere, executable=str(python)) == [str(script)]
    script.unlink()
    assert program(path=str(bin_dir), cwd=tmp_path, executable=str(python)) == [str(python), "-m", "harness.cli.main"]
