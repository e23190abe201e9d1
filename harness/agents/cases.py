"""The agents tier's scenarios: step 1 the model calls the agent's own shell tool to write a
file, natively or as text in a format the proxy rescues; step 2 it answers the final text.

Built as scenario data (``steps:``, docs/scenarios.md) and loaded like any written case.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.agents.base import Agent
from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES, WireDialect
from harness.core.dialects.clients import ANTHROPIC_CLIENT, OPENAI_CLIENT
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.generate.formats import FORMATS, Call

NATIVE = "native"
#: The text formats played by default: Hermes ``<tool_call>``, Qwen3-Coder ``<function=...>`` and
#: leaked ``<function_calls><invoke>`` XML.
DEFAULT_FORMATS = (NATIVE, "hermes", "qwen-coder", "invoke-xml")
RESULT_FILE = "conformance-result.txt"
FINAL_TEXT = "The result file is written."
PROMPT = f"Create the file {RESULT_FILE} with the agreed content, using your shell tool."
# A native call's finish in each upstream dialect (a text answer's is the dialect's default finish).
_CALL_FINISH = {OPENAI: "tool_calls", ANTHROPIC: "tool_use", RESPONSES: "completed"}
# A Responses agent's case is written as a Chat stand-in, as its client profile answers that API.
_CLIENT_PROFILE = {OPENAI: OPENAI_CLIENT, ANTHROPIC: ANTHROPIC_CLIENT, RESPONSES: OPENAI_CLIENT}


@dataclass(frozen=True)
class Case:
    agent: Agent
    upstream: WireDialect  # the dialect the proxy calls the mock in
    format: str  # "native" or a text format id
    scenario: Scenario
    content: str  # what the file must hold
    call_id: str | None  # the native call's id as the mock sends it

    @property
    def pair(self) -> str:
        return f"{self.agent.client_dialect.name}->{self.upstream.name}"

    @property
    def name(self) -> str:
        return f"{self.agent.id} {self.pair} {self.format}"


def expected_content(agent: Agent, upstream: WireDialect, fmt: str) -> str:
    return f"ok {agent.id} {upstream.name} {fmt}"


def command(content: str) -> str:
    return f"printf '%s' '{content}' > {RESULT_FILE}"


def _step1_frames(agent: Agent, upstream: WireDialect, fmt: str, call: Call, call_id: str) -> list[Any]:
    arguments = json.dumps(dict(call.arguments))
    if fmt == NATIVE:
        if upstream.calls.frame_key == "tool_call":  # a call streamed in argument fragments
            half = len(arguments) // 2
            return [{"tool_call": {"index": 0, "id": call_id, "type": "function", "name": call.name, "arguments": ""}},
                    {"tool_call": {"index": 0, "arguments": arguments[:half]}},
                    {"tool_call": {"index": 0, "arguments": arguments[half:]}}]
        return [{"tool_use": {"name": call.name, "id": call_id, "input_json": [arguments[:10], arguments[10:]]}}]
    text = FORMATS[fmt].write([call])
    cut = len(text) // 2
    return ["I will write the file now.\n", text[:cut], text[cut:]]


def _client_request(agent: Agent) -> dict[str, Any]:
    """A stand-in of the agent's request (what the agent really sends is recorded at the mock)."""
    schema = {"type": "object", "properties": {k: {"type": "string"} for k in agent.arguments("x")}}
    if agent.client_dialect.requests.needs_max_tokens:  # Messages: max_tokens and input_schema
        return {"model": "conformance-model", "max_tokens": 1024, "stream": True,
                "messages": [{"role": "user", "content": PROMPT}],
                "tools": [{"name": agent.tool, "description": "Run a shell command.", "input_schema": schema}]}
    return {"model": "conformance-model", "stream": True, "messages": [{"role": "user", "content": PROMPT}],
            "tools": [{"type": "function", "function": {"name": agent.tool, "description": "Run a shell command.",
                                                        "parameters": schema}}]}


def build_case(agent: Agent, upstream: WireDialect, fmt: str) -> Case:
    content = expected_content(agent, upstream, fmt)
    call = Call(agent.tool, agent.arguments(command(content)))
    call_id = upstream.call_id_prefix + "conformance01"
    native = fmt == NATIVE
    data: dict[str, Any] = {
        "id": f"agent-{agent.id}-{upstream.name}-{fmt}",
        "title": f"{agent.title} runs its {agent.tool} tool ({'native call' if native else fmt + ' text'}, "
                 f"{upstream.name} upstream), then ends with the final text",
        "family": "agents",
        "source": "synthetic: the agents tier's two-step turn loop (docs/agents.md)",
        "tags": ["agents", agent.id, fmt],
        **({} if native else {"rescues": [FORMATS[fmt].family]}),
        "backend": {"dialect": upstream.name, "frames": _step1_frames(agent, upstream, fmt, call, call_id),
                    "finish_reason": _CALL_FINISH[upstream] if native else upstream.default_finish},
        "steps": [{"title": "the final answer after the tool result", "frames": [FINAL_TEXT]}],
        "client": {"profile": _CLIENT_PROFILE[agent.client_dialect].name, "request": _client_request(agent)},
        "expect": {"tool_calls": [{"name": call.name, "arguments": dict(call.arguments)}]},
    }
    scenario = parse_scenario(data, where=f"agents:{data['id']}", family="agents")
    return Case(agent, upstream, fmt, scenario, content, call_id if native else None)


def all_cases(agents: list[Agent], formats: tuple[str, ...] = DEFAULT_FORMATS) -> list[Case]:
    return [build_case(agent, upstream, fmt) for agent in agents for upstream in agent.upstreams for fmt in formats]
