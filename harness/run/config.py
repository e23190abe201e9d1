"""One run configuration: the option table's values, read and checked once.

The pytest plugin, the ``run`` and ``replay`` commands, ``fuzz``, ``soak`` and ``agents`` all build a
``RunConfig`` from what the user passed (``RunConfig.from_values``), so a flag is parsed, defaulted and
refused the same way wherever it is given. A command takes the options it shares with a run through
``shared_options``, which hands it the built ``RunConfig``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from harness.core.dialects import DIALECTS, WireDialect, dialect_choices
from harness.core.dialects.clients import Profile
from harness.core.dialects.profiles import parse_profile
from harness.core.scenario.model import FEATURES
from harness.generate.coverage import parse_formats
from harness.run.options import ALL_PROFILES, BUNDLED_MODES, BY_NAME, OPTIONS, click_option
from harness.run.settings import ModelChoice, parse_features, parse_headers, parse_models

F = TypeVar("F", bound=Callable[..., Any])


def _url(value: str | None) -> str | None:
    return (value or "").rstrip("/") or None


@dataclass(frozen=True)
class RunConfig:
    """Every option of the table, parsed: one field per ``Option`` (its name with ``_`` for ``-``)."""

    proxy_url: str | None = None  # None: the bundled reference proxy
    scenarios: tuple[str, ...] = ()
    wait_for_proxy: float = 0.0
    mock_host: str = "127.0.0.1"
    mock_port: int = 0
    mock_url: str | None = None
    client_profile: Profile | None = None  # None: each scenario's own
    upstream_profile: str | None = None
    upstream_dialect: str = "natural"  # "natural", "spread", "all" or a dialect's name (resolved from the proxy URL)
    formats: frozenset[str] | None = None  # None: every format claimed
    features: frozenset[str] | None = None  # None: the reference proxy's (or none)
    strict: bool = False
    strict_upstream: bool = False
    timeout: float = 10.0
    model: ModelChoice = field(default_factory=ModelChoice)
    proxy_header: Mapping[str, str] = field(default_factory=dict)
    rechunk: int = 0
    rechunk_seed: int | None = None
    expect_failures: str | None = None
    write_known_failures: str | None = None
    update_known_failures: str | None = None
    fuzz: int = 0
    fuzz_seed: int | None = None
    fuzz_formats: tuple[str, ...] = ()
    fuzz_max_time: str | None = None
    fuzz_out: str = "conformance-findings"
    jobs: int | None = None  # None: two per core
    report_json: str | None = None
    record: Path | None = None
    report_md: str | None = None
    recordings: str | None = None
    record_mode: str | None = None
    fault_rate: float = 0.0
    fault_seed: int | None = None
    fault_stall: float = 2.0
    client_fault_rate: float = 0.0
    users: int = 32
    spawn_rate: float | None = None
    duration: str = "1m"
    exchanges: int | None = None
    proxy_pid: int | None = None
    scenario: tuple[str, ...] = ()
    frame_delay_ms: float = 20.0
    progress_every: float = 5.0
    all_client_profiles: bool = False  # --client-profile all: each scenario's own and every real client's
    given: frozenset[str] = frozenset()  # the options the user passed (not left at their default)

    @property
    def upstreams(self) -> tuple[WireDialect | None, ...]:
        """The upstream dialects the run plays (None: each scenario's own); under ``spread`` a
        scenario plays two of them (``harness.core.dialects.script.spread``)."""
        mode = self.upstream_dialect
        if mode == "natural":
            return (None,)
        return tuple(DIALECTS.values()) if self.every_pair else (DIALECTS[mode],)

    @property
    def every_pair(self) -> bool:
        """The bundled reference proxies play every dialect pair (``all``, or ``spread`` over the scenarios)."""
        return self.upstream_dialect in BUNDLED_MODES

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> RunConfig:
        """The configuration for ``values`` (option name to value as a command got it; a missing
        option or None takes the table's default); ``ValueError`` says what is wrong, once."""
        raw: dict[str, Any] = {o.name: tuple(values.get(o.name) or ()) if o.kind == "multiple"
               else o.default if values.get(o.name) is None else values[o.name] for o in OPTIONS}
        given = frozenset(name for name in BY_NAME if values.get(name) is not None)
        proxy_url = _url(raw["proxy-url"])
        mode = raw["upstream-dialect"] or ("natural" if proxy_url else "spread")
        if mode in BUNDLED_MODES and proxy_url:
            raise ValueError(f"--upstream-dialect {mode} plays the bundled reference proxies; a proxy under test "
                             f"calls one upstream dialect: name it ({dialect_choices('or')}), or natural")
        every_client = raw["client-profile"] == ALL_PROFILES
        profile = parse_profile(raw["client-profile"]) if raw["client-profile"] and not every_client else None
        features = parse_features(raw["features"]) if raw["features"] else None
        unknown = sorted((features or frozenset()) - set(FEATURES))
        if unknown:
            raise ValueError(f"--features: unknown feature(s) {', '.join(unknown)} (known: {', '.join(FEATURES)})")
        timeout = raw["timeout"] or BY_NAME["timeout"].default
        if timeout <= 0:
            raise ValueError("--timeout must be a positive number of seconds")
        if raw["rechunk"] < 0:
            raise ValueError("--rechunk must be 0 or more")
        update, expect = raw["update-known-failures"], raw["expect-failures"]
        if update and expect and Path(expect).resolve() != Path(update).resolve():
            raise ValueError("--update-known-failures FILE reads FILE as the known failures: leave out "
                             f"--expect-failures {expect}, or name the same file")
        parsed: dict[str, Any] = {
            **{o.name.replace("-", "_"): raw[o.name] for o in OPTIONS},
            "proxy_url": proxy_url, "mock_url": _url(raw["mock-url"]), "client_profile": profile,
            "upstream_dialect": mode, "formats": parse_formats(raw["formats"]), "features": features,
            "timeout": timeout, "model": parse_models(raw["model"]), "proxy_header": parse_headers(raw["proxy-header"]),
            "record": Path(raw["record"]) if raw["record"] else None, "given": given,
            "all_client_profiles": every_client,
        }
        return cls(**parsed)


def shared_options(*names: str, defaults: Mapping[str, Any] | None = None) -> Callable[[F], F]:
    """The table's options ``names`` for a command that takes them with the same meaning (``fuzz``,
    ``soak``, ``agents``): same flag, type, help and default (unless ``defaults`` gives the command
    its own), handed to the command as one ``config: RunConfig``."""
    own = dict(defaults or {})

    def decorate(command: F) -> F:
        @functools.wraps(command)
        def wrapper(**kwargs: Any) -> Any:
            values = {name: kwargs.pop(BY_NAME[name].dest) for name in names}
            try:
                config = RunConfig.from_values(values)
            except ValueError as exc:
                raise click.UsageError(str(exc)) from exc
            return command(config=config, **kwargs)

        decorated: Any = wrapper
        for name in reversed(names):
            decorated = click_option(BY_NAME[name], default=own.get(name, BY_NAME[name].default))(decorated)
        return decorated  # type: ignore[no-any-return]

    return decorate
