"""One pytest run's conformance state: the options checked once, the servers it starts (or the URLs an
xdist worker is handed), the header, the preflight, and the score card and reports at the end."""

from __future__ import annotations

import dataclasses
import random
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness.core.dialects import WireDialect, dialect_choices
from harness.core.dialects.clients import CLIENTS, DEFAULT_PROFILE, Profile
from harness.core.dialects.profiles import choose_profile
from harness.core.dialects.script import spread
from harness.core.errors import ConformanceError
from harness.core.redact import Redactor
from harness.core.dialects.servers import ServerProfile
from harness.core.scenario.loading import bundled_scenarios_dir, validate_paths
from harness.core.scenario.model import Scenario
from harness.report.known_failures import KnownFailures, load_known_failures
from harness.report.summary import ItemRecord, rules_by_id
from harness.run.config import RunConfig
from harness.run.embedded import EmbeddedServers, bundled_proxy_features
from harness.run.health import Health, is_probe
from harness.run.options import OPTIONS
from harness.run.recorder import RecorderConfig
from harness.run.settings import RunSettings, with_profile_features
from mock_backends.control import Control, MockControl

WORKER_KEY = "toolcall_conformance"
SAMPLE = 64  # the default run plays each real client on about one case in SAMPLE (of those meaningful to it)
SESSION_PLUGIN = "toolcall-conformance-session"
SERVER_SAMPLE = 3  # cases each real server's profile plays in a default run of the bundled library


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
    upstream_url: str = ""  # where a proxy calls upstream when it is not the mock (the recorder of --recordings)
    # Each xdist worker serves its own mock and reference proxies (the URLs above are then
    # placeholders): servers in the controller would play every worker's exchanges under one
    # interpreter lock, and the run would wait on it.
    per_worker: bool = False

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Shared:
        return cls(data["proxy_url"], data["mock_url"], tuple(data["features"]), int(data["seed"]),
                   bool(data["embedded_proxy"]), bool(data["mock_served"]), dict(data.get("proxy_urls") or {}),
                   str(data.get("upstream_url") or ""), bool(data.get("per_worker")))

    def proxy_for(self, upstream: WireDialect | None) -> str:
        """The proxy that plays an item whose backend is served in ``upstream`` (None: its own)."""
        return self.proxy_urls.get(upstream.name if upstream else "native") or self.proxy_urls.get("native") or self.proxy_url


def usage_error(message: str) -> pytest.UsageError:
    return pytest.UsageError(message)


