"""Every option of a conformance run, declared once.

The pytest plugin adds each as ``--conformance-<name>`` (so it never collides with a
user's own ``--model`` or ``--timeout``), ``toolcall-conformance run`` offers the short
``--<name>`` spelling of those marked ``cli`` and translates it, and the replay command
a failure prints is written from the same entries; the ``fuzz``, ``soak`` and ``agents``
commands take the options they share with a run from here too, and the soak's own are
entries too (``pytest=False``). Adding an option is adding one ``Option`` to ``OPTIONS``;
every command reads what the user passed as one ``harness.run.config.RunConfig``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, Literal, TypeVar

from harness.core.dialects import DIALECTS, dialect_choices
from harness.core.dialects.clients import CLIENTS, DEFAULT_PROFILE, OLD_NAMES
from harness.core.dialects.servers import SERVERS

PYTEST_PREFIX = "--conformance-"
DEFAULT_TIMEOUT = 10.0
PROFILES = tuple(CLIENTS)  # the client profiles' names, from their registry
# Accepted too: the old spellings (``vtc`` for ``xml-client``, ``harness.core.dialects.clients.OLD_NAMES``),
# and ``all``: every case under its own profile and under each real client where it is meaningful.
ALL_PROFILES = "all"
PROFILE_CHOICES = (*PROFILES, *OLD_NAMES, ALL_PROFILES)
BUNDLED_MODES = ("spread", "all")  # pair modes only the bundled reference proxies can play
UPSTREAM_MODES = ("natural", *DIALECTS, *BUNDLED_MODES)

Kind = Literal["value", "flag", "multiple"]


@dataclass(frozen=True)
class Option:
    """One option: its short name, what it takes, its default and its help."""

    name: str  # the short spelling without dashes: "proxy-url" (pytest: --conformance-proxy-url)
    help: str
    type: type = str  # str, int, float (ignored for flags)
    default: Any = None
    kind: Kind = "value"  # "flag": on/off; "multiple": repeatable, a list
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    cli: bool = True  # ``toolcall-conformance run`` offers the short ``--<name>`` alias
    replay: bool = False  # ``toolcall-conformance replay`` takes it too (for one exchange)
    pytest: bool = True  # the plugin offers it as ``--conformance-<name>`` (a conformance run's option)
    low: float | None = None  # the smallest value a command accepts (a number's range)
    high: float | None = None
    low_open: bool = False  # ``low`` itself is refused

    @property
    def dest(self) -> str:
        """The attribute pytest stores it under (``config.getoption(dest)``)."""
        return "conformance_" + self.name.replace("-", "_")

    @property
    def pytest_flag(self) -> str:
        return PYTEST_PREFIX + self.name

    @property
    def cli_flag(self) -> str:
        return "--" + self.name

    def pytest_args(self, value: Any) -> list[str]:
        """``value`` (as the run command got it) as pytest arguments of the plugin, each
        as one ``--flag=value`` word: pytest picks its rootdir from arguments naming
        existing paths, and a scenario folder elsewhere must not move it."""
        if self.kind == "flag":
            return [self.pytest_flag] if value else []
        if self.kind == "multiple":
            return [f"{self.pytest_flag}={item}" for item in value]
        return [] if value is None else [f"{self.pytest_flag}={_text(value)}"]


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


_SOAK: dict[str, Any] = {"cli": False, "pytest": False}

OPTIONS: tuple[Option, ...] = (
    Option("proxy-url", "Base URL of the proxy under test, e.g. http://localhost:8000/v1 (default: the bundled "
           "reference proxy).", metavar="URL", replay=True),
    Option("scenarios", "Scenario folder or file (repeatable); default: the bundled library.", kind="multiple",
           metavar="PATH", replay=True),
    Option("wait-for-proxy", "Wait up to SECONDS for the proxy under test to accept connections (a proxy started "
           "just before the run, in CI) instead of stopping at once.", type=float, default=0.0, metavar="SECONDS"),
    Option("mock-host", "Interface the mock backend listens on.", default="127.0.0.1", metavar="HOST",
           replay=True),
    Option("mock-port", "Port of the mock backend (default: a free port, printed in the header).", type=int,
           default=0, metavar="PORT", replay=True, low=0, high=65535),
    Option("mock-url", "Use a mock backend that is already running at URL.", metavar="URL", replay=True),
    Option("client-profile", "Run every scenario under this client profile; a real client's (copilot-chat, "
           "copilot-responses, claude-code, codex, opencode, cline, roo) lays each request out as that client sends "
           "it; all: each scenario's own and every real client's where meaningful (default: "
           f"{DEFAULT_PROFILE.name} with --proxy-url; with the bundled reference proxy each scenario's own, and each "
           "real client on a fixed part of the library).", choices=PROFILE_CHOICES, replay=True),
    Option("strict-upstream", "The mock answers as a strict self-hosted server would: a Chat Completions request "
           "with a system message after a user or assistant message, or more than 128 tools, is refused with 400 "
           "('System message must be at the beginning.', as Qwen, Llama and Gemma chat templates say).",
           kind="flag", default=False, replay=True),
    Option("upstream-dialect", f"The dialect the proxy calls upstream: {dialect_choices('or')} (every scenario's backend is "
           "served in it), natural (each scenario's own; the default with --proxy-url), spread (every pair, with the "
           "bundled reference proxies, each scenario in its own dialect and one other chosen from its id; their "
           "default) or all (each scenario in every dialect).", metavar="DIALECT", choices=UPSTREAM_MODES, replay=True),
    Option("upstream-profile", "Also play the streamed cases the way real servers stream them (docs/mock-backend.md, "
           "'Upstream server profiles'): NAME[,NAME...] plays every case under each named server, all under every "
           f"server ({', '.join(SERVERS)}), none under none (default: each server on a few cases of the bundled "
           "library, the same ones every run).", metavar="NAME[,NAME...]", replay=True),
    Option("formats", "The text formats (scenario families) your proxy rescues (repeatable or comma separated); the "
           "cases of the others are reported as not claimed, in the coverage line (default: every format).",
           kind="multiple", metavar="A,B"),
    Option("features", "Optional features your proxy has (repeatable or comma separated), e.g. xml-client,loop-guard.",
           kind="multiple", metavar="A,B", replay=True),
    Option("strict", "Also enforce 'spec' severity rules.", kind="flag", default=False, replay=True),
    Option("timeout", f"Seconds of the proxy's own time one exchange may take before it counts as hanging; the "
           f"time the mock backend spends answering is added, and 5 s per MB of a huge message (default "
           f"{DEFAULT_TIMEOUT:g}).", type=float,
           default=DEFAULT_TIMEOUT, metavar="SECONDS", replay=True),
    Option("model", "Model name sent to the proxy, for all scenarios or one family (repeatable).", kind="multiple",
           metavar="[FAMILY=]NAME", replay=True),
    Option("proxy-header", "Extra header sent to the proxy, e.g. auth (repeatable).", kind="multiple",
           metavar="'NAME: VALUE'", replay=True),
    Option("rechunk", "Also run N re-chunked variants of every streaming scenario.", type=int, default=0,
           metavar="N"),
    Option("rechunk-seed", "Seed of the re-chunked variants (default: random, printed).", type=int, metavar="S",
           replay=True),
    Option("expect-failures", "YAML file of known failures (scenario, rule, reason); they are reported as "
           "expected.", metavar="FILE"),
    Option("write-known-failures", "After the run, write every failure of it to FILE as a known-failures list "
           "(an existing entry's reason is kept), to commit and pass as --expect-failures.", metavar="FILE"),
    Option("update-known-failures", "Use FILE as --expect-failures, then drop from it the entries that pass "
           "now and list them (new failures still fail the run).", metavar="FILE"),
    Option("fuzz", "Also play N generated cases per text format (and native calls); implies --conformance.",
           type=int, default=0, metavar="N"),
    Option("fuzz-seed", "Seed of the generated cases (default: the run's seed, printed in the header).", type=int,
           metavar="S"),
    Option("fuzz-formats", "Formats to generate (default: every format and 'native').", kind="multiple",
           metavar="A,B"),
    Option("fuzz-max-time", "Stop generating a format after this long (e.g. 90s, 10m).", metavar="DURATION"),
    Option("fuzz-out", "Folder the minimal failing cases are written to.", default="conformance-findings",
           metavar="DIR"),
    # ``toolcall-conformance fuzz``'s own.
    Option("jobs", "Worker processes that play the generated examples side by side, each with its own mock "
           "backend and reference proxies; the same examples, verdicts and shrunk findings as 1, which plays them "
           "one at a time (default: two per core).", type=int, metavar="N", low=1, cli=False, pytest=False),
    Option("report-json", "Write the results as JSON.", metavar="PATH"),
    Option("record", "Write every exchange as a HAR file (client to proxy, proxy to mock, both answers) to "
           "DIR/har/, and DIR/report.html: the score card, the rules and each failure's transcript in one file.",
           metavar="DIR"),
    Option("recordings", "A folder made by `toolcall-conformance record`: the bundled proxies call upstream "
           "through a recorder over it, in --record-mode (not --record, which writes HAR files of this run).",
           metavar="DIR"),
    Option("record-mode", "How the recorder of --recordings treats the proxy's upstream requests: none (one no "
           "recording matches fails, naming the nearest and the difference: request drift), once, new-episodes or "
           "rewrite (these record what they let through).", default="none",
           choices=("none", "once", "new-episodes", "rewrite")),
    Option("report-md", "Write the results as Markdown (for CI job summaries).", metavar="PATH"),
    # The soak's own (``toolcall-conformance soak``); the fault options are the mock's, which the soak starts.
    Option("fault-rate", "Share of upstream requests the mock faults (drop, stall, 503, 429 with Retry-After).",
           type=float, default=0.0, low=0.0, high=1.0, **_SOAK),
    Option("fault-seed", "Seed of the faulted requests (default: random, printed).", type=int, **_SOAK),
    Option("fault-stall", "Seconds a drawn stall lasts.", type=float, default=2.0, low=0.0, **_SOAK),
    Option("client-fault-rate", "Share of exchanges whose client misbehaves: hangs up after the first words (the "
           "proxy must then close its upstream request within 2 s), reads slowly, or sends its body slowly (drawn "
           "from --fault-seed).", type=float, default=0.0, low=0.0, high=1.0, **_SOAK),
    Option("users", "Concurrent clients.", type=int, default=32, low=1, **_SOAK),
    Option("spawn-rate", "Clients started per second (default: all within about a second, at most 100 a second).",
           type=float, low=0.0, low_open=True, **_SOAK),
    Option("duration", "How long, from the first client on, as Locust reads it: 30s, 10m, 1h30m.", default="1m",
           **_SOAK),
    Option("exchanges", "Stop once this many exchanges were judged (--duration still bounds the soak).", type=int,
           low=1, **_SOAK),
    Option("proxy-pid", "PID of the proxy, to report its memory (RSS) over time.", type=int, **_SOAK),
    Option("scenario", "Scenario to play (repeatable; default: the isolation scenarios, which tag every exchange, and "
           "one case of every other folder of the library that a soak can play).",
           kind="multiple", metavar="ID", **_SOAK),
    Option("frame-delay-ms", "Milliseconds the mock waits before each frame, as a model generating tokens does.",
           type=float, default=20.0, low=0.0, **_SOAK),
    Option("progress-every", "Seconds between progress lines.", type=float, default=5.0, low=0.0, low_open=True,
           **_SOAK),
)

BY_NAME: Mapping[str, Option] = {option.name: option for option in OPTIONS}

F = TypeVar("F", bound=Callable[..., Any])


_TABLE: Any = object()  # "the table's default"


def click_option(option: Option, *, param: str | None = None, with_default: bool = True,
                 default: Any = _TABLE) -> Callable[[F], F]:
    """``option`` as a click option under its short spelling: its type, range, choices, help and
    (unless ``with_default`` is false) its default, or a command's own ``default``; passed as
    ``param`` (default: its dest)."""
    import click

    kwargs: dict[str, Any] = {"help": option.help, "metavar": option.metavar}
    if option.kind == "flag":
        kwargs.update(is_flag=True, default=False)
    elif option.kind == "multiple":
        kwargs.update(multiple=True)
    else:
        kind: Any = option.type
        if option.choices:
            kind = click.Choice(option.choices)
        elif option.low is not None or option.high is not None:
            bounds: dict[str, Any] = {"min": option.low, "max": option.high, "min_open": option.low_open}
            kind = click.IntRange(**bounds) if option.type is int else click.FloatRange(**bounds)
        value = option.default if default is _TABLE else default
        kwargs.update(type=kind, default=value if with_default else None,
                      show_default=with_default and value is not None)
    decorator: Callable[[F], F] = click.option(option.cli_flag, param or option.dest, **kwargs)
    return decorator


def replay_args(values: Mapping[str, Any]) -> list[str]:
    """The replay command's arguments for ``values`` (option name to value), in table
    order; values equal to the default are left out."""
    out: list[str] = []
    for option in OPTIONS:
        value = values.get(option.name)
        if not option.replay or value is None or value == option.default or value in ([], ()):
            continue
        if option.kind == "flag":
            out.append(option.cli_flag)
        elif option.kind == "multiple":
            out += [arg for item in value for arg in (option.cli_flag, str(item))]
        else:
            out += [option.cli_flag, _text(value)]
    return out


def closest(name: str, names: Iterable[str]) -> str | None:
    """The option a mistyped ``--name`` most likely meant, or None."""
    found = get_close_matches(name.lstrip("-"), [n.lstrip("-") for n in names], n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_long_options(args: Sequence[str], known: Iterable[str]) -> list[str]:
    """The ``--name`` arguments not in ``known`` (values after ``=`` ignored)."""
    known_set = set(known)
    return [a.split("=", 1)[0] for a in args if a.startswith("--") and a.split("=", 1)[0] not in known_set]
