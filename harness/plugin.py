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

import json
import random
import shlex
import socket
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import ConformanceError, ProxyUnreachable

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr
    from _pytest.terminal import TerminalReporter

    from harness.embedded import EmbeddedServers
    from harness.exchange import Profile
    from harness.known_failures import Judgement, KnownFailures
    from harness.report import ItemRecord
    from harness.runner import Attempt, ModelChoice, RunSettings, ScenarioRun
    from harness.scenario import Scenario
    from mock_backends.control import MockControl

DEFAULT_TIMEOUT = 10.0
WORKER_KEY = "toolcall_conformance"
SESSION_PLUGIN = "toolcall-conformance-session"
# Marks pytest gives a meaning to: a family or tag by these names gets a "tag-" prefix.
_RESERVED_MARKS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst", "trylast", "asyncio",
     "timeout", "flaky", "conformance"}
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toolcall-conformance", "tool-call proxy conformance (toolcall-conformance)")
    group.addoption("--proxy-url", metavar="URL",
                    help="Base URL of the proxy under test, e.g. http://localhost:8000/v1 (implies --conformance).")
    group.addoption("--conformance", action="store_true", default=False,
                    help="Run the conformance suite (against the bundled reference proxy unless --proxy-url).")
    group.addoption("--conformance-only", action="store_true", default=False,
                    help="Like --conformance, and collect nothing else (what 'toolcall-conformance run' passes).")
    group.addoption("--scenarios", action="append", default=[], metavar="DIR",
                    help="Scenario folder or file (repeatable); default: the bundled library.")
    group.addoption("--mock-host", default="127.0.0.1", metavar="HOST",
                    help="Interface the mock backend listens on (default 127.0.0.1).")
    group.addoption("--mock-port", type=int, default=0, metavar="PORT",
                    help="Port of the mock backend (default: a free port, printed in the header).")
    group.addoption("--mock-url", metavar="URL", help="Use a mock backend that is already running at URL.")
    group.addoption("--client-profile", choices=("openai", "vtc", "anthropic"), default=None,
                    help="Run every scenario under this client profile (default: each scenario's own).")
    group.addoption("--rechunk", type=int, default=0, metavar="N",
                    help="Also run N re-chunked variants of every streaming scenario.")
    group.addoption("--rechunk-seed", type=int, default=None, metavar="S",
                    help="Seed of the re-chunked variants (default: random, printed).")
    group.addoption("--conformance-strict", action="store_true", default=False,
                    help="Also enforce 'spec' severity rules (pytest's own --strict does this too).")
    group.addoption("--features", action="append", default=[], metavar="A,B",
                    help="Optional features your proxy has (repeatable or comma separated), e.g. vtc,loop-guard.")
    timeout_help = f"Seconds one exchange may take before it counts as hanging (default {DEFAULT_TIMEOUT:g})."
    names = ["--conformance-timeout"]
    if find_spec("pytest_timeout") is None:  # pytest-timeout owns --timeout when installed
        names.insert(0, "--timeout")
    group.addoption(*names, dest="conformance_timeout", type=float, default=None, metavar="SECONDS",
                    help=timeout_help)
    group.addoption("--model", action="append", default=[], metavar="[FAMILY=]NAME",
                    help="Model name sent to the proxy, for all scenarios or one family (repeatable).")
    group.addoption("--proxy-header", action="append", default=[], metavar="'NAME: VALUE'",
                    help="Extra header sent to the proxy, e.g. auth (repeatable).")
    group.addoption("--expect-failures", metavar="FILE",
                    help="YAML file of known failures (scenario, rule, reason); they are reported as expected.")
    group.addoption("--report-json", metavar="PATH", help="Write the results as JSON.")
    group.addoption("--report-md", metavar="PATH", help="Write the results as Markdown (for CI job summaries).")


