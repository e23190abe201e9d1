#!/usr/bin/env python3
"""Writes the real clients' request shapes (``harness/core/dialects/client_data/<client>.json``).

Claude Code, Codex CLI and OpenCode run here: their shapes are read from the requests they sent
to ``scripts/agent_recording_server.py`` (``tests/fixtures/agents/<agent>-<version>/requests/turn1.json``,
or the ``requests.json`` of a run recorded with ``toolcall-conformance agents --record DIR``, after a
pin changes). Copilot Chat, Cline and Roo Code cannot run here: their shapes are written below from
their public source and issues, each cited in the file's ``sources``.

What is kept of a captured request: its headers (minus transport, auth and size headers), its query
string, its system layout (the client's system text, the messages or items it sends before the user's
prompt, its reminders), its own tools and its extra fields. A tool description longer than
``MAX_DESCRIPTION`` characters is cut there (the file says so in ``trimmed``), so a shape stays under
50 KB while its tool list keeps every tool and every schema whole.

    python scripts/client_shapes.py                      # from the fixtures
    python scripts/client_shapes.py --record DIR         # from an agents run's recorded requests
    python scripts/client_shapes.py --check              # fails when a written file is out of date
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "harness" / "core" / "dialects" / "client_data"
FIXTURES = ROOT / "tests" / "fixtures" / "agents"
PINS = json.loads((ROOT / "harness" / "agents" / "pins.json").read_text("utf-8"))
MAX_DESCRIPTION = 1000
DROPPED_HEADERS = {"host", "content-length", "connection", "accept-encoding", "x-api-key", "authorization",
                   "content-type", "accept"}
TRIMMED = (f"tool descriptions longer than {MAX_DESCRIPTION} characters cut there, marked with "
           "' [... trimmed]'; every tool and schema kept whole")


def _headers(captured: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in captured.items() if k.lower() not in DROPPED_HEADERS}


def _trim(text: str) -> str:
    return text if len(text) <= MAX_DESCRIPTION else text[:MAX_DESCRIPTION] + " [... trimmed]"


def _trim_tool(tool: dict[str, Any]) -> dict[str, Any]:
    out = dict(tool)
    if isinstance(out.get("description"), str):
        out["description"] = _trim(out["description"])
    if isinstance(out.get("function"), dict) and isinstance(out["function"].get("description"), str):
        out["function"] = {**out["function"], "description": _trim(out["function"]["description"])}
    if isinstance(out.get("tools"), list):
        out["tools"] = [_trim_tool(t) for t in out["tools"]]
    return out


def _captured(agent: str, record: Path | None) -> tuple[dict[str, Any], str]:
    """The agent's first main request (the one carrying its tools) and where it was read."""
    version = PINS[agent]["version"]
    if record is None:
        path = FIXTURES / f"{agent}-{version}" / "requests" / "turn1.json"
        return json.loads(path.read_text("utf-8")), str(path.relative_to(ROOT))
    for path in sorted((record / agent).glob("*/requests.json")):
        for request in json.loads(path.read_text("utf-8")):
            if isinstance(request.get("body"), dict) and request["body"].get("tools"):
                return request, str(path)
    raise SystemExit(f"no request with tools under {record / agent}")


def claude_code(record: Path | None) -> dict[str, Any]:
    captured, where = _captured("claude-code", record)
    body = captured["body"]
    first_user = body["messages"][0]["content"]
    mid = next(m for m in body["messages"] if m["role"] == "system")
    extra = {k: v for k, v in body.items() if k in ("thinking", "context_management", "output_config")}
    return {
        "client": "Claude Code", "version": PINS["claude-code"]["version"],
        "sources": [where, "npm @anthropic-ai/claude-code " + PINS["claude-code"]["version"]],
        "trimmed": TRIMMED,
        "query": "?" + "&".join(f"{k}={v[0]}" for k, v in captured["query"].items()),
        "headers": _headers(captured["headers"]),
        "system": body["system"],
        "reminder": first_user[:-1],  # the <system-reminder> blocks before the prompt
        "mid_system": mid,
        "tools": [_trim_tool(t) for t in body["tools"]],
        "fields": {**extra, "max_tokens": body["max_tokens"]},
        "user_id": json.loads(body["metadata"]["user_id"]),
    }


