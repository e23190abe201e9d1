"""Generated cases in a pytest run: ``--conformance-fuzz N`` adds one item per format,
``conformance::fuzz[<format>]``, next to the scenarios (same proxy, mock and options)."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.core.dialects.clients import DEFAULT_PROFILE, default_profiles
from harness.core.errors import ConformanceError
from harness.generate.fuzz.case import PROFILES
from harness.run.program import program

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from harness.pytest.session import ConformanceSession
    from harness.run.fuzzing import Finding, FuzzSettings


def fuzz_settings(session: ConformanceSession, config: pytest.Config) -> tuple[FuzzSettings, tuple[str, ...]]:
    """The fuzz settings of this run, and the formats to play."""
    from harness.generate.fuzz.choices import parse_duration, parse_formats
    from harness.run.fuzzing import FuzzSettings

    run = session.run
    assert session.shared is not None
    try:
        formats = parse_formats(run.fuzz_formats)
        limit = parse_duration(run.fuzz_max_time) if run.fuzz_max_time else None
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc
    profile = run.client_profile
    seed = run.fuzz_seed
    return FuzzSettings(
        run=session.settings,
        formats=formats,
        # The fuzzer writes cases for the plain client of the dialect the user's client writes in.
        profiles=tuple(p for p in PROFILES if p is default_profiles(profile or DEFAULT_PROFILE)[0]),
        examples=run.fuzz,
        seed=seed if seed is not None else session.shared.seed,
        max_time=limit,
        database=Path(str(config.rootpath)) / ".hypothesis" / "conformance-fuzz",
        out=Path(run.fuzz_out),
    ), formats


class FuzzFailed(ConformanceError):
    def __init__(self, finding: Finding, replay: str) -> None:
        self.finding = finding
        self.replay = replay
        super().__init__(f"generated case broke {', '.join(finding.rules)}; written to {finding.path}")


class FuzzItem(pytest.Item):
    """Generated cases of one format, played through the proxy under test."""

    format_id: str
    conformance: ConformanceSession

    def runtest(self) -> None:
        from harness.run.fuzzing import fuzz_format

        session = self.conformance
        config, _ = fuzz_settings(session, self.config)
        config = _with_run(config, session)
        result = fuzz_format(self.format_id, config, session.mock, deadline=_deadline(config),
                             replay_command=lambda scenario_id, _case: self._replay(scenario_id, config.out))
        if result.stopped and result.stopped.startswith("skipped"):
            pytest.skip(result.stopped)
        self.user_properties.append(("conformance-fuzz", f"{result.examples} example(s), {result.rate:.1f}/s"))
        if result.finding is not None:
            raise FuzzFailed(result.finding, self._replay(result.finding.scenario_id, config.out))

    def _replay(self, scenario_id: str, out: Path) -> str:
        assert self.conformance.shared is not None
        shared = self.conformance.shared
        args = [*program(), "replay", scenario_id, "--scenarios", str(out)]
        if not shared.embedded_proxy:
            args += ["--proxy-url", shared.proxy_url, "--mock-url", shared.mock_url]
        return shlex.join(args)

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        exc = excinfo.value
        if isinstance(exc, FuzzFailed):
            from harness.run.fuzzing import finding_lines

            return "\n".join([f"{self.format_id}: {exc}", *finding_lines(exc.finding, exc.replay, self.conformance.redactor)])
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"fuzz[{self.format_id}]"


def _with_run(config: FuzzSettings, session: ConformanceSession) -> FuzzSettings:
    from dataclasses import replace

    return replace(config, run=replace(session.settings, rechunk=0))


def _deadline(config: FuzzSettings) -> float | None:
    return None if config.max_time is None else time.monotonic() + config.max_time


def collect(parent: pytest.Collector, session: ConformanceSession) -> list[FuzzItem]:
    if not session.run.fuzz:
        return []
    _, formats = fuzz_settings(session, parent.config)
    items = []
    for format_id in formats:
        item = FuzzItem.from_parent(parent, name=f"fuzz[{format_id}]")
        item.format_id = format_id
        item.conformance = session
        item.add_marker("conformance")
        items.append(item)
    return items