def _enabled(config: pytest.Config) -> bool:
    return bool(
        config.getoption("proxy_url")
        or config.getoption("conformance")
        or config.getoption("conformance_only")
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

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Shared:
        return cls(data["proxy_url"], data["mock_url"], tuple(data["features"]), int(data["seed"]),
                   bool(data["embedded_proxy"]), bool(data["mock_served"]))


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
        opt = config.getoption
        self.only = bool(opt("conformance_only"))
        self.user_proxy_url: str | None = (opt("proxy_url") or "").rstrip("/") or None
        self.user_mock_url: str | None = (opt("mock_url") or "").rstrip("/") or None
        self.mock_host: str = opt("mock_host")
        self.mock_port: int = opt("mock_port")
        self.dirs: list[str] = list(opt("scenarios"))
        self.timeout: float = opt("conformance_timeout") or DEFAULT_TIMEOUT
        self.rechunk: int = opt("rechunk")
        self.strict = bool(opt("conformance_strict") or getattr(config.option, "strict", False))
        try:
            self.client_profile: Profile | None = parse_profile(opt("client_profile")) if opt("client_profile") else None
            self.models: ModelChoice = parse_models(opt("model"))
            self.proxy_headers = parse_headers(opt("proxy_header"))
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
        if opt("expect_failures"):
            try:
                self.known = load_known_failures(opt("expect_failures"), known_rules=set(rules_by_id()))
            except ConformanceError as exc:
                raise _usage(str(exc)) from exc
        self.report_json: str | None = opt("report_json")
        self.report_md: str | None = opt("report_md")
        self.embedded: EmbeddedServers | None = None
        self.shared: Shared | None = None
        self._mock: MockControl | None = None
        self.records: dict[str, ItemRecord] = {}
        self.reached = False  # some item got an answer from the proxy
        self.implied: frozenset[str] = frozenset()  # features claimed only through --client-profile
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
        seed = self.config.getoption("rechunk_seed")
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
        self.embedded = EmbeddedServers(
            mock_host=self.mock_host, mock_port=self.mock_port, with_proxy=embedded_proxy, mock_url=self.user_mock_url
        )
        try:
            urls = self.embedded.start()
        except ConformanceError as exc:
            raise _usage(str(exc)) from exc
        proxy_url = urls.proxy_url if embedded_proxy else self.user_proxy_url
        assert proxy_url is not None
        self.shared = Shared(proxy_url, urls.mock_url, self._features(urls.proxy_features), seed, embedded_proxy,
                             self.user_mock_url is None)

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
        if shared.mock_served and not shared.embedded_proxy:
            lines.append(f"conformance: mock backend at {shared.mock_url} -- configure your proxy's upstream as "
                         f"{shared.mock_url}/v1 (fix the port with --mock-port)")
        else:
            lines.append(f"conformance: mock backend at {shared.mock_url}")
        features = ", ".join(shared.features) or "none"
        source = " (the reference proxy's)" if shared.embedded_proxy and self.claimed is None else ""
        if self.implied:
            source += f" ({', '.join(sorted(self.implied))} implied by --client-profile {self.client_profile})"
        profile = self.client_profile or "each scenario's own"
        lines.append(f"conformance: claimed features: {features}{source}; client profile: "
                     f"{profile}; strict: {'yes' if self.strict else 'no'}; "
                     f"timeout {self.timeout:g} s")
        if self.rechunk:
            lines.append(f"conformance: {self.rechunk} re-chunked variant(s) per streaming scenario, "
                         f"seed {shared.seed} (reproduce with --rechunk-seed {shared.seed})")
        return lines

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        shared = self.shared
        if self.worker or shared is None or shared.embedded_proxy or self.config.option.collectonly:
            return
        problem = _unreachable(shared.proxy_url, min(self.timeout, 5.0))
        if problem is not None:
            pytest.exit(
                f"cannot connect to the proxy under test at {shared.proxy_url} ({problem}); "
                "is it running, and is --proxy-url right?",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )

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
        if self.report_json:
            _write(self.report_json, json.dumps(render_json(summary), indent=2, ensure_ascii=False) + "\n")
        if self.report_md:
            _write(self.report_md, render_markdown(summary))

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if self.worker or not self.records:
            return
        from harness.report import render_text, summarize

        tr = terminalreporter
        tr.write_sep("=", "tool-call conformance")
        tr.write_line(render_text(summarize(self.records.values(), self.context())))
        if self.known is not None:
            for entry in self.known.unmatched(s.id for s in self.scenarios):
                tr.write_line(f"warning: {self.known.path}: {entry.describe()} matches no scenario")
        for label, path in (("JSON", self.report_json), ("Markdown", self.report_md)):
            if path:
                tr.write_line(f"{label} report written to {path}")

    def context(self) -> dict[str, Any]:
        shared = self.shared
        return {
            "proxy": shared.proxy_url if shared else None,
            "reference proxy": bool(shared and shared.embedded_proxy),
            "features": list(shared.features) if shared else [],
            "client profile": self.client_profile or "each scenario's own",
            "strict": self.strict,
            "rechunk": self.rechunk,
            "rechunk seed": shared.seed if shared and self.rechunk else None,
            "known failures": self.known.path if self.known else None,
        }

    # ------------------------------------------------------------------ reproduction

    def reproduce(self, scenario: Scenario, profile: Profile, attempt: Attempt) -> str:
        shared = self.shared
        assert shared is not None
        # A round of many exchanges is played by the run, not by replay: the item alone, again.
        round_ = attempt.kind == "isolation"
        args = ["toolcall-conformance", "run", "-k", scenario.id] if round_ else ["toolcall-conformance", "replay",
                                                                                 scenario.id]
        if not shared.embedded_proxy:
            args += ["--proxy-url", shared.proxy_url]
            if shared.mock_served:
                host, _, port = shared.mock_url.removeprefix("http://").rpartition(":")
                args += ["--mock-host", host, "--mock-port", port]
            else:
                args += ["--mock-url", shared.mock_url]
        for d in self.dirs:
            args += ["--scenarios", d]
        if profile != scenario.client.profile:
            args += ["--client-profile", profile]
        if attempt.kind in ("non-stream", "equivalence") and scenario.streams:
            args.append("--no-stream")
        if self.claimed is not None:
            args += ["--features", ",".join(sorted(self.claimed)) or ","]
        if self.strict:
            args.append("--strict")
        for model in self.models.as_options():
            args += ["--model", model]
        if self.timeout != DEFAULT_TIMEOUT:
            args += ["--timeout", f"{self.timeout:g}"]
        if attempt.variant is not None:
            args += ["--rechunk-seed", str(attempt.variant.seed), "--rechunk-variant", str(attempt.variant.index)]
        command = shlex.join(args)
        if self.proxy_headers:
            command += "  # plus your --proxy-header options"
        if attempt.shrunk is not None and attempt.shrunk.splits:
            command += "\nreproduce the smallest split: " + shlex.join(
                [*args, "--split", ",".join(map(str, attempt.shrunk.splits))])
        return command


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
            item = ScenarioItem.from_parent(self, name=scenario.id)
            item.scenario = scenario
            item.conformance = self.conformance
            item.add_marker("conformance")
            for name in dict.fromkeys((scenario.family, *scenario.tags)):
                item.add_marker(mark_name(name))
            yield item


class ItemFailed(ConformanceError):
    """An item broke rules no known-failure entry covers (or an entry went stale)."""

    def __init__(self, run: ScenarioRun, judgement: Judgement) -> None:
        self.run = run
        self.judgement = judgement
        super().__init__(f"{run.scenario.id}: {', '.join(run.failed_rules) or 'known failure no longer fails'}")


class ScenarioItem(pytest.Item):
    scenario: Scenario
    conformance: ConformanceSession
    record: ItemRecord | None = None

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path = Path(self.scenario.path) if self.scenario.path else self.path
        return path, None, f"{self.scenario.family}/{self.scenario.id}"

    def runtest(self) -> None:
        from harness.known_failures import judge
        from harness.profiles import choose_profile, feature_skip_reason, missing_features
        from harness.report import item_record
        from harness.runner import play

        session = self.conformance
        scenario = self.scenario
        settings = session.settings
        profile, skip = choose_profile(scenario, session.client_profile, settings.features)
        if skip is not None:
            self.record = item_record(scenario, profile, "skipped", reason=skip)
            pytest.skip(skip)
        notes = [
            f"upstream check {a.path} {a.op} not checked: {feature_skip_reason(missing, what='it')}"
            for a in scenario.expect.upstream
            if (missing := missing_features(a.requires, settings.features))
        ]
        try:
            run = play(scenario, settings=settings, mock=session.mock, profile=profile)
        except ProxyUnreachable as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc))
            if not session.reached:
                self.session.shouldstop = str(exc)
            raise
        except ConformanceError as exc:
            self.record = item_record(scenario, profile, "error", reason=str(exc))
            raise
        session.reached = True
        judgement = judge(scenario.id, run.failed_rules, session.known)
        self.record = item_record(scenario, profile, judgement.outcome, run=run,
                                  expected_rules=judgement.expected, notes=notes)
        for note in notes:
            self.user_properties.append(("conformance-note", note))
        if judgement.outcome == "xfailed":
            pytest.xfail(judgement.xfail_reason)
        if judgement.outcome == "failed":
            raise ItemFailed(run, judgement)

    def repr_failure(
        self, excinfo: ExceptionInfo[BaseException], style: Any = None
    ) -> str | TerminalRepr:
        exc = excinfo.value
        if isinstance(exc, ItemFailed):
            return self._render(exc)
        if isinstance(exc, ConformanceError):
            return f"{type(exc).__name__}: {exc}"
        return super().repr_failure(excinfo, style=style)

    def _render(self, exc: ItemFailed) -> str:
        session = self.conformance
        run, judgement = exc.run, exc.judgement
        known = {rule: entry.reason for rule, entry in judgement.expected.items()}
        from harness.report import render_failures

        text = ""
        if run.failures:
            notes = self.record.notes if self.record is not None else ()
            text = render_failures(run, reproduce=lambda a: session.reproduce(run.scenario, run.profile, a),
                                   known=known, notes=notes)
        if judgement.stale:
            path = session.known.path if session.known else "the known-failures file"
            text = (text + "\n\n" if text else "") + judgement.xpass_message(path)
        return text
