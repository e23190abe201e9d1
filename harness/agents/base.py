"""What every agent object provides, and what a run of one leaves behind."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.core.dialects import WireDialect


@dataclass(frozen=True)
class RunDirs:
    """A run's throwaway directories: HOME, the XDG dirs, the agent's own state, the working dir."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def xdg(self) -> dict[str, str]:
        names = {"XDG_CONFIG_HOME": "config", "XDG_DATA_HOME": "data", "XDG_CACHE_HOME": "cache",
                 "XDG_STATE_HOME": "state"}
        return {key: str(self.root / "xdg" / sub) for key, sub in names.items()}

    def make(self) -> None:
        for path in (self.home, self.work, *(Path(p) for p in self.xdg.values())):
            path.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Invocation:
    """How to start the agent: its argv, its whole environment and what it reads on stdin."""

    argv: Sequence[str]
    env: Mapping[str, str]
    stdin: str = ""


@dataclass(frozen=True)
class ToolRun:
    """One tool run the agent's event stream reports."""

    name: str
    call_id: str | None  # the call's id as the agent received it, when the stream shows it
    ok: bool  # it ran and ended without error
    exit_code: int | None  # the command's exit code, when the stream shows it
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Transcript:
    """What an agent's JSON event stream says happened."""

    tool_runs: tuple[ToolRun, ...]
    final_text: str | None
    problems: tuple[str, ...] = ()  # lines that were not JSON events, or error events that end a run


class Agent(Protocol):
    """One coding agent: how to install and run it, the dialect it speaks and its tools."""

    id: str  # "claude-code", "codex", "opencode"
    title: str
    client_dialect: WireDialect  # the API it calls
    upstreams: tuple[WireDialect, ...]  # the upstream dialects it is played against
    tool: str  # its own tool that runs a shell command

    def arguments(self, command: str) -> dict[str, Any]:
        """The call's arguments that make its tool run ``command``."""
        ...

    def invocation(self, binary: Path, dirs: RunDirs, base_url: str, prompt: str, cache: Path) -> Invocation:
        """How to run it offline and hermetically against ``base_url`` (the proxy's root, no ``/v1``);
        writes any config file it needs under ``dirs``."""
        ...

    def read_events(self, stdout: str) -> Transcript:
        """The tool runs and final text its JSON event stream reports."""
        ...


def json_events(stdout: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSON objects of a JSON-lines stream, and the lines that were not."""
    events: list[dict[str, Any]] = []
    other: list[str] = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            other.append(line)
            continue
        if isinstance(event, dict):
            events.append(event)
        else:
            other.append(line)
    return events, other


BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


def base_env(dirs: RunDirs, path: str) -> dict[str, str]:
    """The environment every agent starts from: nothing of the caller's but PATH."""
    return {"PATH": path, "HOME": str(dirs.home), "TERM": "dumb", "LANG": "C.UTF-8", **dirs.xdg}
