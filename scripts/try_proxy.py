#!/usr/bin/env python3
"""Try the conformance suite on a real proxy installed from its registry, in a throwaway environment.

    python3 scripts/try_proxy.py litellm [--workdir /tmp/try-litellm] [--pair openai:openai]
    python3 scripts/try_proxy.py claude-code-router [--workdir /tmp/try-ccr] [--pair anthropic:responses]
    python3 scripts/try_proxy.py litellm --version 1.108.7    # a pinned release

Each proxy is installed in its own folder under --workdir (a venv for LiteLLM from PyPI, an
npm prefix for claude-code-router), configured with models whose upstream is the suite's mock
backend (OpenAI-compatible; for LiteLLM also an Anthropic Messages upstream, its anthropic/
provider; for claude-code-router also a Messages and a Responses upstream, through its
transformers), started on loopback, and the suite is run against it once per dialect pair the
proxy serves (``--pair client:upstream`` picks some). Nothing is added to this project's dependencies: the
suite itself is the one installed in the project's .venv (``pip install -e .``).

Per trial the script writes ``<workdir>/<pair>.json`` (the suite's JSON report) and
``<workdir>/<pair>.out`` (its console output), prints a Markdown summary (counts and every
failing rule with its scenarios; the source of docs/compatibility.md), and stops every process
it started. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / ".venv" / "bin" / "toolcall-conformance"
MASTER_KEY = "sk-conformance-local-key-0123456789"  # LiteLLM refuses to start without a master key
MODEL = "qwen3-coder-30b-a3b-instruct"
# Routed by LiteLLM to its anthropic/ provider, whose API base is the mock. Not a real model's name: the
# Anthropic client's cases name real Claude models, and those must reach the "*" (OpenAI upstream) entry.
ANTHROPIC_MODEL = "conformance-messages-upstream"


@dataclass(frozen=True)
class Trial:
    """One run of the suite: what the proxy's clients speak, what it calls, extra run options."""

    client: str
    upstream: str
    options: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.client}-to-{self.upstream}"


@dataclass(frozen=True)
class Proxy:
    install: Callable[[Path, str], None]
    start: Callable[[Path, int, int], subprocess.Popen[bytes]]
    trials: tuple[Trial, ...]
    version: Callable[[Path], str]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(cmd: Sequence[str], **kw: object) -> None:
    print("+", " ".join(cmd), file=sys.stderr)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def spawn(cmd: Sequence[str], log: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.Popen[bytes]:
    print("+", " ".join(cmd), f"> {log}", file=sys.stderr)
    with log.open("wb") as out:
        return subprocess.Popen(["nice", "-n", "5", *cmd], stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                start_new_session=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a process started here and its children (its own process group)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# ---------------------------------------------------------------------------------------------- LiteLLM

def litellm_install(work: Path, version: str) -> None:
    env = work / "env"
    if not (env / "bin" / "litellm").exists():
        run([sys.executable, "-m", "venv", str(env)])
        run([str(env / "bin" / "pip"), "install", "-q", f"litellm[proxy]=={version}" if version else "litellm[proxy]"])


def litellm_start(work: Path, port: int, mock_port: int) -> subprocess.Popen[bytes]:
    config = work / "config.yaml"
    config.write_text(
        "model_list:\n"
        # An Anthropic upstream: the suite asks for this model name (--model) in the trials that use it.
        f'  - model_name: "{ANTHROPIC_MODEL}"\n'
        "    litellm_params:\n"
        f'      model: "anthropic/{ANTHROPIC_MODEL}"\n'
        f'      api_base: "http://127.0.0.1:{mock_port}"\n'
        '      api_key: "sk-ant-mock"\n'
        '  - model_name: "*"\n'
        "    litellm_params:\n"
        '      model: "openai/*"\n'
        f'      api_base: "http://127.0.0.1:{mock_port}/v1"\n'
        '      api_key: "sk-mock"\n'
        # /v1/messages in front of an openai/ model calls the Responses API unless told to use chat/completions
        "litellm_settings:\n"
        "  use_chat_completions_url_for_anthropic_messages: true\n"
        # The router would cool a deployment down after the fault cases (a 401, a 429 ...) and answer 429
        # to every later case: each case is judged on its own instead.
        "router_settings:\n"
        "  disable_cooldowns: true\n"
        "general_settings:\n"
        f'  master_key: "{MASTER_KEY}"\n'
    )
    # Offline: no tokenizer download from the Hugging Face hub (it blocks a request for ~25 s per model
    # name without network), and the bundled model cost map instead of fetching it.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return spawn([str(work / "env" / "bin" / "litellm"), "--config", str(config), "--host", "127.0.0.1",
                  "--port", str(port)], work / "proxy.log", env=env)


