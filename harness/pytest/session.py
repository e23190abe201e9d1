"""One pytest run's conformance state: the options checked once, the servers it starts (or the URLs an
xdist worker is handed), the header, the preflight, and the score card and reports at the end."""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.core.dialects import DIALECTS, WireDialect, dialect_choices
from harness.core.dialects.clients import CLIENTS
from harness.core.errors import ConformanceError
from harness.core.redact import Redactor
from harness.run.options import ALL_PROFILES, BY_NAME, DEFAULT_TIMEOUT

if TYPE_CHECKING:

    from harness.core.dialects.clients import Profile
    from harness.core.scenario.model import Scenario
    from harness.report.known_failures import KnownFailures
    from harness.report.summary import ItemRecord
    from harness.run.embedded import EmbeddedServers
    from harness.run.settings import ModelChoice, RunSettings
    from mock_backends.control import MockControl

WORKER_KEY = "toolcall_conformance"
SAMPLE = 64  # the default run plays each real client on about one case in SAMPLE (of those meaningful to it)
SESSION_PLUGIN = "toolcall-conformance-session"


def opt_value(config: pytest.Config, name: str) -> Any:
    return config.getoption(BY_NAME[name].dest)


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

    def proxy_for(self, upstream: WireDialect | None) -> str:
        """The proxy that plays an item whose backend is served in ``upstream`` (None: its own)."""
        return self.proxy_urls.get(upstream.name if upstream else "native") or self.proxy_urls.get("native") or self.proxy_url


def usage_error(message: str) -> pytest.UsageError:
    return pytest.UsageError(message)