class ConformanceSession:
    """The plugin's state for one pytest run (registered only when active)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.only = bool(config.getoption("conformance_only"))
        try:
            self.run = RunConfig.from_values({o.name: config.getoption(o.dest) for o in OPTIONS if o.pytest})
            self.servers, self.server_sample = parse_servers(self.run.upstream_profile, bundled=not self.run.scenarios)
        except ValueError as exc:
            raise usage_error(str(exc)) from exc
        self.redactor = Redactor.for_headers(self.run.proxy_header)  # all the run writes or prints goes through it
        self.worker = hasattr(config, "workerinput")
        # A worker reads the files its controller has just checked (the run stopped there on any problem).
        scenarios, problems = validate_paths(self.run.scenarios or [bundled_scenarios_dir()], checked=self.worker)
        if problems:
            raise usage_error("invalid scenarios:\n" + "\n".join(map(str, problems)))
        self.scenarios: list[Scenario] = scenarios
        self.known: KnownFailures | None = None
        known = self.run.update_known_failures or self.run.expect_failures
        if known:
            try:
                self.known = load_known_failures(known, known_rules=set(rules_by_id()))
            except ConformanceError as exc:
                raise usage_error(str(exc)) from exc
        self.known_note: list[str] = []  # what writing the known-failures file did, for the summary
        self.stale_known: list[int] = []  # known-failure entries (by number) that pass now
        # pytest's default --tb: failures are shown grouped by cause (any other style shows each on its own)
        self.grouped = config.getoption("tbstyle", "auto") == "auto"
        self.embedded: EmbeddedServers | None = None
        self.shared: Shared | None = None
        self._mock: Control | None = None
        self.records: dict[str, ItemRecord] = {}
        self.reached = False  # some item got an answer from the proxy
        self.implied: frozenset[str] = frozenset()  # features claimed only through --client-profile
        self.health = Health()  # this process's view of the proxy between scenarios

    # ------------------------------------------------------------------ servers

    def start(self) -> None:
        if self.worker:
            data = getattr(self.config, "workerinput", {}).get(WORKER_KEY)
            if data is None:
                raise usage_error("toolcall-conformance: this xdist worker got no server URLs from the controller")
            self.shared = Shared.from_json(data)
            if self.shared.per_worker:
                self.shared = self._serve(self.shared)
            return
        seed = self.run.rechunk_seed
        if seed is None:
            seed = random.SystemRandom().randrange(1, 1_000_000)
        user_proxy, user_mock = self.run.proxy_url, self.run.mock_url
        embedded_proxy = user_proxy is None
        if self.config.option.collectonly:  # nothing will run: start nothing
            idle = "(not started under --collect-only)"
            self.shared = Shared(user_proxy or idle, user_mock or idle, self._features(frozenset()),
                                 seed, embedded_proxy, False)
            return
        if user_mock is not None and not embedded_proxy:
            if self.run.recordings:
                raise usage_error("--conformance-recordings puts a recorder in front of the mock this run serves; "
                                  "with --conformance-mock-url the mock is not the run's: drop one of them")
            self.shared = Shared(user_proxy or "", user_mock, self._features(frozenset()),
                                 seed, False, False)
            return
        if embedded_proxy and user_mock is None and self._per_worker():
            where = "(one in each xdist worker)"
            self.shared = Shared(where, where, self._features(bundled_proxy_features()), seed, True, True,
                                 per_worker=True)
            return
        recordings = self.run.recordings
        self.embedded = EmbeddedServers(
            mock_host=self.run.mock_host, mock_port=self.run.mock_port, with_proxy=embedded_proxy, mock_url=user_mock,
            upstream_dialects=self._proxies(), recorder=self._recorder(recordings) if recordings else None,
        )
        try:
            urls = self.embedded.start()
        except ConformanceError as exc:
            raise usage_error(str(exc)) from exc
        proxy_url = urls.proxy_url if embedded_proxy else user_proxy
        assert proxy_url is not None
        self.shared = Shared(proxy_url, urls.mock_url, self._features(urls.proxy_features), seed, embedded_proxy,
                             user_mock is None, dict(urls.proxy_urls),
                             urls.upstream_url if recordings else "")

    def _proxies(self) -> tuple[str, ...]:
        """The bundled reference proxies the run needs, by the upstream dialect each calls."""
        mode = self.run.upstream_dialect
        return ("native",) if mode == "natural" else tuple(u.name for u in self.run.upstreams if u)

    def _per_worker(self) -> bool:
        """Whether xdist workers will play the run and nothing outside it needs to find the
        servers: no fixed --mock-port (a proxy of the user's would call it), no recorder."""
        option = self.config.option
        workers = getattr(option, "dist", "no") != "no" and bool(getattr(option, "numprocesses", None)
                                                                 or getattr(option, "tx", None))
        return workers and not self.run.mock_port and not self.run.recordings

    def _serve(self, shared: Shared) -> Shared:
        """A worker's own mock backend and reference proxies, on free loopback ports."""
        self.embedded = EmbeddedServers(upstream_dialects=self._proxies())
        try:
            urls = self.embedded.start()
        except ConformanceError as exc:
            raise usage_error(str(exc)) from exc
        assert urls.proxy_url is not None
        return dataclasses.replace(shared, proxy_url=urls.proxy_url, mock_url=urls.mock_url,
                                   proxy_urls=dict(urls.proxy_urls))

    def _recorder(self, folder: str) -> RecorderConfig:
        """The recorder between the bundled proxies and the mock: a matched request goes on to
        the mock (which serves the case), one no recording matches is refused under ``none``."""
        return RecorderConfig(out=Path(folder), mode=self.run.record_mode or "none",
                              replay_upstream=True, passes=is_probe)

    def _features(self, proxy_default: frozenset[str]) -> tuple[str, ...]:
        """The features the run claims: ``--features`` (else the reference proxy's, or
        none), plus what an explicit ``--client-profile`` implies."""
        base = self.run.features if self.run.features is not None else proxy_default
        features = with_profile_features(base, self.run.client_profile)
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
    def mock(self) -> Control:
        if self._mock is None:
            assert self.shared is not None
            # The mock this process serves is armed on its registry; another process's over HTTP.
            self._mock = (self.embedded.control() if self.embedded is not None
                          else MockControl(_local(self.shared.mock_url)))
        return self._mock

    @property
    def settings(self) -> RunSettings:
        assert self.shared is not None
        return RunSettings(
            proxy_url=self.shared.proxy_url,
            features=frozenset(self.shared.features),
            strict=self.run.strict,
            timeout=self.run.timeout,
            models=self.run.model,
            proxy_headers=self.run.proxy_header,
            rechunk=self.run.rechunk,
            seed=self.shared.seed,
        )

    def real_clients(self, scenario: Scenario) -> tuple[Profile, ...]:
        """The real clients that play ``scenario`` besides its own profile: none with an explicit
        ``--client-profile``; every one whose cases it is among with ``--client-profile all``; in
        the bundled run of every pair, each on a fixed part of the library (one case in ``SAMPLE``,
        chosen by a hash of the client's and the case's names), so the default run tries every
        client within its time; none otherwise."""
        if self.run.client_profile is not None:
            return ()
        meaningful = tuple(p for p in CLIENTS.values() if p.real and p.case_profile in scenario.client.profiles)
        if self.run.all_client_profiles:
            return meaningful
        if not self.run.every_pair:
            return ()
        return tuple(p for p in meaningful if zlib.crc32(f"{p.name}:{scenario.id}".encode()) % SAMPLE == 0)

    def requested_profile(self, scenario: Scenario, upstream: WireDialect | None, features: frozenset[str]) -> Profile | None:
        """The client profile an item asks for: the user's; else, in the bundled run's pass in
        front of a Responses upstream, a Responses client for each case a chat-completions
        client asks (so that pass covers Responses as client and as upstream at once); else
        each scenario's own (None)."""
        if self.run.client_profile is not None or not self.run.every_pair:
            return self.run.client_profile
        # A client of the upstream's API that says this case's request in its own words.
        translating = next((p for p in CLIENTS.values()
                            if p.answers is upstream and p.written_as is scenario.client.profile and not p.real),
                           None)
        if translating is None or choose_profile(scenario, translating, features)[1] is not None:
            return None
        return translating

    def upstreams_for(self, scenario: Scenario) -> tuple[WireDialect | None, ...]:
        """The upstream dialects ``scenario`` is played in (None: its own)."""
        return spread(scenario) if self.run.upstream_dialect == "spread" else self.run.upstreams

    def server_items(self) -> list[tuple[Scenario, WireDialect | None, ServerProfile]]:
        """The items played under a real server's profile: every playable pair under each chosen
        server, or (the default) a sample of ``SERVER_SAMPLE`` per server, the same in every run:
        pairs in the scenario's own dialect, one of them with native calls when there is one."""
        from harness.core.dialects.frames import ToolCallFrame, ToolUseFrame
        from harness.core.dialects.servers import rank
        from harness.core.replay.servers import playable
        from harness.run.isolation import wants_round

        out: list[tuple[Scenario, WireDialect | None, ServerProfile]] = []
        for srv in self.servers:
            pairs = [(s, u) for s in self.scenarios for u in self.run.upstreams
                     if srv.serves(u or s.backend.dialect) and playable(s, u or s.backend.dialect)
                     and not wants_round(s)]
            if self.server_sample:
                own = sorted(((s, u) for s, u in pairs if u in (None, s.backend.dialect) and not s.spec_only
                              and not s.requires and not s.rescues), key=lambda p: rank(srv, p[0].id))
                calls = [p for p in own if any(isinstance(f, (ToolCallFrame, ToolUseFrame)) for f in p[0].backend.frames)]
                chosen = calls[:1]
                chosen += [p for p in own if p not in chosen][: SERVER_SAMPLE - len(chosen)]
                pairs = chosen
            out.extend((s, u, srv) for s, u in pairs)
        return out

    def pairs_label(self) -> str:
        """The dialect pairs the run plays, as the header and report name them."""
        mode = self.run.upstream_dialect
        if self.run.every_pair:
            translating = "".join(f", and a {p.name} client for the {p.written_as.answers.short_name} cases in front "
                                  f"of the {p.answers.name} upstream" for p in CLIENTS.values()
                                  if p.written_as and not p.real)
            pairs = f"every pair ({dialect_choices('and')} upstreams; each scenario's client dialect{translating})"
            if mode == "spread":
                return (f"{pairs}, spread: each scenario in its own dialect and one other, chosen from its id "
                        "(--upstream-dialect all plays each in every one)")
            return pairs
        if mode == "natural":
            return "each scenario's own (natural)"
        return mode

    def profile_label(self) -> str:
        """The client profile the run plays, as the header and reports name it: a proxy under
        test is taken to serve the default profile's clients unless told otherwise."""
        if self.run.client_profile is not None:
            return self.run.client_profile.name
        if self.run.proxy_url:
            return f"{DEFAULT_PROFILE.name} (the default for --proxy-url; other clients' scenarios skipped)"
        return "each scenario's own"

    def context(self) -> dict[str, Any]:
        shared = self.shared
        return {
            "proxy": self.redactor.url(shared.proxy_url) if shared else None,
            "upstream dialect": self.pairs_label(),
            "formats": sorted(self.run.formats) if self.run.formats is not None else "every format",
            "reference proxy": bool(shared and shared.embedded_proxy),
            "features": list(shared.features) if shared else [],
            "client profile": self.profile_label(),
            "strict": self.run.strict,
            "rechunk": self.run.rechunk,
            "upstream profiles": (", ".join(s.name for s in self.servers) + (" (a sample of cases each)" if self.server_sample else ""))
            or "none",
            "rechunk seed": shared.seed if shared and self.run.rechunk else None,
            "known failures": self.known.path if self.known else None,
        }


def parse_servers(value: str | None, *, bundled: bool) -> tuple[tuple[ServerProfile, ...], bool]:
    """``--upstream-profile``: the servers whose habits the run plays, and whether only on a sample
    (the default, for the bundled library; none for a run of other scenarios)."""
    from harness.core.dialects.servers import SERVERS, server

    if value is None or not value.strip():
        return (tuple(SERVERS.values()), True) if bundled else ((), False)
    if value.strip() == "all":
        return tuple(SERVERS.values()), False
    if value.strip() == "none":
        return (), False
    return tuple(dict.fromkeys(server(name.strip()) for name in value.split(",") if name.strip())), False


def _local(url: str) -> str:
    """Where this process reaches a server bound to every interface."""
    return url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")