def litellm_version(work: Path) -> str:
    out = subprocess.run([str(work / "env" / "bin" / "pip"), "show", "litellm"], capture_output=True, text=True)
    return next((line.split(":", 1)[1].strip() for line in out.stdout.splitlines() if line.startswith("Version:")), "?")


# ------------------------------------------------------------------------------------ claude-code-router

def ccr_install(work: Path, version: str) -> None:
    if not (work / "node_modules" / ".bin" / "ccr").exists():
        package = "@musistudio/claude-code-router" + (f"@{version}" if version else "")
        run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(work), package])


# One provider per upstream dialect; a trial picks one by asking for the model "provider,model", which the
# router sends to that provider as is. Without a transformer a provider is OpenAI-compatible; the
# `Anthropic` transformer alone makes it a Messages upstream (requests pass through untranslated), and
# `openai-responses` a Responses upstream.
CCR_PROVIDERS = {
    "openai": ("mock", "/v1/chat/completions", None),
    "anthropic": ("mock-messages", "/v1/messages", "Anthropic"),
    "responses": ("mock-responses", "/v1/responses", "openai-responses"),
}


def ccr_model(upstream: str) -> str:
    return f"{CCR_PROVIDERS[upstream][0]},{MODEL}"


def ccr_start(work: Path, port: int, mock_port: int) -> subprocess.Popen[bytes]:
    home = work / "home"  # the router reads ~/.claude-code-router/config.json: a throwaway HOME
    (home / ".claude-code-router").mkdir(parents=True, exist_ok=True)
    providers = []
    for name, path, transformer in CCR_PROVIDERS.values():
        provider: dict[str, object] = {"name": name, "api_base_url": f"http://127.0.0.1:{mock_port}{path}",
                                       "api_key": "sk-mock", "models": [MODEL]}
        if transformer is not None:
            provider["transformer"] = {"use": [transformer]}
        providers.append(provider)
    (home / ".claude-code-router" / "config.json").write_text(json.dumps({
        "LOG": False,
        "HOST": "127.0.0.1",
        "PORT": port,
        "NON_INTERACTIVE_MODE": True,
        "API_TIMEOUT_MS": 60000,
        "Providers": providers,
        "Router": {"default": ccr_model("openai")},
    }, indent=2))
    return spawn([str(work / "node_modules" / ".bin" / "ccr"), "start"], work / "proxy.log",
                 env={**os.environ, "HOME": str(home)}, cwd=work)


def ccr_version(work: Path) -> str:
    package = work / "node_modules" / "@musistudio" / "claude-code-router" / "package.json"
    return str(json.loads(package.read_text()).get("version", "?"))


