"""The pytest plugin: ``pytest --proxy-url URL`` runs the conformance suite.

Inert unless ``--conformance`` or ``--proxy-url`` is given, so installing the package
changes nothing in an unrelated project (the harness itself is imported only then).
When active, every scenario becomes one test item ``conformance::<scenario-id>``
under a collector attached to the session, so ``-k``, ``-x``, ``--lf``,
``--junitxml`` and ``-n auto`` work as for any test.

Servers: the controlling process serves the mock backend (unless ``--mock-url``) and,
without ``--proxy-url``, the reference proxy, in ``pytest_configure``; pytest-xdist
workers get the URLs through ``workerinput`` and start nothing. Each item's result
travels back on its report (``conformance_record``) so the controller can print the
score card and write the JSON / Markdown reports.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shlex
import socket
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import ConformanceError, ProxyUnreachable
from harness.options import BY_NAME, DEFAULT_TIMEOUT, OPTIONS, replay_args

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr
    from _pytest.terminal import TerminalReporter

    from harness.embedded import EmbeddedServers
    from harness.exchange import Profile
    from harness.known_failures import Judgement, KnownFailures
    from harness.report import ItemRecord, Summary
    from harness.runner import Attempt, ModelChoice, RunSettings, ScenarioRun
    from harness.scenario import Scenario
    from mock_backends.control import MockControl

WORKER_KEY = "toolcall_conformance"
SESSION_PLUGIN = "toolcall-conformance-session"
# Marks pytest gives a meaning to: a family or tag by these names gets a "tag-" prefix.
_RESERVED_MARKS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast", "asyncio",
     "timeout", "flaky", "conformance"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--conformance`` switches the suite on; every setting is ``--conformance-<name>``
    (``harness.options``), so no option of a user's own conftest can collide."""
    group = parser.getgroup("toolcall-conformance", "tool-call proxy conformance (toolcall-conformance)")
    group.addoption("--conformance", action="store_true", default=False,
                    help="Run the conformance suite (against the bundled reference proxy unless "
                         "--conformance-proxy-url).")
    group.addoption("--conformance-only", action="store_true", default=False,
                    help="Like --conformance, and collect nothing else (what 'toolcall-conformance run' passes).")
    for option in OPTIONS:
        kwargs: dict[str, Any] = {"dest": option.dest, "help": option.help}
        if option.kind == "flag":
            kwargs.update(action="store_true", default=bool(option.default))
        elif option.kind == "multiple":
            kwargs.update(action="append", default=[], metavar=option.metavar)
        else:
            kwargs.update(type=option.type, default=option.default, metavar=option.metavar)
            if option.choices:
                kwargs.update(choices=option.choices)
        group.addoption(option.pytest_flag, **kwargs)


def _opt(config: pytest.Config, name: str) -> Any:
    return config.getoption(BY_NAME[name].dest)


def _enabled(config: pytest.Config) -> bool:
    return bool(
        _opt(config, "proxy-url")
        or config.getoption("conformance")
        or config.getoption("conformance_only")
        or config.getoption("conformance_fuzz")
    )


@dataclass(frozen=True)
class Shared:
    """What the controller decides once and every worker must agree on."""

    proxy_url: str
    mock_url: str
    features: tuple[str, ...]
    seed: int
    embedded_proxy: bool  # the reference proxy is the proxy under test
    mock_served: bool  # this run serves the mock (not --mock-url)
    proxy_urls: dict[str, str] = field(default_factory=dict)  # bundled proxies by the upstream dialect they call

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Shared:
        return cls(data["proxy_url"], data["mock_url"], tuple(data["features"]), int(data["seed"]),
                   bool(data["embedded_proxy"]), bool(data["mock_served"]), dict(data.get("proxy_urls") or {}))

    def proxy_for(self, upstream: str | None) -> str:
        """The proxy that plays an item whose backend is served in ``upstream`` (None: its own)."""
        return self.proxy_urls.get(upstream or "native") or self.proxy_urls.get("native") or self.proxy_url