def codex(record: Path | None) -> dict[str, Any]:
    captured, where = _captured("codex", record)
    body = captured["body"]
    items = body["input"]
    head = [i for i in items if i.get("role") == "developer"]
    context = [i for i in items if i.get("role") == "user"][:-1]  # the environment context before the prompt
    fields = {k: body[k] for k in ("tool_choice", "parallel_tool_calls", "reasoning", "store", "include",
                                   "prompt_cache_key", "client_metadata")}
    return {
        "client": "Codex CLI", "version": PINS["codex"]["version"],
        "sources": [where, "npm @openai/codex " + PINS["codex"]["version"]],
        "trimmed": TRIMMED, "query": "", "headers": _headers(captured["headers"]),
        "head": head, "context": context,
        "tools": [_trim_tool(t) for t in body["tools"]],
        "fields": fields,
    }


def opencode(record: Path | None) -> dict[str, Any]:
    captured, where = _captured("opencode", record)
    body = captured["body"]
    system = next(m for m in body["messages"] if m["role"] == "system")
    return {
        "client": "OpenCode", "version": PINS["opencode"]["version"],
        "sources": [where, "npm opencode-ai " + PINS["opencode"]["version"]],
        "trimmed": TRIMMED, "query": "", "headers": _headers(captured["headers"]),
        "system": system["content"], "context": [],
        "tools": [_trim_tool(t) for t in body["tools"]],
        "fields": {"tool_choice": body["tool_choice"], "max_tokens": body["max_tokens"]},
        "stream_fields": {"stream_options": body["stream_options"]},
    }


# ---------------------------------------------------------------------------------------------- Copilot Chat