PROXIES = {
    # LiteLLM rescues no text format: --formats none (the format cases are coverage, not failures).
    "litellm": Proxy(litellm_install, litellm_start,
                     (Trial("openai", "openai", ("--proxy-header", f"Authorization: Bearer {MASTER_KEY}")),
                      Trial("anthropic", "openai", ("--proxy-header", f"x-api-key: {MASTER_KEY}")),
                      Trial("openai", "anthropic", ("--proxy-header", f"Authorization: Bearer {MASTER_KEY}",
                                                    "--model", ANTHROPIC_MODEL)),
                      Trial("anthropic", "anthropic", ("--proxy-header", f"x-api-key: {MASTER_KEY}",
                                                       "--model", ANTHROPIC_MODEL))),
                     litellm_version),
    # claude-code-router serves Anthropic clients only: its /v1/chat/completions and /v1/responses routes
    # exist, but only a path ending in /v1/messages is given a provider (docs/compatibility.md).
    "claude-code-router": Proxy(ccr_install, ccr_start,
                                tuple(Trial("anthropic", upstream, ("--model", ccr_model(upstream)))
                                      for upstream in CCR_PROVIDERS),
                                ccr_version),
}


def wait_listening(port: int, proc: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the proxy exited with status {proc.returncode}; see its log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the proxy did not listen on port {port} within {seconds:g} s")


def summary(name: str, version: str, trial: Trial, report: Path) -> str:
    data = json.loads(report.read_text())
    totals = data["totals"]
    by_rule: dict[str, set[str]] = defaultdict(set)
    for s in data["scenarios"]:
        for f in s["failures"]:
            if f.get("rule"):
                by_rule[f"{f['rule']} ({f['severity']})"].add(s["scenario"])
    lines = [f"### {name} {version}: {trial.client} client → {trial.upstream} upstream", "",
             f"passed {totals['passed']}, failed {totals['failed']}, skipped {totals['skipped']} "
             f"(score {totals['score']})", ""]
    lines += [f"- {rule}: {', '.join(sorted(ids))}" for rule, ids in sorted(by_rule.items())]
    cov = data.get("coverage")
    if cov:
        lines += ["", cov if isinstance(cov, str) else json.dumps(cov)]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("proxy", choices=sorted(PROXIES))
    parser.add_argument("--workdir", type=Path, help="throwaway folder (default /tmp/try-<proxy>)")
    parser.add_argument("--workers", default="1", help="pytest-xdist workers for the suite (at most 2 on a shared machine)")
    parser.add_argument("--version", default="", help="the release to install (default: the registry's latest)")
    parser.add_argument("--clean", action="store_true", help="remove the workdir first (a fresh install)")
    parser.add_argument("--pair", action="append", default=[], metavar="CLIENT:UPSTREAM",
                        help="only this dialect pair (repeatable; default: every pair the proxy serves)")
    args = parser.parse_args(argv)
    proxy = PROXIES[args.proxy]
    work: Path = args.workdir or Path(f"/tmp/try-{args.proxy}")
    if args.clean and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    if not SUITE.exists():
        raise SystemExit(f"{SUITE} not found: python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' first")
    proxy.install(work, args.version)
    version = proxy.version(work)
    port, mock_port = free_port(), free_port()
    process = proxy.start(work, port, mock_port)
    out: list[str] = []
    try:
        wait_listening(port, process, 120)
        chosen = [t for t in proxy.trials if not args.pair or f"{t.client}:{t.upstream}" in args.pair]
        if not chosen:
            raise SystemExit(f"{args.proxy} serves none of {args.pair}")
        for trial in chosen:
            report = work / f"{trial.name}.json"
            cmd = ["nice", "-n", "5", str(SUITE), "run", "--proxy-url", f"http://127.0.0.1:{port}/v1",
                   "--mock-port", str(mock_port), "--client-profile", trial.client, "--upstream-dialect",
                   trial.upstream, "--formats", "none", "--wait-for-proxy", "60", "--report-json", str(report),
                   *trial.options, "-n", args.workers]
            print("+", " ".join(cmd), file=sys.stderr)
            with (work / f"{trial.name}.out").open("wb") as log:
                subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
            out.append(summary(args.proxy, version, trial, report) if report.exists()
                       else f"### {trial.name}: no report (see {work / (trial.name + '.out')})\n")
    finally:
        stop(process)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
