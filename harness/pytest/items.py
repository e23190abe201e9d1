"""Collection: one pytest item per scenario (and upstream dialect), which plays it, judges it against the
known failures and reports it the way pytest users read failures."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.core.dialects import WireDialect
from harness.core.dialects.clients import DEFAULT_PROFILE, Profile
from harness.core.dialects.servers import ServerProfile
from harness.core.errors import ConformanceError, ProxyUnreachable

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from harness.core.records import ScenarioRun
    from harness.core.scenario.model import Scenario
    from harness.pytest.session import ConformanceSession
    from harness.report.known_failures import Judgement
    from harness.report.summary import ItemRecord

# Marks pytest gives a meaning to: a family or tag by these names gets a "tag-" prefix.
_RESERVED_MARKS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast", "asyncio",
     "timeout", "flaky", "conformance"}
)


def _common_cause(run: ScenarioRun, proxy_url: str) -> str:
    """A cause many failing scenarios may share: an HTTP error status on a case that expects
    none (a route the proxy does not have, a model it does not know, a locked-out backend)."""
    first = run.attempts[0].exchange if run.attempts else None
    if first is None or run.scenario.expect.error is not None or first.status in (None, 200):
        return ""

    return f"HTTP {first.status} from POST {proxy_url.rstrip('/')}{run.profile.endpoint}"


def mark_name(name: str) -> str:
    return f"tag-{name}" if name in _RESERVED_MARKS and name != "conformance" else name


# --------------------------------------------------------------------------- collection


def play_order(scenarios: Sequence[Scenario]) -> list[Scenario]:
    """The scenarios in the order they play: those whose backend injects a fault last, so a proxy that
    locks its backend after an upstream 401 or 429 (a circuit breaker) cannot colour the cases after it."""
    return sorted(scenarios, key=lambda s: s.backend.fault is not None)


class ConformanceSuite(pytest.Collector):
    """All scenarios of the run, under the node id ``conformance``."""

    conformance: ConformanceSession

    def collect(self) -> Iterator[pytest.Item]:
        for scenario in play_order(self.conformance.scenarios):
            real = self.conformance.real_clients(scenario)
            for upstream in self.conformance.upstreams_for(scenario):
                yield self._item(scenario, upstream)
                for profile in real:
                    yield self._item(scenario, upstream, profile=profile)
        for scenario, upstream, server in self.conformance.server_items():
            yield self._item(scenario, upstream, server)
        from harness.pytest.fuzz_items import collect

        yield from collect(self, self.conformance)

    def _item(self, scenario: Scenario, upstream: WireDialect | None,
              server: ServerProfile | None = None, profile: Profile | None = None) -> ScenarioItem:
        crossed = upstream is not None and upstream is not scenario.backend.dialect
        marks = [f"{upstream.name}-upstream"] if upstream is not None and crossed else []
        if server is not None:
            marks.append(f"{server.name}-server")
        if profile is not None:
            marks.append(profile.name)
        item = ScenarioItem.from_parent(self, name=f"{scenario.id}[{','.join(marks)}]" if marks else scenario.id)
        item.scenario = scenario
        item.upstream = upstream
        item.server = server
        item.profile = profile
        item.conformance = self.conformance
        item.add_marker("conformance")
        for name in dict.fromkeys((scenario.family, *scenario.tags)):
            item.add_marker(mark_name(name))
        return item


class ItemFailed(ConformanceError):
    """An item broke rules no known-failure entry covers (or an entry went stale)."""

    def __init__(self, run: ScenarioRun, judgement: Judgement) -> None:
        self.run = run
        self.judgement = judgement
        super().__init__(f"{run.scenario.id}: {', '.join(run.failed_rules) or 'known failure no longer fails'}")


class ScenarioItem(pytest.Item):
    scenario: Scenario
    conformance: ConformanceSession
    upstream: WireDialect | None = None  # the dialect the backend is served in (None: the scenario's own)
    server: ServerProfile | None = None  # the real server whose habits the backend streams with (None: ideal)
    profile: Profile | None = None  # a real client that plays it (None: the session's choice)
    record: ItemRecord | None = None

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path = Path(self.scenario.path) if self.scenario.path else self.path
        return path, None, f"{self.scenario.family}/{self.scenario.id}"

    def runtest(self) -> None:
        from harness.core.dialects import NotPortable
        from harness.core.dialects.profiles import choose_profile, feature_skip_reason, missing_features
        from harness.core.dialects.script import natural_reason, serve_as, served_strictly
        from harness.core.replay.servers import played_by
        from harness.report.summary import item_record
        from harness.run.runner import play

        session = self.conformance
        scenario = self.scenario
        upstream = self.upstream or scenario.backend.dialect
        assert session.shared is not None
        settings = dataclasses.replace(session.settings, proxy_url=session.shared.proxy_for(self.upstream))
        from harness.generate.coverage import unclaimed_reason

        requested = self.profile or session.requested_profile(scenario, self.upstream, settings.features)
        profile, skip = choose_profile(scenario, requested, settings.features)
        if skip is None:
            skip = unclaimed_reason(scenario.family, session.run.formats, scenario.rescues)
        if skip is None and scenario.spec_only and not session.run.strict:
            skip = "a case only the spec decides (no client breaks either way): played with --strict"
        played = profile
        # A user's proxy is taken to serve OpenAI clients unless --client-profile says otherwise.
        if (skip is None and session.run.proxy_url and session.run.client_profile is None
                and played.written_in is not DEFAULT_PROFILE.written_in):
            skip = (f"{played.label}'s scenario, and the proxy's clients are taken to speak {DEFAULT_PROFILE.name} "
                    f"(pass --client-profile {profile.name} to test its {played.answers.short_name} API)")
        if skip is None and self.upstream is None:
            skip = natural_reason(scenario, played.answers)
        if skip is None:
            try:
                scenario = played_by(serve_as(scenario, upstream), self.server)
                if session.run.strict_upstream:
                    scenario = served_strictly(scenario)
            except NotPortable as exc:
                skip = f"only meaningful with its own upstream dialect, {scenario.backend.dialect.name}: {exc}"
        if skip is not None:
            self.record = item_record(scenario, profile, "skipped", reason=skip, upstream=upstream, server=self.server)
            pytest.skip(skip)
        notes = [
            f"upstream check {a.path} {a.op} not checked: {feature_skip_reason(missing, what='it')}"
            for a in scenario.expect.upstream
            if (missing := missing_features(a.requires, settings.features))
        ]
        health = session.health
        if health.hangs and not session.shared.embedded_proxy:
            # The proxy no longer answers even a plain request: playing this case would only cost the timeout.
            cause = health.cause()
            self.record = item_record(scenario, profile, "error", reason=cause, upstream=upstream, cause=cause,
                                      server=self.server)
            raise ConformanceError(cause)
        was_unhealthy = health.unhealthy
        try:
            run = play(scenario, settings=settings, mock=session.mock, profile=profile)
        except ProxyUnreachable as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc), upstream=upstream, server=self.server)
            if not session.reached:
                self.session.shouldstop = str(exc)
            raise
        except ConformanceError as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc), upstream=upstream, server=self.server)
            raise
        session.reached = True
        judgement, stale = self._judge(run, notes)
        cause = ""
        if judgement.outcome == "failed" and run.failures:
            model = settings.models.for_scenario(scenario)
            health.check(scenario, proxy_url=settings.proxy_url, mock=session.mock, profile=profile, model=model,
                         proxy_headers=settings.proxy_headers, timeout=settings.timeout)
            if not health.unhealthy:
                cause = _common_cause(run, settings.proxy_url)
            else:
                cause = health.cause()
                if health.recover(scenario, proxy_url=settings.proxy_url, mock=session.mock, profile=profile,
                                  model=model, proxy_headers=settings.proxy_headers, timeout=settings.timeout):
                    # The answer was judged while the proxy refused plain requests: judged again once it answers.
                    notes.append(f"played again once the proxy answered plain requests again; {cause}")
                    run = play(scenario, settings=settings, mock=session.mock, profile=profile)
                    judgement, stale = self._judge(run, notes)
                    cause = _common_cause(run, settings.proxy_url) if judgement.outcome == "failed" else ""
                elif was_unhealthy:
                    # Played while the proxy was down, and it never came back: nothing here is the case's verdict.
                    reason = f"inconclusive: {cause}"
                    self.record = item_record(scenario, profile, "inconclusive", reason=reason, notes=notes,
                                              upstream=upstream, cause=cause)
                    pytest.skip(reason)
        elif health.unhealthy and judgement.outcome == "passed":
            health.since = None  # it answers again
        self.record = item_record(scenario, profile, judgement.outcome, run=run,
                                  expected_rules=judgement.expected, notes=notes, upstream=upstream, cause=cause,
                                  server=self.server)
        self.record = replace(self.record, known_entries=tuple(e.number for e in judgement.expected.values()),
                              stale_entries=stale, replay=self._replay(run) if judgement.unexpected else "")
        for note in notes:
            self.user_properties.append(("conformance-note", note))
        if session.run.record is not None:
            failure = self._render(ItemFailed(run, judgement), full=True) if judgement.outcome == "failed" else None
            from harness.pytest.outputs import record_item

            record_item(session, run, failure, self.record.file_stem)
        if judgement.outcome == "xfailed":
            pytest.xfail(judgement.xfail_reason)
        if judgement.outcome == "failed":
            raise ItemFailed(run, judgement)

    def _replay(self, run: ScenarioRun) -> str:
        """The command that replays the item's first failing exchange, secrets redacted."""
        from harness.pytest.reproduce import replay_command

        attempt = next((a for a in run.attempts if a.failures), None)
        if attempt is None:
            return ""
        crossed = self.upstream if self.upstream is not self.scenario.backend.dialect else None
        return self.conformance.redactor.text(
            replay_command(self.conformance, run.scenario, run.profile, attempt, crossed, by_path=True))

    def _judge(self, run: ScenarioRun, notes: list[str]) -> tuple[Judgement, tuple[int, ...]]:
        """The run against the known failures, and the stale entries; the retries it made join ``notes``."""
        from harness.report.known_failures import judge

        session = self.conformance
        # Retries a client would have made (a 429/503 with Retry-After) are part of the verdict, said aloud.
        notes += [f"{a.label}: {r}" for a in run.attempts if a.exchange is not None for r in a.exchange.retries]
        judgement = judge(run.scenario.id, run.failed_rules, session.known)
        stale = tuple(e.number for e in judgement.stale)
        if session.run.update_known_failures and stale and not judgement.unexpected:
            # updating the file: an entry that passes now is dropped from it, not a failure
            judgement = replace(judgement, outcome="xfailed" if judgement.expected else "passed", stale=())
        return judgement, stale

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """Honours ``--tb``: ``line`` gives one line, ``long`` (and ``native``) the raw
        answer around every finding, every other style the compact view."""
        exc = excinfo.value
        tbstyle = style or self.config.getoption("tbstyle", "auto")
        redact = self.conformance.redactor.text
        if isinstance(exc, ConformanceError) and tbstyle == "line":
            return _as_repr(self, redact(str(exc)), body=False)
        if isinstance(exc, ItemFailed):
            return _as_repr(self, self._render(exc, full=tbstyle in ("long", "native")))
        if isinstance(exc, ConformanceError):
            return _as_repr(self, redact(f"{type(exc).__name__}: {exc}"))
        return super().repr_failure(excinfo, style=style)

    def _render(self, exc: ItemFailed, *, full: bool) -> str:
        """The failure's transcript, secrets redacted."""
        session = self.conformance
        run, judgement = exc.run, exc.judgement
        known = {rule: entry.reason for rule, entry in judgement.expected.items()}
        from harness.pytest.reproduce import replay_command
        from harness.report.failure import render_failures

        text = ""
        if run.failures:
            notes = self.record.notes if self.record is not None else ()
            crossed = self.upstream if self.upstream is not self.scenario.backend.dialect else None
            text = render_failures(run, reproduce=lambda a: replay_command(session, run.scenario, run.profile, a, crossed,
                                                                            self.server),
                                   known=known, notes=notes, full=full)
        if text and self.server is not None:
            habits = ", ".join(h.name for h in self.server.habits.get(run.scenario.backend.dialect, ()))
            text = (f"upstream profile: {self.server.name} (the answer streamed the way {self.server.label} streams: "
                    f"{habits})\n{text}")
        if judgement.stale:
            path = session.known.path if session.known else "the known-failures file"
            text = (text + "\n\n" if text else "") + judgement.xpass_message(path)
        return session.redactor.text(text)


def _as_repr(item: ScenarioItem, text: str, *, body: bool = True) -> TerminalRepr:
    """A report whose one-line summary is the text's first line and whose body (unless
    ``body`` is false, as for ``--tb=line``) is the whole text.

    A plain string would do for the body, but pytest then uses all of it as the short
    summary's message, which it prints untruncated on CI; a report object keeps its
    first line there, and survives pytest-xdist sending it from a worker."""
    from _pytest._code.code import ReprEntryNative, ReprExceptionInfo, ReprFileLocation, ReprTraceback

    path, _, _ = item.reportinfo()
    first = text.splitlines()[0] if text else ""
    entries = [ReprEntryNative([text + "\n"])] if body else []
    return ReprExceptionInfo(ReprTraceback(entries, None, "native" if body else "line"),
                             ReprFileLocation(str(path), 1, first))
