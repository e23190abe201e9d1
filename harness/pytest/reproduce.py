"""The command a failure prints to replay one exchange, written from the option table and the run's
settings (``harness.run.options``), so it takes exactly the options the run was given."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from harness.run.options import replay_args
from harness.run.program import program

if TYPE_CHECKING:
    from harness.core.dialects import WireDialect
    from harness.core.dialects.clients import Profile
    from harness.core.dialects.servers import ServerProfile
    from harness.core.records import Attempt
    from harness.core.scenario.model import Scenario
    from harness.pytest.session import ConformanceSession


def replay_command(session: ConformanceSession, scenario: Scenario, profile: Profile, attempt: Attempt,
                   upstream: WireDialect | None = None, server: ServerProfile | None = None, *,
                   by_path: bool = False) -> str:
    """The replay command for one exchange, written from the option table; ``by_path``
    names the scenario by its file (shorter than its id and the run's ``--scenarios``)."""
    shared = session.shared
    assert shared is not None
    path = shown_path(scenario.path) if by_path and scenario.path and attempt.kind != "isolation" else None
    values: dict[str, Any] = {"scenarios": [] if path else session.run.scenarios, "strict": session.run.strict,
                              "model": session.run.model.as_options(), "timeout": session.run.timeout,
                              "strict-upstream": session.run.strict_upstream}
    if not shared.embedded_proxy:
        values["proxy-url"] = shared.proxy_url
        if shared.mock_served:
            host, _, port = shared.mock_url.removeprefix("http://").rpartition(":")
            values.update({"mock-host": host, "mock-port": int(port)})
        else:
            values["mock-url"] = shared.mock_url
    if profile is not scenario.client.profile:
        values["client-profile"] = profile.name
    if upstream is None and shared.embedded_proxy and scenario.backend.dialect is not profile.answers:
        upstream = scenario.backend.dialect  # the bundled proxy that calls the case's own API, not the client's
    if upstream is not None:
        values["upstream-dialect"] = upstream.name
    if server is not None:
        values["upstream-profile"] = server.name
    if session.run.features is not None:
        values["features"] = [",".join(sorted(session.run.features)) or ","]
    if attempt.variant is not None:
        values["rechunk-seed"] = attempt.variant.seed
    # A round of many exchanges is played by the run, not by replay: the item alone, again.
    if attempt.kind == "isolation":
        args = [*program(), "run", "-k", scenario.id, *replay_args(values)]
    else:
        args = [*program(), "replay", path or scenario.id, *replay_args(values)]
    if attempt.kind in ("non-stream", "equivalence") and scenario.streams:
        args.append("--no-stream")
    if attempt.variant is not None:
        args += ["--rechunk-variant", str(attempt.variant.index)]
    command = shlex.join(args)
    if session.run.proxy_header:
        command += "  # plus your --proxy-header options"
    if attempt.shrunk is not None and attempt.shrunk.splits:
        command += "\nreproduce the smallest split: " + shlex.join(
            [*args, "--split", ",".join(map(str, attempt.shrunk.splits))])
    return command


def shown_path(path: str) -> str:
    """A scenario file as the user's shell reaches it: relative to the current folder when under it."""
    from pathlib import Path

    target = Path(path).resolve()
    try:
        return str(target.relative_to(Path.cwd()))
    except ValueError:
        return str(target)