class ConformanceSession:
    """The plugin's state for one pytest run (registered only when active)."""

    def __init__(self, config: pytest.Config) -> None:
        from harness.core.dialects.profiles import parse_profile
        from harness.core.scenario.loading import bundled_scenarios_dir, validate_paths
        from harness.core.scenario.model import FEATURES
        from harness.report.known_failures import load_known_failures
        from harness.report.summary import rules_by_id
        from harness.run.settings import parse_features, parse_headers, parse_models

        self.config = config

        def opt(name: str) -> Any:
            return opt_value(config, name)

        self.only = bool(config.getoption("conformance_only"))
        self.user_proxy_url: str | None = (opt("proxy-url") or "").rstrip("/") or None
        self.user_mock_url: str | None = (opt("mock-url") or "").rstrip("/") or None
        self.mock_host: str = opt("mock-host")
        self.mock_port: int = opt("mock-port")
        self.dirs: list[str] = list(opt("scenarios"))
        self.timeout: float = opt("timeout") or DEFAULT_TIMEOUT
        self.rechunk: int = opt("rechunk")
        from harness.generate.coverage import parse_formats

        self.formats = parse_formats(opt("formats"))
        mode = opt("upstream-dialect") or ("natural" if self.user_proxy_url else "all")
        if mode == "all" and self.user_proxy_url:
            raise usage_error("--conformance-upstream-dialect all plays the bundled reference proxies; a proxy under test "
                              f"calls one upstream dialect: name it ({dialect_choices('or')}), or natural")
        self.upstream_mode: str = mode
        # The upstream dialect of each item of a scenario (None: the scenario's own).
        self.upstreams: tuple[WireDialect | None, ...] = (
            (None,) if mode == "natural" else tuple(DIALECTS.values()) if mode == "all" else (DIALECTS[mode],))
        self.strict = bool(opt("strict"))
        self.strict_upstream = bool(opt("strict-upstream"))
        try:
            profile = opt("client-profile")
            self.all_profiles = profile == ALL_PROFILES
            self.client_profile: Profile | None = parse_profile(profile) if profile and not self.all_profiles else None
            self.models: ModelChoice = parse_models(opt("model"))
            self.proxy_headers = parse_headers(opt("proxy-header"))
        except ValueError as exc:
            raise usage_error(str(exc)) from exc
        self.redactor = Redactor.for_headers(self.proxy_headers)  # all the run writes or prints goes through it
        self.claimed = parse_features(opt("features")) if opt("features") else None
        if self.claimed is not None:
            unknown = sorted(self.claimed - set(FEATURES))
            if unknown:
                raise usage_error(f"--features: unknown feature(s) {', '.join(unknown)} (known: {', '.join(FEATURES)})")
        if self.timeout <= 0:
            raise usage_error("--timeout must be a positive number of seconds")
        if self.rechunk < 0:
            raise usage_error("--rechunk must be 0 or more")
        scenarios, problems = validate_paths(self.dirs or [bundled_scenarios_dir()])
        if problems:
            raise usage_error("invalid scenarios:\n" + "\n".join(map(str, problems)))
        self.scenarios: list[Scenario] = scenarios
        self.known: KnownFailures | None = None
        self.write_known: str | None = opt("write-known-failures")
        self.update_known: str | None = opt("update-known-failures")
        expect = opt("expect-failures")
        if self.update_known and expect and Path(expect).resolve() != Path(self.update_known).resolve():
            raise usage_error("--update-known-failures FILE reads FILE as the known failures: leave out --expect-failures "
                         f"{expect}, or name the same file")
        if self.update_known or expect:
            try:
                self.known = load_known_failures(self.update_known or expect, known_rules=set(rules_by_id()))
            except ConformanceError as exc:
                raise usage_error(str(exc)) from exc
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
        from harness.run.health import Health

        self.health = Health()  # this process's view of the proxy between scenarios
        self.worker = hasattr(config, "workerinput")

    # ------------------------------------------------------------------ servers

    def start(self) -> None:
        from harness.run.embedded import EmbeddedServers

        if self.worker:
            data = getattr(self.config, "workerinput", {}).get(WORKER_KEY)
            if data is None:
                raise usage_error("toolcall-conformance: this xdist worker got no server URLs from the controller")
            self.shared = Shared.from_json(data)
            return
        seed = opt_value(self.config, "rechunk-seed")
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
        proxies = ("native",) if self.upstream_mode == "natural" else tuple(u.name for u in self.upstreams if u)
        self.embedded = EmbeddedServers(
            mock_host=self.mock_host, mock_port=self.mock_port, with_proxy=embedded_proxy, mock_url=self.user_mock_url,
            upstream_dialects=proxies,
        )
        try:
            urls = self.embedded.start()
        except ConformanceError as exc:
            raise usage_error(str(exc)) from exc
        proxy_url = urls.proxy_url if embedded_proxy else self.user_proxy_url
        assert proxy_url is not None
        self.shared = Shared(proxy_url, urls.mock_url, self._features(urls.proxy_features), seed, embedded_proxy,
                             self.user_mock_url is None, dict(urls.proxy_urls))

    def _features(self, proxy_default: frozenset[str]) -> tuple[str, ...]:
        """The features the run claims: ``--features`` (else the reference proxy's, or
        none), plus what an explicit ``--client-profile`` implies."""
        from harness.run.settings import with_profile_features

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
        from harness.run.settings import RunSettings

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

    def real_clients(self, scenario: Scenario) -> tuple[Profile, ...]:
        """The real clients that play ``scenario`` besides its own profile: none with an explicit
        ``--client-profile``; every one whose cases it is among with ``--client-profile all``; in
        the bundled run of every pair, each on a fixed part of the library (one case in ``SAMPLE``,
        chosen by a hash of the client's and the case's names), so the default run tries every
        client within its time; none otherwise."""
        if self.client_profile is not None:
            return ()
        meaningful = tuple(p for p in CLIENTS.values() if p.real and p.case_profile in scenario.client.profiles)
        if self.all_profiles:
            return meaningful
        if self.upstream_mode != "all":
            return ()
        return tuple(p for p in meaningful if zlib.crc32(f"{p.name}:{scenario.id}".encode()) % SAMPLE == 0)

    def requested_profile(self, scenario: Scenario, upstream: WireDialect | None, features: frozenset[str]) -> Profile | None:
        """The client profile an item asks for: the user's; else, in the bundled run's pass in
        front of a Responses upstream, a Responses client for each case a chat-completions
        client asks (so that pass covers Responses as client and as upstream at once); else
        each scenario's own (None)."""
        from harness.core.dialects.profiles import choose_profile

        if self.client_profile is not None or self.upstream_mode != "all":
            return self.client_profile
        # A client of the upstream's API that says this case's request in its own words.
        translating = next((p for p in CLIENTS.values()
                            if p.answers is upstream and p.written_as is scenario.client.profile and not p.real),
                           None)
        if translating is None or choose_profile(scenario, translating, features)[1] is not None:
            return None
        return translating

    def pairs_label(self) -> str:
        """The dialect pairs the run plays, as the header and report name them."""
        if self.upstream_mode == "all":
            translating = "".join(f", and a {p.name} client for the {p.written_as.answers.short_name} cases in front "
                                  f"of the {p.answers.name} upstream" for p in CLIENTS.values()
                                  if p.written_as and not p.real)
            return f"every pair ({dialect_choices('and')} upstreams; each scenario's client dialect{translating})"
        if self.upstream_mode == "natural":
            return "each scenario's own (natural)"
        return self.upstream_mode

    def context(self) -> dict[str, Any]:
        shared = self.shared
        return {
            "proxy": self.redactor.url(shared.proxy_url) if shared else None,
            "upstream dialect": self.pairs_label(),
            "formats": sorted(self.formats) if self.formats is not None else "every format",
            "reference proxy": bool(shared and shared.embedded_proxy),
            "features": list(shared.features) if shared else [],
            "client profile": self.client_profile.name if self.client_profile is not None else "each scenario's own",
            "strict": self.strict,
            "rechunk": self.rechunk,
            "rechunk seed": shared.seed if shared and self.rechunk else None,
            "known failures": self.known.path if self.known else None,
        }


def _local(url: str) -> str:
    """Where this process reaches a server bound to every interface."""
    return url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
