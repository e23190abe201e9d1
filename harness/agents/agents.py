"""One object per coding agent: how it runs offline in a throwaway HOME, the tool it runs
shell commands with, and how to read its JSON event stream.

Every setting here was measured on the pinned versions (docs/agents.md): the variables
and config keys that turn off telemetry, updates and side traffic, and the event shapes.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.agents.base import Agent, Invocation, RunDirs, ToolRun, Transcript, base_env, json_events
from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES, WireDialect

API_KEY = "sk-conformance"  # a throwaway key: the proxy and the mock accept any
MODEL = "conformance-model"  # a name no agent knows: Codex then uses its plain tool set


class ClaudeCode:
    id = "claude-code"
    title = "Claude Code"
    client_dialect = ANTHROPIC
    upstreams: tuple[WireDialect, ...] = (OPENAI, ANTHROPIC, RESPONSES)
    tool = "Bash"

    def arguments(self, command: str) -> dict[str, Any]:
        return {"command": command, "description": "Write the result file"}

    def invocation(self, binary: Path, dirs: RunDirs, base_url: str, prompt: str, cache: Path) -> Invocation:
        env = base_env(dirs, _path(binary))
        env.update({
            "CLAUDE_CONFIG_DIR": str(dirs.home / ".claude"),
            "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": API_KEY,
            # Required as root for --dangerously-skip-permissions (CI and containers run as root).
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "1",
        })
        # Its default model, as users run it: Claude Code then sends a ``role: "system"`` message inside
        # ``messages`` (beta mid-conversation-system-2026-04-07), which a proxy must take (docs/agents.md).
        argv = [str(binary), "-p", prompt, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions"]
        return Invocation(argv, env)

    def read_events(self, stdout: str) -> Transcript:
        events, other = json_events(stdout)
        calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
        runs: list[ToolRun] = []
        final: str | None = None
        problems = [f"not a JSON event: {line[:200]}" for line in other]
        for event in events:
            kind = event.get("type")
            content = (event.get("message") or {}).get("content") if isinstance(event.get("message"), dict) else None
            blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            if kind == "assistant":
                for block in blocks:
                    if block.get("type") == "tool_use":
                        calls[str(block.get("id"))] = (str(block.get("name")), block.get("input") or {})
            elif kind == "user":
                for block in blocks:
                    if block.get("type") == "tool_result":
                        call_id = str(block.get("tool_use_id"))
                        name, arguments = calls.get(call_id, ("?", {}))
                        runs.append(ToolRun(name, call_id, not block.get("is_error", False), None, arguments))
            elif kind == "result":
                if event.get("is_error") or event.get("subtype") != "success":
                    problems.append(f"the run ended with {event.get('subtype')}: {str(event.get('result'))[:300]}")
                elif isinstance(event.get("result"), str):
                    final = event["result"]
        return Transcript(tuple(runs), final, tuple(problems))


class Codex:
    id = "codex"
    title = "Codex CLI"
    client_dialect = RESPONSES
    upstreams: tuple[WireDialect, ...] = (RESPONSES, OPENAI)
    tool = "exec_command"

    def arguments(self, command: str) -> dict[str, Any]:
        return {"cmd": command}

    def invocation(self, binary: Path, dirs: RunDirs, base_url: str, prompt: str, cache: Path) -> Invocation:
        codex_home = dirs.root / "codex-home"
        codex_home.mkdir(parents=True, exist_ok=True)
        (codex_home / "config.toml").write_text(f"""model = "{MODEL}"
model_provider = "conformance"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.conformance]
name = "conformance"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "CONFORMANCE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[features]
plugins = false