COPILOT_VERSION = "0.42.0"
COPILOT_COMMIT = "31acd00a86424e2ee6e980e54919cf31fbf88030"
COPILOT_SOURCES = [
    f"https://github.com/microsoft/vscode-copilot-chat/blob/{COPILOT_COMMIT}/src/extension/tools/common/toolNames.ts "
    "(the tool names a request carries)",
    f"https://github.com/microsoft/vscode-copilot-chat/blob/{COPILOT_COMMIT}/package.json (languageModelTools: the "
    "tools' input schemas, their descriptions left out)",
    f"https://github.com/microsoft/vscode-copilot-chat/blob/{COPILOT_COMMIT}/src/platform/networking/common/openai.ts "
    "(copilot_cache_control on a message with a cache breakpoint)",
    "https://github.com/microsoft/vscode-copilot-chat/pull/554 (copilot_cache_control reaches OpenAI-compatible "
    "endpoints, which may refuse it)",
    "https://github.com/microsoft/vscode/issues/324335 (72 tools and about 29k prompt tokens for 'hi' through a "
    "custom endpoint; a second system message after the user's)",
    "https://github.com/raullenchai/Rapid-MLX/issues/1543 and https://github.com/BerriAI/litellm/pull/39852 "
    "(Qwen, Llama and Gemma chat templates refuse a system message after a user message)",
]
# Tools VS Code itself contributes (not in the extension's package.json): their parameters.
_CORE_TOOL_PARAMS: dict[str, dict[str, str]] = {
    "run_in_terminal": {"command": "string", "explanation": "string", "isBackground": "boolean"},
    "get_terminal_output": {"id": "string"},
    "manage_todo_list": {"todoList": "array"},
    "create_and_run_task": {"workspaceFolder": "string", "task": "object"},
    "run_task": {"id": "string", "workspaceFolder": "string"},
    "get_task_output": {"id": "string", "workspaceFolder": "string"},
    "runTests": {"files": "array", "testNames": "array"},
    "runSubagent": {"prompt": "string", "description": "string"},
    "vscode_askQuestions": {"questions": "array"},
    "tool_search": {"query": "string"},
    "search_subagent": {"query": "string", "description": "string"},
    "execution_subagent": {"query": "string", "description": "string"},
}
# Tools VS Code itself registers besides those (in microsoft/vscode, not the extension), each with
# its parameters, in the order a request lists them after the extension's: the agent's terminal
# tools (src/vs/workbench/contrib/terminalContrib/chatAgentTools/browser/tools/toolIds.ts), the
# integrated browser's (src/vs/workbench/contrib/browserView/electron-browser/tools/), the symbol
# tools (src/vs/workbench/contrib/chat/browser/tools/usagesTool.ts, renameTool.ts) and the Mermaid
# tool of the built-in extensions/mermaid-chat-features. With them a request carries 63 tools; the
# 72 of microsoft/vscode#324335 count tools of that user's other extensions too, whose names its
# attached capture holds.
VSCODE_SOURCES = [
    "https://github.com/microsoft/vscode/blob/main/src/vs/workbench/contrib/terminalContrib/chatAgentTools/browser/"
    "tools/toolIds.ts (await_terminal, kill_terminal, terminal_selection, terminal_last_command)",
    "https://github.com/microsoft/vscode/tree/main/src/vs/workbench/contrib/browserView/electron-browser/tools "
    "(open_browser_page, navigate_page, read_page, screenshot_page, click_element, type_in_page, hover_element, "
    "drag_element, handle_dialog, run_playwright_code)",
    "https://github.com/microsoft/vscode/blob/main/src/vs/workbench/contrib/chat/browser/tools/usagesTool.ts "
    "(vscode_listCodeUsages; vscode_renameSymbol beside it)",
    "https://github.com/microsoft/vscode/blob/main/extensions/mermaid-chat-features/package.json "
    "(renderMermaidDiagram)",
]
VSCODE_TOOL_PARAMS: dict[str, dict[str, str]] = {
    "await_terminal": {"id": "string", "timeout": "number"},
    "kill_terminal": {"id": "string"},
    "terminal_selection": {},
    "terminal_last_command": {},
    "open_browser_page": {"url": "string", "forceNew": "boolean"},
    "navigate_page": {"pageId": "string", "type": "string", "url": "string"},
    "read_page": {"pageId": "string"},
    "screenshot_page": {"pageId": "string", "selector": "string"},
    "click_element": {"pageId": "string", "selector": "string"},
    "type_in_page": {"pageId": "string", "text": "string", "key": "string"},
    "hover_element": {"pageId": "string", "selector": "string"},
    "drag_element": {"pageId": "string", "fromSelector": "string", "toSelector": "string"},
    "handle_dialog": {"pageId": "string", "accept": "boolean", "promptText": "string"},
    "run_playwright_code": {"pageId": "string", "code": "string"},
    "vscode_listCodeUsages": {"symbol": "string", "filePath": "string", "lineContent": "string"},
    "vscode_renameSymbol": {"symbol": "string", "newName": "string", "filePath": "string", "lineContent": "string"},
    "renderMermaidDiagram": {"markup": "string", "title": "string"},
}


