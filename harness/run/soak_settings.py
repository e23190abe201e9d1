"""What a soak was asked to play: the soak's options on Locust's command line (which the ``soak``
command fills in, and a master hands to its workers) and the settings read from them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.replay.fault_rate import FaultRate
from harness.core.scenario.loading import bundled_scenarios_dir, load_library
from harness.judge.rules import Options
from harness.judge.soak import ClientFaultRate, SoakCase, default_workload, soak_cases
from harness.run.settings import parse_features

if TYPE_CHECKING:
    from locust.env import Environment


def add_options(parser: Any) -> None:
    """The soak's own options, on Locust's command line (a master sends them to its workers)."""
    group = parser.add_argument_group("toolcall-conformance soak")
    group.add_argument("--mock-url", default="http://127.0.0.1:9100", help="The mock backend the proxy calls.")
    group.add_argument("--fault-rate", type=float, default=0.0, help="The mock's --fault-rate.")
    group.add_argument("--fault-seed", type=int, default=0, help="The mock's --fault-seed.")
    group.add_argument("--fault-stall", type=float, default=2.0, help="The mock's --fault-stall.")
    group.add_argument("--client-fault-rate", type=float, default=0.0,
                       help="Share of exchanges whose client hangs up mid-stream, reads slowly or sends its body "
                            "slowly (drawn from --fault-seed).")
    group.add_argument("--soak-scenarios", default="", help="Scenario ids, comma separated (default: the isolation "
                                                            "scenarios and one case of every other folder).")
    group.add_argument("--soak-features", default="", help="Optional features the proxy has (like --features).")
    group.add_argument("--frame-delay-ms", type=float, default=20.0,
                       help="Milliseconds the mock waits before each frame (a model's pace).")
    group.add_argument("--exchange-timeout", type=float, default=30.0, help="Seconds one exchange may take.")
    group.add_argument("--proxy-pid", type=int, default=0, help="Sample this process's RSS (Linux).")
    group.add_argument("--progress-every", type=float, default=5.0, help="Seconds between progress lines.")
    group.add_argument("--soak-duration", default="",
                       help="Stop after this long from the first user on (30s, 10m, 1h30m); unlike --run-time, the "
                            "time this file takes to load the library does not count.")
    group.add_argument("--soak-exchanges", type=int, default=0, help="Stop once this many exchanges were judged.")


@dataclass(frozen=True)
class Settings:
    """What one soak plays: against which proxy and mock, which cases, with which faults and rules."""

    proxy_url: str
    mock_url: str
    cases: tuple[SoakCase, ...]
    rate: FaultRate | None
    client_rate: ClientFaultRate | None
    seed: int
    options: dict[Profile, Options]
    timeout: float


def read_settings(environment: Environment) -> Settings:
    """The soak's settings from Locust's parsed options (the library read and the cases built here)."""
    opts = environment.parsed_options
    assert opts is not None, "the soak's settings come from Locust's command line"
    library = {s.id: s for s in load_library()}
    wanted = [i.strip() for i in str(getattr(opts, "soak_scenarios", "") or "").split(",") if i.strip()]
    unknown = [i for i in wanted if i not in library]
    if unknown:
        raise ValueError(f"--soak-scenarios: unknown scenario(s) {', '.join(unknown)}")
    chosen = [library[i] for i in wanted] or default_workload(library.values(), PurePath(bundled_scenarios_dir()))
    rate = FaultRate(opts.fault_rate, opts.fault_seed, opts.fault_stall) if opts.fault_rate > 0 else None
    client_fault_rate = float(getattr(opts, "client_fault_rate", 0.0) or 0.0)
    client_rate = ClientFaultRate(client_fault_rate, opts.fault_seed) if client_fault_rate > 0 else None
    features = parse_features([opts.soak_features])
    return Settings(
        proxy_url=str(environment.host or "").rstrip("/"),
        mock_url=str(opts.mock_url).rstrip("/"),
        cases=tuple(soak_cases(chosen, rate, opts.frame_delay_ms, client_faults=client_rate is not None)),
        rate=rate,
        client_rate=client_rate,
        seed=int(opts.fault_seed),
        # Each profile a case is written for (a soak plays each case under its own profile).
        options={p: Options(profile=p, features=features) for p in CLIENTS.values() if p.written_as is None},
        timeout=opts.exchange_timeout,
    )
