"""Putting the pinned agents in a cache folder with npm; an agent that cannot be installed
is skipped with the reason, never failed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

INSTALL_TIMEOUT = 900.0


@dataclass(frozen=True)
class Pin:
    agent: str
    package: str
    version: str
    bin: str
    config_packages: tuple[str, ...] = ()

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


def pins() -> dict[str, Pin]:
    """The pinned versions (``harness/agents/pins.json``)."""
    data: dict[str, Any] = json.loads(resources.files("harness.agents").joinpath("pins.json").read_text("utf-8"))
    return {name: Pin(name, p["package"], p["version"], p["bin"], tuple(p.get("config_packages", ())))
            for name, p in data.items()}


def default_cache() -> Path:
    found = os.environ.get("TOOLCALL_AGENTS_CACHE")
    return Path(found) if found else Path.home() / ".cache" / "toolcall-conformance" / "agents"


@dataclass(frozen=True)
class Installed:
    binary: Path | None  # None: skipped
    reason: str = ""  # why it was skipped


def installed_version(cache: Path, pin: Pin) -> str | None:
    try:
        data = json.loads((cache / "node_modules" / pin.package / "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) else None


def _npm(args: list[str]) -> str | None:
    """Runs npm; the reason it failed, or None."""
    npm = shutil.which("npm")
    if npm is None:
        return "npm is not installed (the agents are npm packages; install node and npm)"
    try:
        done = subprocess.run([npm, *args], capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm {' '.join(args)} failed: {exc}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return f"npm {' '.join(args)} exited {done.returncode}: " + " | ".join(tail)
    return None


def install(pin: Pin, cache: Path, *, allow_download: bool = True) -> Installed:
    """The agent's binary in ``cache``, installed with npm at its pinned version if it is not there."""
    binary = cache / "node_modules" / ".bin" / pin.bin
    if installed_version(cache, pin) != pin.version or not binary.exists():
        if not allow_download:
            return Installed(None, f"{pin.spec} is not installed in {cache}")
        cache.mkdir(parents=True, exist_ok=True)
        problem = _npm(["install", "--no-audit", "--no-fund", "--prefix", str(cache), pin.spec])
        if problem is not None:
            return Installed(None, problem)
        if installed_version(cache, pin) != pin.version or not binary.exists():
            return Installed(None, f"npm installed {pin.spec} but {binary} is missing")
    if pin.config_packages:
        template = cache / f"{pin.agent}-config"
        if not all((template / "node_modules" / _name(p)).is_dir() for p in pin.config_packages):
            if not allow_download:
                return Installed(None, f"{', '.join(pin.config_packages)} not installed in {template}")
            problem = _npm(["install", "--no-audit", "--no-fund", "--prefix", str(template), *pin.config_packages])
            if problem is not None:
                return Installed(None, problem)
    return Installed(binary)


def _name(spec: str) -> str:
    """``@scope/name@1.2`` -> ``@scope/name``."""
    at = spec.rfind("@")
    return spec[:at] if at > 0 else spec