def vscode_tools() -> list[dict[str, Any]]:
    """The tools VS Code registers itself, as a Chat Completions request carries them."""
    return [{"type": "function", "function": {
        "name": name, "description": f"VS Code's {name} tool (its own description is left out here).",
        "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in params.items()}}}}
        for name, params in VSCODE_TOOL_PARAMS.items()]


# Names in the enum that never reach a request as tools (placeholders and confirmation plumbing).
_NOT_SENT = {"edit_files", "tool_replay", "vscode_get_confirmation", "vscode_get_confirmation_with_options",
             "vscode_get_terminal_confirmation", "terminal_selection", "terminal_last_command"}


def _no_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _no_descriptions(v) for k, v in schema.items() if k not in ("description", "markdownDescription")}
    if isinstance(schema, list):
        return [_no_descriptions(v) for v in schema]
    return schema


def copilot_tools(package: Path, tool_names: Path) -> list[dict[str, Any]]:
    """Copilot Chat's tools as a Chat Completions request carries them, from the extension's source."""
    import re

    text = tool_names.read_text("utf-8")
    names = dict(re.findall(r"\t(\w+) = '([^']+)'", text.split("export enum ToolName")[1].split("export enum")[0]))
    contributed_names = dict(re.findall(r"\t(\w+) = '([^']+)'",
                                        text.split("export enum ContributedToolName")[1].split("export const")[0]))
    contributed = {t["name"]: t for t in json.loads(package.read_text("utf-8"))["contributes"]["languageModelTools"]}
    tools = []
    for key, name in names.items():
        if name in _NOT_SENT:
            continue
        entry = contributed.get(contributed_names.get(key, ""), {})
        schema = _no_descriptions(entry.get("inputSchema")) if "inputSchema" in entry else {
            "type": "object", "properties": {p: {"type": t} for p, t in _CORE_TOOL_PARAMS.get(name, {}).items()}}
        tools.append({"type": "function", "function": {
            "name": name, "description": f"Copilot Chat's {name} tool (its own description is left out here).",
            "parameters": schema}})
    return tools + vscode_tools()


_COPILOT_SYSTEM = (
    "You are an expert AI programming assistant, working with a user in the VS Code editor.\n"
    "<instructions>\nFollow the user's requirements carefully. Use the tools to read and change files; "
    "never print a code block that changes a file instead of calling a tool.\n</instructions>\n"
    "<toolUseInstructions>\nCall tools one after another until the task is done.\n</toolUseInstructions>")
_COPILOT_ENVIRONMENT = (
    "<environment_info>\nThe user's current OS is: Linux\n</environment_info>\n"
    "<workspace_info>\nI am working in a workspace with the following folders:\n- /home/user/project\n"
    "</workspace_info>")
_COPILOT_SECOND_SYSTEM = (
    "<instructions>\nThese are the user's custom instructions for this workspace (.github/copilot-instructions.md): "
    "run the tests after each change.\n</instructions>")
_COPILOT_HEADERS = {
    "User-Agent": f"GitHubCopilotChat/{COPILOT_VERSION}",
    "Editor-Version": "vscode/1.136.2", "Editor-Plugin-Version": f"copilot-chat/{COPILOT_VERSION}",
    "Copilot-Integration-Id": "vscode-chat", "OpenAI-Intent": "conversation-agent", "X-Initiator": "user",
}
_COPILOT_WRAP = {
    "before": "<context>\nThe current date is 27 November 2026.\n</context>\n<reminderInstructions>\nWhen using the "
              "replace_string_in_file tool, include 3-5 lines of unchanged code before and after the string you "
              "want to replace.\n</reminderInstructions>\n<userRequest>\n",
    "after": "\n</userRequest>",
}


def copilot_chat(package: Path, tool_names: Path) -> dict[str, Any]:
    return {
        "client": "Copilot Chat (custom OpenAI-compatible endpoint)", "version": COPILOT_VERSION,
        "sources": [*COPILOT_SOURCES, *VSCODE_SOURCES], "trimmed": "the system text is a representative one of ours, in Copilot's "
        "layout (its own prompt is not copied); tool descriptions are left out",
        "query": "", "headers": _COPILOT_HEADERS,
        "system": _COPILOT_SYSTEM,
        "context": [{"role": "user", "content": _COPILOT_ENVIRONMENT},
                    {"role": "system", "content": _COPILOT_SECOND_SYSTEM}],
        "wrap_last_user": _COPILOT_WRAP,
        "marks": {"copilot_cache_control": {"type": "ephemeral"}},
        "tools": copilot_tools(package, tool_names),
        "fields": {"n": 1, "tool_choice": "auto"},
        "stream_fields": {"stream_options": {"include_usage": True}},
        "drop_fields": ["max_tokens", "max_completion_tokens"],
    }


def copilot_responses(package: Path, tool_names: Path) -> dict[str, Any]:
    tools = [{"type": "function", **t["function"], "strict": False} for t in copilot_tools(package, tool_names)]
    return {
        "client": "Copilot Chat (custom endpoint, Responses API)", "version": COPILOT_VERSION,
        "sources": [*COPILOT_SOURCES, *VSCODE_SOURCES,
                    f"https://github.com/microsoft/vscode-copilot-chat/blob/{COPILOT_COMMIT}/src/platform/endpoint/"
                    "node/responsesApi.ts (store: false, truncation, reasoning, include, prompt_cache_key; system "
                    "messages as role system input items; tools with strict: false)"],
        "trimmed": "as copilot-chat", "query": "", "headers": _COPILOT_HEADERS,
        "head": [{"role": "system", "content": [{"type": "input_text", "text": _COPILOT_SYSTEM}]}],
        "context": [{"role": "user", "content": [{"type": "input_text", "text": _COPILOT_ENVIRONMENT}]},
                    {"role": "system", "content": [{"type": "input_text", "text": _COPILOT_SECOND_SYSTEM}]}],
        "tools": tools,
        "fields": {"store": False, "truncation": "disabled", "reasoning": {"effort": "medium", "summary": "detailed"},
                   "include": ["reasoning.encrypted_content"],
                   "prompt_cache_key": "7f3c2a9e-5b1d-4c8a-9e6f-0a1b2c3d4e5f:gpt-5", "tool_choice": "auto"},
        "drop_fields": ["max_output_tokens"],
    }


# ---------------------------------------------------------------------------------------------- Cline, Roo Code

CLINE_VERSION = "3.38.0"
ROO_VERSION = "3.53.0"


def cline() -> dict[str, Any]:
    system = (
        "You are Cline, a highly skilled software engineer.\n\n====\n\nTOOL USE\n\nYou have access to a set of tools "
        "that are executed upon the user's approval. Tool use is formatted using XML-style tags: the tool name is "
        "the opening and closing tag, each parameter is enclosed in its own tags:\n\n<tool_name>\n<parameter1_name>"
        "value1</parameter1_name>\n</tool_name>\n\n# Tools\n\n## execute_command\nParameters:\n- command: (required)"
        "\n- requires_approval: (required)\n\n## read_file\nParameters:\n- path: (required)\n\n## write_to_file\n"
        "Parameters:\n- path: (required)\n- content: (required)\n\n## replace_in_file\nParameters:\n- path: "
        "(required)\n- diff: (required)\n\n## search_files\nParameters:\n- path: (required)\n- regex: (required)\n\n"
        "## list_files\nParameters:\n- path: (required)\n\n## ask_followup_question\nParameters:\n- question: "
        "(required)\n\n## attempt_completion\nParameters:\n- result: (required)\n\n# Tool Use Guidelines\n\nUse one "
        "tool per message and wait for its result before going on.")
    return {
        "client": "Cline", "version": CLINE_VERSION,
        "sources": ["https://github.com/cline/cline/blob/main/src/core/prompts/system-prompt (the XML tool-use "
                    "section of its system prompt: tools as <tool_name><param>…</param></tool_name> in the text)",
                    "https://github.com/cline/cline/blob/main/src/core/api/providers/openai.ts (the OpenAI SDK with "
                    "HTTP-Referer https://cline.bot and X-Title Cline)"],
        "trimmed": "a representative system prompt of ours in Cline's layout (its XML tool section's shape; its own "
                   "prose is not copied)",
        "query": "", "headers": {"User-Agent": f"Cline/{CLINE_VERSION}", "HTTP-Referer": "https://cline.bot",
                                 "X-Title": "Cline", "X-Stainless-Lang": "js", "X-Stainless-Runtime": "node"},
        "system": system, "context": [], "tools": [],
        "fields": {}, "stream_fields": {"stream_options": {"include_usage": True}},
    }


def _roo_tool(name: str, params: dict[str, str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": f"Roo Code's {name} tool.", "strict": True,
        "parameters": {"type": "object", "properties": {p: {"type": t} for p, t in params.items()},
                       "required": list(params), "additionalProperties": False}}}


def roo() -> dict[str, Any]:
    tools = [_roo_tool(n, p) for n, p in (
        ("read_file", {"path": "string"}), ("write_to_file", {"path": "string", "content": "string"}),
        ("apply_diff", {"path": "string", "diff": "string"}),
        ("search_files", {"path": "string", "regex": "string"}), ("list_files", {"path": "string"}),
        ("list_code_definition_names", {"path": "string"}), ("execute_command", {"command": "string"}),
        ("ask_followup_question", {"question": "string", "follow_up": "array"}),
        ("attempt_completion", {"result": "string"}), ("switch_mode", {"mode_slug": "string", "reason": "string"}),
        ("new_task", {"mode": "string", "message": "string"}), ("update_todo_list", {"todos": "string"}),
        ("codebase_search", {"query": "string"}), ("fetch_instructions", {"task": "string"}),
        ("use_mcp_tool", {"server_name": "string", "tool_name": "string", "arguments": "string"}),
        ("access_mcp_resource", {"server_name": "string", "uri": "string"}))]
    return {
        "client": "Roo Code", "version": ROO_VERSION,
        "sources": ["https://github.com/RooCodeInc/Roo-Code/pull/10281 (3.37: native tool calling forced for new "
                    "tasks)", "https://github.com/RooCodeInc/Roo-Code/pull/10841 (XML tool calling removed; XML tool "
                    "markup in an answer is refused)",
                    "https://github.com/RooCodeInc/Roo-Code/issues/10319 (native tools sent to OpenAI-compatible "
                    "servers since 3.37)",
                    "https://github.com/RooCodeInc/Roo-Code/blob/main/src/api/providers/constants.ts (DEFAULT_HEADERS: "
                    "HTTP-Referer, X-Title Roo Code, User-Agent RooCode/<version>)"],
        "trimmed": "a representative system prompt of ours; the tools' names and parameters of Roo Code's native "
                   "tools, our own short descriptions",
        "query": "", "headers": {"User-Agent": f"RooCode/{ROO_VERSION}", "HTTP-Referer":
                                 "https://github.com/RooVetGit/Roo-Cline", "X-Title": "Roo Code",
                                 "X-Stainless-Lang": "js", "X-Stainless-Runtime": "node"},
        "system": "You are Roo, a highly skilled software engineer.\n\n====\n\nTOOL USE\n\nYou have access to a set "
                  "of tools; call them with the native tool calling of the API, one tool per message.",
        "context": [], "tools": tools,
        "fields": {"tool_choice": "auto", "parallel_tool_calls": False},
        "stream_fields": {"stream_options": {"include_usage": True}},
    }


def shapes(record: Path | None, copilot_package: Path | None, copilot_tool_names: Path | None) -> dict[str, Any]:
    out = {"claude-code": claude_code(record), "codex": codex(record), "opencode": opencode(record),
           "cline": cline(), "roo": roo()}
    if copilot_package is not None and copilot_tool_names is not None:
        out["copilot-chat"] = copilot_chat(copilot_package, copilot_tool_names)
        out["copilot-responses"] = copilot_responses(copilot_package, copilot_tool_names)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, help="an agents run's --record folder to read instead of the fixtures")
    parser.add_argument("--copilot-package", type=Path,
                        help=f"vscode-copilot-chat's package.json at {COPILOT_COMMIT} (rewrites the Copilot shapes)")
    parser.add_argument("--copilot-tool-names", type=Path, help="its src/extension/tools/common/toolNames.ts")
    parser.add_argument("--check", action="store_true", help="fail when a written file differs")
    args = parser.parse_args()
    stale = []
    for name, shape in shapes(args.record, args.copilot_package, args.copilot_tool_names).items():
        text = json.dumps(shape, indent=1, ensure_ascii=False) + "\n"
        path = OUT / f"{name}.json"
        if args.check:
            if not path.exists() or path.read_text("utf-8") != text:
                stale.append(name)
            continue
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
        print(f"{path.relative_to(ROOT)}: {len(text.encode()) / 1024:.1f} KB, {len(shape['tools'])} tools")
    if stale:
        print("out of date: " + ", ".join(stale) + " (run python scripts/client_shapes.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