def pytest_configure(config: pytest.Config) -> None:
    if not _enabled(config):
        return
    session = ConformanceSession(config)
    config.add_cleanup(session.close)
    session.start()
    config.pluginmanager.register(session, SESSION_PLUGIN)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: hand each worker the servers the controller started."""
    session = node.config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if isinstance(session, ConformanceSession) and session.shared is not None:
        node.workerinput[WORKER_KEY] = session.shared.to_json()


def _usage(message: str) -> pytest.UsageError:
    return pytest.UsageError(message)


class ConformanceSession:
    """The plugin's state for one pytest run (registered only when active)."""

    def __init__(self, config: pytest.Config) -> None:
        from harness.known_failures import load_known_failures
        from harness.profiles import parse_profile
        from harness.report import rules_by_id
        from harness.runner import parse_features, parse_headers, parse_models
        from harness.scenario import FEATURES, bundled_scenarios_dir, validate_paths

        self.config = config

        def opt(name: str) -> Any:
            return _opt(config, name)

        self.only = bool(config.getoption("conformance_only"))
        self.user_proxy_url: str | None = (opt("proxy-url") or "").rstrip("/") or None
        self.user_mock_url: str | None = (opt("mock-url") or "").rstrip("/") or None
        self.mock_host: str = opt("mock-host")
        self.mock_port: int = opt("mock-port")
        self.dirs: list[str] = list(opt("scenarios"))
        self.timeout: float = opt("timeout") or DEFAULT_TIMEOUT
        self.rechunk: int = opt("rechunk")
        from harness.coverage import parse_formats

        self.formats = parse_formats(opt("formats"))
        mode = opt("upstream-dialect") or ("natural" if self.user_proxy_url else "all")
        if mode == "all" and self.user_proxy_url:
            raise _usage("--conformance-upstream-dialect all plays the bundled reference proxies; a proxy under test "
                         "calls one upstream dialect: name it (openai or anthropic), or natural")
        self.upstream_mode: str = mode
        # The upstream dialect of each item of a scenario (None: the scenario's own).
        self.upstreams: tuple[str | None, ...] = {"natural": (None,), "all": ("openai", "anthropic")}.get(mode, (mode,))
        self.strict = bool(opt("strict"))
        try:
            profile = opt("client-profile")
            self.client_profile: Profile | None = parse_profile(profile) if profile else None
            self.models: ModelChoice = parse_models(opt("model"))
            self.proxy_headers = parse_headers(opt("proxy-header"))
        except ValueError as exc:
            raise _usage(str(exc)) from exc
        self.claimed = parse_features(opt("features")) if opt("features") else None
        if self.claimed is not None:
            unknown = sorted(self.claimed - set(FEATURES))
            if unknown:
                raise _usage(f"--features: unknown feature(s) {', '.join(unknown)} (known: {', '.join(FEATURES)})")
        if self.timeout <= 0:
            raise _usage("--timeout must be a positive number of seconds")
        if self.rechunk < 0:
            raise _usage("--rechunk must be 0 or more")
        scenarios, problems = validate_paths(self.dirs or [bundled_scenarios_dir()])
        if problems:
            raise _usage("invalid scenarios:\n" + "\n".join(map(str, problems)))
        self.scenarios: list[Scenario] = scenarios
        self.known: KnownFailures | None = None
        self.write_known: str | None = opt("write-known-failures")
        self.update_known: str | None = opt("update-known-failures")
        expect = opt("expect-failures")
        if self.update_known and expect and Path(expect).resolve() != Path(self.update_known).resolve():
            raise _usage("--update-known-failures FILE reads FILE as the known failures: leave out --expect-failures "
                         f"{expect}, or name the same file")
        if self.update_known or expect:
            try:
                self.known = load_known_failures(self.update_known or expect, known_rules=set(rules_by_id()))
            except ConformanceError as exc:
                raise _usage(str(exc)) from exc
        self.known_note: list[str] = []  # what writing the known-failures file did, for the summary
        self.record_dir: Path | None = Path(opt("record")) if opt("record") else None
        self.report_json: str | None = opt("report-json")
        self.report_md: str | None = opt("report-md")
        self.embedded: EmbeddedServers | None = None
        self.shared: Shared | None = None
        self._mock: MockControl | None = None
        self.records: dict[str, ItemRecord] = {}
        self.reached = False  # some item got an answer from the proxy
        self.implied: frozenset[str] = frozenset()  # features claimed only through --client-profile
        from harness.health import Health

        self.health = Health()  # this process's view of the proxy between scenarios
        self.worker = hasattr(config, "workerinput")
        for name in {"conformance", *(s.family for s in scenarios), *(t for s in scenarios for t in s.tags)}:
            config.addinivalue_line("markers", f"{mark_name(name)}: toolcall-conformance family or tag")

    # ------------------------------------------------------------------ servers

    def start(self) -> None:
        from harness.embedded import EmbeddedServers

        if self.worker:
            data = getattr(self.config, "workerinput", {}).get(WORKER_KEY)
            if data is None:
                raise _usage("toolcall-conformance: this xdist worker got no server URLs from the controller")
            self.shared = Shared.from_json(data)
            return
        seed = _opt(self.config, "rechunk-seed")
        if seed is None:
            seed = random.SystemRandom().randrange(1, 1_000_000)
        embedded_proxy = self.user_proxy_url is None
        if self.config.option.collectonly:  # nothing will run: start nothing
            idle = "(not started under --collect-only)"
            self.shared = Shared(self.user_proxy_url or idle, self.user_mock_url or idle, self._features(frozenset()),
                                 seed, embedded_proxy, False)
            return
        if self.user_mock_url is not None and not embedded_proxy:
            self.shared = Shared(self.user_proxy_url or "", self.user_mock_url, self._features(frozenset()),
                                 seed, False, False)
            return
        proxies = ("native",) if self.upstream_mode == "natural" else tuple(u for u in self.upstreams if u)
        self.embedded = EmbeddedServers(
            mock_host=self.mock_host, mock_port=self.mock_port, with_proxy=embedded_proxy, mock_url=self.user_mock_url,
            upstream_dialects=proxies,
        )
        try:
            urls = self.embedded.start()
        except ConformanceError as exc:
            raise _usage(str(exc)) from exc
        proxy_url = urls.proxy_url if embedded_proxy else self.user_proxy_url
        assert proxy_url is not None
        self.shared = Shared(proxy_url, urls.mock_url, self._features(urls.proxy_features), seed, embedded_proxy,
                             self.user_mock_url is None, dict(urls.proxy_urls))

    def _features(self, proxy_default: frozenset[str]) -> tuple[str, ...]:
        """The features the run claims: ``--features`` (else the reference proxy's, or
        none), plus what an explicit ``--client-profile`` implies."""
        from harness.runner import with_profile_features

        base = self.claimed if self.claimed is not None else proxy_default
        features = with_profile_features(base, self.client_profile)
        self.implied = features - base
        return tuple(sorted(features))

    def close(self) -> None:
        if self._mock is not None:
            self._mock.close()
            self._mock = None
        if self.embedded is not None:
            self.embedded.close()
            self.embedded = None

    @property
    def mock(self) -> MockControl:
        if self._mock is None:
            assert self.shared is not None
            from mock_backends.control import MockControl

            self._mock = MockControl(_local(self.shared.mock_url))
        return self._mock

    @property
    def settings(self) -> RunSettings:
        from harness.runner import RunSettings

        assert self.shared is not None
        return RunSettings(
            proxy_url=self.shared.proxy_url,
            features=frozenset(self.shared.features),
            strict=self.strict,
            timeout=self.timeout,
            models=self.models,
            proxy_headers=self.proxy_headers,
            rechunk=self.rechunk,
            seed=self.shared.seed,
        )

    # ------------------------------------------------------------------ hooks

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        shared = self.shared
        if shared is None:
            return []
        who = "the bundled reference proxy" if shared.embedded_proxy else "your proxy"
        lines = [f"conformance: {len(self.scenarios)} scenario(s); proxy under test: {shared.proxy_url} ({who})"]
        from harness.scenario import awaiting_review

        pending = awaiting_review(self.scenarios)
        if pending:
            lines.append(f"conformance: warning: {len(pending)} scenario(s) marked 'review: required' (an import's "
                         f"unchecked proposal): {', '.join(s.id for s in pending)}")
        if shared.mock_served and not shared.embedded_proxy:
            lines.append(f"conformance: mock backend at {shared.mock_url} -- configure your proxy's upstream as "
                         f"{shared.mock_url}/v1 (fix the port with --mock-port)")
        else:
            lines.append(f"conformance: mock backend at {shared.mock_url}")
        features = ", ".join(shared.features) or "none"
        source = " (the reference proxy's)" if shared.embedded_proxy and self.claimed is None else ""
        if self.implied:
            source += f" ({', '.join(sorted(self.implied))} implied by --client-profile {self.client_profile})"
        profile = self.client_profile or ("openai" if self.user_proxy_url else "each scenario's own")
        lines.append(f"conformance: upstream dialect: {self.pairs_label()}")
        lines.append(f"conformance: claimed features: {features}{source}; client profile: "
                     f"{profile}; strict: {'yes' if self.strict else 'no'}; "
                     f"timeout {self.timeout:g} s")
        if config.getoption("conformance_fuzz"):
            fuzz_seed = config.getoption("conformance_fuzz_seed")
            fuzz_seed = shared.seed if fuzz_seed is None else fuzz_seed
            lines.append(f"conformance: {config.getoption('conformance_fuzz')} generated case(s) per format, seed "
                         f"{fuzz_seed} (reproduce with --conformance-fuzz-seed {fuzz_seed})")
        if self.rechunk:
            lines.append(f"conformance: {self.rechunk} re-chunked variant(s) per streaming scenario, "
                         f"seed {shared.seed} (reproduce with --rechunk-seed {shared.seed})")
        return lines

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        shared = self.shared
        if self.worker or shared is None or shared.embedded_proxy or self.config.option.collectonly:
            return
        patience = float(_opt(self.config, "wait-for-proxy") or 0.0)
        problem = wait_for_listener(shared.proxy_url, patience, connect_timeout=min(self.timeout, 5.0))
        if problem is not None:  # a usage error is printed once, as one line
            waited = f" after waiting {patience:g} s" if patience > 0 else ""
            raise _usage(f"cannot connect to the proxy under test at {shared.proxy_url} ({problem}){waited}; "
                         "is it running, and is --proxy-url right?")
        self._preflight(shared)

    def _preflight(self, shared: Shared) -> None:
        """One plain exchange per client dialect in use: a request that never reaches the mock
        stops the run with a diagnosis instead of failing every scenario the same way.

        It may take the default timeout even when ``--timeout`` is shorter: the first request
        can pay the proxy's cold start, and its verdict decides the whole run."""
        from harness.health import plain_scenario, preflight

        profile: Profile = self.client_profile or "openai"
        from harness.dialects import DIALECTS

        dialect = "anthropic" if profile == "anthropic" else "openai"
        upstream = self.upstream_mode if self.upstream_mode in DIALECTS else dialect
        result = preflight(plain_scenario(profile, upstream), proxy_url=shared.proxy_url, mock=self.mock,
                           profile=profile, model=self.models.default, proxy_headers=self.proxy_headers,
                           timeout=max(self.timeout, DEFAULT_TIMEOUT))
        if not result.reached_mock:
            pytest.exit(result.diagnosis(shared.mock_url, mock_served=shared.mock_served),
                        returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Generator[None, pytest.CollectReport,
                                                                                   pytest.CollectReport]:
        report = yield
        if isinstance(collector, pytest.Session) and report.passed:
            suite = ConformanceSuite.from_parent(collector, name="conformance", nodeid="conformance")
            suite.conformance = self
            if self.only:
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
            from harness.report import ItemRecord

            self.records[report.nodeid] = ItemRecord.from_json(json.loads(data))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.worker:
            return
        from harness.report import render_json, render_markdown, summarize

        summary = summarize(self.records.values(), self.context())
        if summary.nothing_checked and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED  # every scenario skipped: nothing was checked
        self._write_known_failures()
        if self.record_dir is not None:
            self._write_record(summary)
        if self.report_json:
            _write(self.report_json, json.dumps(render_json(summary), indent=2, ensure_ascii=False) + "\n")
        if self.report_md:
            _write(self.report_md, render_markdown(summary))

    def _write_record(self, summary: Summary) -> None:
        """``--record``: the HTML report over what the items wrote (HAR files, transcripts)."""
        from harness.record import html_report
        from harness.report import render_text, rules_by_id

        assert self.record_dir is not None
        failures = []
        for record in sorted(self.records.values(), key=lambda r: r.scenario):
            text_file = self.record_dir / "failures" / f"{record.scenario}.txt"
            if record.outcome in ("failed", "error"):
                text = text_file.read_text("utf-8") if text_file.is_file() else record.reason
                failures.append((record.scenario, record.outcome, text))
        report = self.record_dir / "report.html"
        _write(str(report), html_report(title="Tool-call conformance", context=self.context(),
                                        score_card=render_text(summary), failures=failures, rules=rules_by_id()))
        hars = len(list((self.record_dir / "har").glob("*.har")))
        self.known_note.append(f"record: {hars} HAR file(s) in {self.record_dir / 'har'}; report {report}")

    def record_item(self, item: ScenarioItem, run: ScenarioRun, failure: str | None) -> None:
        """An item's exchanges as a HAR file, and its failure's full transcript (the
        worker that played it writes them; the controller reads them at the end)."""
        from harness.profiles import ENDPOINTS
        from harness.record import har

        assert self.record_dir is not None and self.shared is not None
        exchanges = [(a.label, a.exchange) for a in run.attempts if a.exchange is not None and a.kind != "equivalence"]
        data = har(exchanges, proxy_url=self.shared.proxy_url, endpoint=ENDPOINTS, mock_url=self.shared.mock_url)
        _write(str(self.record_dir / "har" / f"{run.scenario.id}.har"), json.dumps(data, indent=1, ensure_ascii=False))
        if failure is not None:
            _write(str(self.record_dir / "failures" / f"{run.scenario.id}.txt"), failure)

    def _write_known_failures(self) -> None:
        """``--write-known-failures``: this run's failures as a file; ``--update-known-failures``:
        the file without the entries that pass now (an entry that still covers a failure
        of some scenario, a glob say, is kept)."""
        from datetime import date

        from harness.known_failures import entries_from_failures, pruned, render_known_failures

        records = sorted(self.records.values(), key=lambda r: r.scenario)
        origin = f"Written by toolcall-conformance on {date.today().isoformat()}"
        if self.update_known and self.known is not None:
            used = {n for r in records for n in r.known_entries}
            dropped = {n for r in records for n in r.stale_entries} - used
            kept = pruned(self.known, dropped)
            name = Path(self.update_known).name
            _write(self.update_known, render_known_failures(kept, name=name, origin=origin + " (updated)."))
            gone = [e for e in self.known.entries if e.number in dropped]
            self.known_note.append(f"{self.update_known}: {len(gone)} entr{'y' if len(gone) == 1 else 'ies'} "
                                   f"that pass now dropped, {len(kept)} kept")
            self.known_note += [f"  dropped {e.describe()}" for e in gone]
        if self.write_known:
            failures = [(r.scenario, f.rule, f.message.splitlines()[0] if f.message else f.rule)
                        for r in records if r.outcome in ("failed", "xfailed") for f in r.failures]
            entries = entries_from_failures(failures, self.known)
            name = Path(self.write_known).name
            _write(self.write_known, render_known_failures(entries, name=name, origin=origin + "; reword each "
                                                                                               "reason."))
            self.known_note.append(f"{len(entries)} known failure(s) written to {self.write_known}")

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if self.worker:
            return
        if not self.records:
            for line in self.known_note:
                terminalreporter.write_line(line)
            return
        from harness.report import render_text, summarize

        tr = terminalreporter
        tr.write_sep("=", "tool-call conformance")
        tr.write_line(render_text(summarize(self.records.values(), self.context())))
        if self.known is not None:
            for entry in self.known.unmatched(s.id for s in self.scenarios):
                tr.write_line(f"warning: {self.known.path}: {entry.describe()} matches no scenario")
        from harness.scenario import awaiting_review, review_note

        for scenario in awaiting_review(self.scenarios):
            tr.write_line(f"warning: {review_note(scenario)}")
        for label, path in (("JSON", self.report_json), ("Markdown", self.report_md)):
            if path:
                tr.write_line(f"{label} report written to {path}")
        for line in self.known_note:
            tr.write_line(line)

    def pairs_label(self) -> str:
        """The dialect pairs the run plays, as the header and report name them."""
        if self.upstream_mode == "all":
            return "every pair (openai and anthropic upstreams, each scenario's client dialect)"
        if self.upstream_mode == "natural":
            return "each scenario's own (natural)"
        return self.upstream_mode

    def context(self) -> dict[str, Any]:
        shared = self.shared
        return {
            "proxy": shared.proxy_url if shared else None,
            "upstream dialect": self.pairs_label(),
            "formats": sorted(self.formats) if self.formats is not None else "every format",
            "reference proxy": bool(shared and shared.embedded_proxy),
            "features": list(shared.features) if shared else [],
            "client profile": self.client_profile or "each scenario's own",
            "strict": self.strict,
            "rechunk": self.rechunk,
            "rechunk seed": shared.seed if shared and self.rechunk else None,
            "known failures": self.known.path if self.known else None,
        }

    # ------------------------------------------------------------------ reproduction

    def reproduce(self, scenario: Scenario, profile: Profile, attempt: Attempt, upstream: str | None = None) -> str:
        """The replay command for one exchange, written from the option table."""
        shared = self.shared
        assert shared is not None
        values: dict[str, Any] = {"scenarios": self.dirs, "strict": self.strict, "model": self.models.as_options(),
                                  "timeout": self.timeout}
        if not shared.embedded_proxy:
            values["proxy-url"] = shared.proxy_url
            if shared.mock_served:
                host, _, port = shared.mock_url.removeprefix("http://").rpartition(":")
                values.update({"mock-host": host, "mock-port": int(port)})
            else:
                values["mock-url"] = shared.mock_url
        if profile != scenario.client.profile:
            values["client-profile"] = profile
        if upstream is not None:
            values["upstream-dialect"] = upstream
        if self.claimed is not None:
            values["features"] = [",".join(sorted(self.claimed)) or ","]
        if attempt.variant is not None:
            values["rechunk-seed"] = attempt.variant.seed
        # A round of many exchanges is played by the run, not by replay: the item alone, again.
        if attempt.kind == "isolation":
            args = ["toolcall-conformance", "run", "-k", scenario.id, *replay_args(values)]
        else:
            args = ["toolcall-conformance", "replay", scenario.id, *replay_args(values)]
        if attempt.kind in ("non-stream", "equivalence") and scenario.streams:
            args.append("--no-stream")
        if attempt.variant is not None:
            args += ["--rechunk-variant", str(attempt.variant.index)]
        command = shlex.join(args)
        if self.proxy_headers:
            command += "  # plus your --proxy-header options"
        if attempt.shrunk is not None and attempt.shrunk.splits:
            command += "\nreproduce the smallest split: " + shlex.join(
                [*args, "--split", ",".join(map(str, attempt.shrunk.splits))])
        return command


def _common_cause(run: ScenarioRun, proxy_url: str) -> str:
    """A cause many failing scenarios may share: an HTTP error status on a case that expects
    none (a route the proxy does not have, a model it does not know, a locked-out backend)."""
    first = run.attempts[0].exchange if run.attempts else None
    if first is None or run.scenario.expect.error is not None or first.status in (None, 200):
        return ""
    from harness.profiles import ENDPOINTS

    return f"HTTP {first.status} from POST {proxy_url.rstrip('/')}{ENDPOINTS[run.profile]}"


def mark_name(name: str) -> str:
    return f"tag-{name}" if name in _RESERVED_MARKS and name != "conformance" else name


def _local(url: str) -> str:
    """Where this process reaches a server bound to every interface."""
    return url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")


def _unreachable(url: str, timeout: float) -> str | None:
    """Why nothing accepts connections at ``url``, or None when something does."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as exc:
        return f"not a valid URL: {exc}"
    if parsed.scheme not in ("http", "https") or not parsed.host:
        return "not an http:// or https:// URL"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__


def wait_for_listener(url: str, seconds: float, *, connect_timeout: float) -> str | None:
    """Like ``_unreachable``, but tries again until ``seconds`` have passed: a proxy a CI
    job has just started takes a moment to listen."""
    import time

    give_up = time.monotonic() + max(seconds, 0.0)
    while True:
        problem = _unreachable(url, connect_timeout)
        if problem is None or problem.startswith("not ") or time.monotonic() >= give_up:
            return problem  # reachable, not a URL at all, or out of patience
        time.sleep(min(0.2, max(0.0, give_up - time.monotonic())))


def _write(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


# --------------------------------------------------------------------------- collection


class ConformanceSuite(pytest.Collector):
    """All scenarios of the run, under the node id ``conformance``."""

    conformance: ConformanceSession

    def collect(self) -> Iterator[pytest.Item]:
        for scenario in self.conformance.scenarios:
            for upstream in self.conformance.upstreams:
                yield self._item(scenario, upstream)
        from harness.fuzz.items import collect

        yield from collect(self, self.conformance)

    def _item(self, scenario: Scenario, upstream: str | None) -> ScenarioItem:
        crossed = upstream is not None and upstream != scenario.backend.dialect
        item = ScenarioItem.from_parent(self, name=f"{scenario.id}[{upstream}-upstream]" if crossed else scenario.id)
        item.scenario = scenario
        item.upstream = upstream
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
    upstream: str | None = None  # the dialect the backend is served in (None: the scenario's own)
    record: ItemRecord | None = None

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path = Path(self.scenario.path) if self.scenario.path else self.path
        return path, None, f"{self.scenario.family}/{self.scenario.id}"

    def runtest(self) -> None:
        from harness.known_failures import judge
        from harness.profiles import choose_profile, feature_skip_reason, missing_features
        from harness.report import item_record
        from harness.runner import play

        from harness.dialects import NotPortable
        from harness.dialects.script import serve_as

        session = self.conformance
        scenario = self.scenario
        upstream = self.upstream or scenario.backend.dialect
        assert session.shared is not None
        settings = dataclasses.replace(session.settings, proxy_url=session.shared.proxy_for(self.upstream))
        from harness.coverage import unclaimed_reason

        profile, skip = choose_profile(scenario, session.client_profile, settings.features)
        if skip is None:
            skip = unclaimed_reason(scenario.family, session.formats, scenario.rescues)
        if skip is None and scenario.spec_only and not session.strict:
            skip = "a case only the spec decides (no client breaks either way): played with --strict"
        if skip is None and session.user_proxy_url and session.client_profile is None and profile == "anthropic":
            skip = ("an Anthropic client's scenario, and the proxy's clients are taken to speak openai "
                    "(pass --client-profile anthropic to test its Messages API)")
        if skip is None:
            try:
                scenario = serve_as(scenario, upstream)
            except NotPortable as exc:
                skip = f"only meaningful with its own upstream dialect, {scenario.backend.dialect}: {exc}"
        if skip is not None:
            self.record = item_record(scenario, profile, "skipped", reason=skip, upstream=upstream)
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
            self.record = item_record(scenario, profile, "error", reason=cause, upstream=upstream, cause=cause)
            raise ConformanceError(cause)
        try:
            run = play(scenario, settings=settings, mock=session.mock, profile=profile)
        except ProxyUnreachable as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc), upstream=upstream)
            if not session.reached:
                self.session.shouldstop = str(exc)
            raise
        except ConformanceError as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc), upstream=upstream)
            raise
        session.reached = True
        judgement = judge(scenario.id, run.failed_rules, session.known)
        stale = tuple(e.number for e in judgement.stale)
        if session.update_known and stale and not judgement.unexpected:
            # updating the file: an entry that passes now is dropped from it, not a failure
            judgement = replace(judgement, outcome="xfailed" if judgement.expected else "passed", stale=())
        cause = ""
        if judgement.outcome == "failed" and run.failures:
            health.check(scenario, proxy_url=settings.proxy_url, mock=session.mock, profile=profile,
                         model=settings.models.for_family(scenario.family), proxy_headers=settings.proxy_headers,
                         timeout=settings.timeout)
            cause = health.cause() if health.unhealthy else _common_cause(run, settings.proxy_url)
        elif health.unhealthy and judgement.outcome == "passed":
            health.since = None  # it answers again
        self.record = item_record(scenario, profile, judgement.outcome, run=run,
                                  expected_rules=judgement.expected, notes=notes, upstream=upstream, cause=cause)
        self.record = replace(self.record, known_entries=tuple(e.number for e in judgement.expected.values()),
                              stale_entries=stale)
        for note in notes:
            self.user_properties.append(("conformance-note", note))
        if session.record_dir is not None:
            failure = self._render(ItemFailed(run, judgement), full=True) if judgement.outcome == "failed" else None
            session.record_item(self, run, failure)
        if judgement.outcome == "xfailed":
            pytest.xfail(judgement.xfail_reason)
        if judgement.outcome == "failed":
            raise ItemFailed(run, judgement)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        """Honours ``--tb``: ``line`` gives one line, ``long`` (and ``native``) the raw
        answer around every finding, every other style the compact view."""
        exc = excinfo.value
        tbstyle = style or self.config.getoption("tbstyle", "auto")
        if isinstance(exc, ConformanceError) and tbstyle == "line":
            return _as_repr(self, str(exc), body=False)
        if isinstance(exc, ItemFailed):
            return _as_repr(self, self._render(exc, full=tbstyle in ("long", "native")))
        if isinstance(exc, ConformanceError):
            return _as_repr(self, f"{type(exc).__name__}: {exc}")
        return super().repr_failure(excinfo, style=style)

    def _render(self, exc: ItemFailed, *, full: bool) -> str:
        session = self.conformance
        run, judgement = exc.run, exc.judgement
        known = {rule: entry.reason for rule, entry in judgement.expected.items()}
        from harness.report import render_failures

        text = ""
        if run.failures:
            notes = self.record.notes if self.record is not None else ()
            crossed = self.upstream if self.upstream not in (None, self.scenario.backend.dialect) else None
            text = render_failures(run, reproduce=lambda a: session.reproduce(run.scenario, run.profile, a, crossed),
                                   known=known, notes=notes, full=full)
        if judgement.stale:
            path = session.known.path if session.known else "the known-failures file"
            text = (text + "\n\n" if text else "") + judgement.xpass_message(path)
        return text


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