[analytics]
enabled = false
[feedback]
enabled = false
[otel]
exporter = "none"
""")
        env = base_env(dirs, _path(binary))
        env.update({"CODEX_HOME": str(codex_home), "CONFORMANCE_API_KEY": API_KEY})
        argv = [str(binary), "exec", "--json", "--skip-git-repo-check", "--ephemeral",
                "--dangerously-bypass-approvals-and-sandbox", prompt]
        return Invocation(argv, env)

    def read_events(self, stdout: str) -> Transcript:
        events, other = json_events(stdout)
        runs: list[ToolRun] = []
        final: str | None = None
        problems = [f"not a JSON event: {line[:200]}" for line in other]
        for event in events:
            item = _dict(event.get("item"))
            if event.get("type") == "item.completed" and item.get("type") == "command_execution":
                code = item.get("exit_code")
                runs.append(ToolRun(self.tool, None, item.get("status") == "completed" and code == 0,
                                    code if isinstance(code, int) else None, {"cmd": item.get("command")}))
            elif event.get("type") == "item.completed" and item.get("type") == "agent_message":
                final = item.get("text") if isinstance(item.get("text"), str) else final
            elif event.get("type") in ("turn.failed", "error"):
                problems.append(f"{event.get('type')}: {json.dumps(event)[:300]}")
        return Transcript(tuple(runs), final, tuple(problems))


class OpenCode:
    id = "opencode"
    title = "OpenCode"
    client_dialect = OPENAI
    upstreams: tuple[WireDialect, ...] = (OPENAI, ANTHROPIC, RESPONSES)
    tool = "bash"

    def arguments(self, command: str) -> dict[str, Any]:
        return {"command": command}

    def invocation(self, binary: Path, dirs: RunDirs, base_url: str, prompt: str, cache: Path) -> Invocation:
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"conformance/{MODEL}", "small_model": f"conformance/{MODEL}",
            "autoupdate": False, "share": "disabled", "permission": {"*": "allow"},
            "provider": {"conformance": {
                "npm": "@ai-sdk/openai-compatible", "name": "conformance",
                "options": {"baseURL": f"{base_url}/v1", "apiKey": API_KEY},
                "models": {MODEL: {"name": MODEL, "tool_call": True}},
            }},
        }
        path = dirs.root / "opencode.json"
        path.write_text(json.dumps(config, indent=2))
        # The plugin package OpenCode would otherwise fetch from npm at every start.
        template = cache / "opencode-config"
        target = Path(dirs.xdg["XDG_CONFIG_HOME"]) / "opencode"
        if template.is_dir():
            shutil.copytree(template, target, dirs_exist_ok=True, symlinks=True)
        env = base_env(dirs, _path(binary))
        env.update({"OPENCODE_CONFIG": str(path), "OPENCODE_DISABLE_AUTOUPDATE": "1",
                    "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                    "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                    "OPENCODE_DISABLE_CLAUDE_CODE": "1", "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1"})
        # The prompt goes on stdin: ``opencode run`` quotes a positional word holding spaces.
        return Invocation([str(binary), "run", "--format", "json"], env, stdin=prompt)

    def read_events(self, stdout: str) -> Transcript:
        events, other = json_events(stdout)
        runs: list[ToolRun] = []
        texts: list[str] = []
        problems = [f"not a JSON event: {line[:200]}" for line in other]
        for event in events:
            part = _dict(event.get("part"))
            if event.get("type") == "tool_use":
                state = _dict(part.get("state"))
                meta = _dict(state.get("metadata"))
                code = meta.get("exit")
                ok = state.get("status") == "completed" and (code is None or code == 0)
                runs.append(ToolRun(str(part.get("tool")), part.get("callID"), ok,
                                    code if isinstance(code, int) else None, state.get("input") or {}))
            elif event.get("type") == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif event.get("type") == "error":
                problems.append(f"error: {json.dumps(event)[:300]}")
        return Transcript(tuple(runs), texts[-1] if texts else None, tuple(problems))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _path(binary: Path) -> str:
    """PATH for the agent: node's folder (launchers are node scripts) and the system's."""
    node = shutil.which("node")
    dirs = [str(binary.parent)] + ([os.path.dirname(node)] if node else []) + ["/usr/local/bin", "/usr/bin", "/bin"]
    return ":".join(dict.fromkeys(dirs))


_ALL: tuple[Agent, ...] = (ClaudeCode(), Codex(), OpenCode())
AGENTS: Mapping[str, Agent] = {a.id: a for a in _ALL}
