"""The plugin's hooks for one active run: the header, the preflight, collection of the
scenario items, carrying each item's record back from the workers, and the reports and
score card at the end. Apart from the run's state (``session``) so that the state is read
by the items and outputs without any of them importing back."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from harness.core.dialects import DIALECTS
from harness.core.dialects.clients import DEFAULT_PROFILE, Profile
from harness.core.scenario.loading import awaiting_review
from harness.pytest.items import ConformanceSuite, ScenarioItem, mark_name
from harness.pytest.outputs import write_causes, write_known_failures, write_record, write_reports, write_score_card
from harness.pytest.session import ConformanceSession, Shared, usage_error
from harness.report.summary import ItemRecord, summarize
from harness.run.health import plain_scenario, preflight, wait_for_listener
from harness.run.options import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter


def header_lines(session: ConformanceSession, width: int) -> list[str]:
    """What the run plays against what, wrapped to the terminal's ``width`` (a long line goes on
    indented, a URL is never cut): pytest's report header, or the whole header of the
    ``run`` command's view, which leaves pytest's own lines out."""
    shared = session.shared
    if shared is None:
        return []
    run = session.run
    who = "the bundled reference proxy" if shared.embedded_proxy else "your proxy"
    where = " in each xdist worker, beside its own mock backend" if shared.per_worker else f" at {shared.proxy_url}"
    lines = [f"conformance: {len(session.scenarios)} scenario(s) against {who}{where}"]
    pending = awaiting_review(session.scenarios)
    if pending:
        lines.append(f"conformance: warning: {len(pending)} scenario(s) marked 'review: required' (an import's "
                     f"unchecked proposal): {', '.join(s.id for s in pending)}")
    fix = "" if "mock-port" in run.given else " (fix the port with --mock-port)"
    if shared.mock_served and not shared.embedded_proxy and shared.upstream_url:
        lines.append(f"conformance: mock backend at {shared.mock_url} behind the recorder of --recordings at "
                     f"{shared.upstream_url} (your proxy's upstream: {shared.upstream_url}/v1){fix}")
    elif shared.mock_served and not shared.embedded_proxy:
        lines.append(f"conformance: mock backend (your proxy's upstream): {shared.mock_url}/v1{fix}")
    elif not shared.per_worker:
        lines.append(f"conformance: mock backend at {shared.mock_url}")
    features = ", ".join(shared.features) or "none"
    source = " (the reference proxy's)" if shared.embedded_proxy and run.features is None else ""
    if session.implied and run.client_profile is not None:
        source += f" ({', '.join(sorted(session.implied))} implied by --client-profile {run.client_profile.name})"
    profile = (run.client_profile.name if run.client_profile is not None
               else DEFAULT_PROFILE.name if run.proxy_url else "each scenario's own")
    lines.append(f"conformance: upstream dialect: {session.pairs_label()}; timeout {run.timeout:g} s")
    lines.append(f"conformance: claimed features: {features}{source}; client profile: {profile}; "
                 f"strict: {'yes' if run.strict else 'no'}")
    if run.fuzz:
        fuzz_seed = shared.seed if run.fuzz_seed is None else run.fuzz_seed
        lines.append(f"conformance: {run.fuzz} generated case(s) per format, seed "
                     f"{fuzz_seed} (reproduce with --conformance-fuzz-seed {fuzz_seed})")
    if run.rechunk:
        lines.append(f"conformance: {run.rechunk} re-chunked variant(s) per streaming scenario, "
                     f"seed {shared.seed} (reproduce with --rechunk-seed {shared.seed})")
    return [part for line in lines for part in textwrap.wrap(session.redactor.text(line), max(width, 40),
                                                             subsequent_indent="  ", break_on_hyphens=False,
                                                             break_long_words=False)]


class RunHooks:
    """Registered beside the session when the plugin is active."""

    def __init__(self, session: ConformanceSession) -> None:
        self.session = session
        config = session.config
        scenarios = session.scenarios
        for name in {"conformance", *(s.family for s in scenarios), *(t for s in scenarios for t in s.tags)}:
            config.addinivalue_line("markers", f"{mark_name(name)}: toolcall-conformance family or tag")

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        return header_lines(self.session, config.get_terminal_writer().fullwidth)

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        shared = self.session.shared
        if self.session.worker or shared is None or shared.embedded_proxy or self.session.config.option.collectonly:
            return
        patience = float(self.session.run.wait_for_proxy or 0.0)
        problem = wait_for_listener(shared.proxy_url, patience, connect_timeout=min(self.session.run.timeout, 5.0))
        if problem is not None:  # a usage error is printed once, as one line
            waited = f" after waiting {patience:g} s" if patience > 0 else ""
            raise usage_error(f"cannot connect to the proxy under test at {shared.proxy_url} ({problem}){waited}; "
                         "is it running, and is --proxy-url right?")
        self._preflight(shared)

    def _preflight(self, shared: Shared) -> None:
        """One plain exchange per client dialect in use: a request that never reaches the mock
        stops the run with a diagnosis instead of failing every scenario the same way.

        It may take the default timeout even when ``--timeout`` is shorter: the first request
        can pay the proxy's cold start, and its verdict decides the whole run."""
        profile: Profile = self.session.run.client_profile or DEFAULT_PROFILE
        upstream = DIALECTS.get(self.session.run.upstream_dialect, profile.written_in)
        # A model name the proxy routes: the user's, else the first a scenario asks for (a routing proxy refuses
        # names it does not know, and the scenarios' own are the ones the run will send).
        model = self.session.run.model.default or next(
            (m for s in self.session.scenarios if isinstance(m := s.client.request.get("model"), str)), None)
        result = preflight(plain_scenario(profile, upstream), proxy_url=shared.proxy_url, mock=self.session.mock,
                           profile=profile, model=model, proxy_headers=self.session.run.proxy_header,
                           timeout=max(self.session.run.timeout, DEFAULT_TIMEOUT))
        if not result.reached_mock:
            given = "mock-port" in self.session.run.given
            pytest.exit(result.diagnosis(shared.mock_url, mock_served=shared.mock_served, port_given=given),
                        returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                                   pytest.CollectReport]:
        report = yield
        if isinstance(collector, pytest.Session) and report.passed:
            suite = ConformanceSuite.from_parent(collector, name="conformance", nodeid="conformance")
            suite.conformance = self.session
            if self.session.only:
                report.result = [suite]
            else:
                report.result.append(suite)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
            None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if isinstance(item, ScenarioItem) and report.when == "call" and item.record is not None:
            report.conformance_record = json.dumps(item.record.to_json())  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "conformance_record", None)
        if isinstance(data, str):
            self.session.records[report.nodeid] = ItemRecord.from_json(json.loads(data))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.session.worker:
            return
        summary = summarize(self.session.records.values(), self.session.context())
        if summary.nothing_checked and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED  # every scenario skipped: nothing was checked
        write_known_failures(self.session)
        if self.session.stale_known and not self.session.run.update_known_failures and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a glob entry that covers no failure any more
        if self.session.run.record is not None:
            write_record(self.session, summary)
        write_reports(self.session, summary)

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if self.session.worker:
            return
        write_score_card(self.session, terminalreporter)


class GroupedFailures:
    """The console's view of a run: the failures grouped by cause, before pytest's own
    sections, and the ``run`` command's header (registered beside the hooks, as pytest
    takes one implementation of a hook per plugin)."""

    def __init__(self, session: ConformanceSession) -> None:
        self.session = session

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Generator[None, None, None]:
        """``toolcall-conformance run`` is quiet by default (``-q``: no platform, rootdir,
        plugins or item count, which tell a proxy's author nothing); the run's own lines
        are printed all the same. ``-v`` shows pytest's whole header again."""
        result = yield
        config = self.session.config
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and self.session.only and config.get_verbosity() == -1 \
                and not config.option.collectonly:
            for line in header_lines(self.session, config.get_terminal_writer().fullwidth):
                reporter.write_line(line)
        return result

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> Generator[None, None, None]:
        """The failed items shown in a group are kept out of pytest's per-item sections (its
        FAILURES and short summary), and put back for the counts of its last line."""
        if self.session.worker or not self.session.grouped:
            return (yield)
        taken = write_causes(self.session, terminalreporter)
        try:
            return (yield)
        finally:
            terminalreporter.stats.setdefault("failed", []).extend(taken)
