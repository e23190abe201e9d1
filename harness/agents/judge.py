"""The verdict on one agent run: did the agent run the call, send its result back under the
call's id, and end with the final text?

Pure: the run's facts in, failures out. Each failure names its rule.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.agents.base import Transcript
from harness.core.dialects import WireDialect
from harness.core.exchange import RecordedRequest
from harness.core.scenario.steps import is_side_request, tool_results

RULES = {
    "agent-exit": "the agent ends by itself with exit code 0",
    "tool-ran": "the agent's event stream shows its tool run and ending without error",
    "file-written": "the tool call's command ran: the file holds the expected content",
    "result-id": "the next request carries the tool result under the id of the call the agent received",
    "final-text": "the run ends with the model's final text",
    "steps": "the conversation reached every step of the scenario, and no request was refused",
}


@dataclass(frozen=True)
class Facts:
    """What one run left behind."""

    tool: str  # the agent's tool the call named
    upstream: WireDialect  # the dialect the mock was called in
    exit_code: int | None  # None: killed at the timeout
    timeout: float
    transcript: Transcript
    file_content: str | None  # None: no file
    expected_content: str
    final_text: str
    requests: Sequence[RecordedRequest]  # what reached the mock


@dataclass(frozen=True)
class Failure:
    rule: str
    step: int  # the scenario step it concerns
    message: str

    def __str__(self) -> str:
        return f"step {self.step}, rule {self.rule} ({RULES[self.rule]}): {self.message}"


def call_ids(dialect: WireDialect, body: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The ids of the calls in the conversation ``body`` carries, and the ids its tool results
    answer, as the dialect's own request reader finds them."""
    request = dialect.requests.read(body)
    calls = [str(call.id) for turn in request.turns for call in turn.calls]
    return calls, [str(result.call_id) for result in request.results]


def main_requests(facts: Facts) -> list[Mapping[str, Any]]:
    """The bodies of the turn-loop requests (side requests and probes left out), in arrival order."""
    return [r.body for r in facts.requests
            if r.method == "POST" and isinstance(r.body, Mapping) and not is_side_request(r.body)]


def judge(facts: Facts) -> list[Failure]:
    failures: list[Failure] = []
    refused = [r for r in facts.requests if r.answer is not None and r.answer.status is not None
               and r.answer.status >= 400]
    for r in refused:
        text = r.answer.body.decode("utf-8", "replace")[:400] if r.answer is not None else ""
        failures.append(Failure("steps", _step(facts.upstream, r.body), f"the mock answered {r.method} {r.path} "
                                f"with {r.answer.status if r.answer else '?'}: {text}"))
    bodies = main_requests(facts)
    reached = {tool_results(facts.upstream, b) for b in bodies}
    if 0 not in reached:
        failures.append(Failure("steps", 1, "no request with tools reached the mock (step 1 never ran)"))
    runs = [run for run in facts.transcript.tool_runs if run.name == facts.tool]
    if not runs:
        shown = ", ".join(r.name for r in facts.transcript.tool_runs) or "none"
        failures.append(Failure("tool-ran", 1, f"the event stream shows no run of {facts.tool} (tool runs: {shown})"))
    elif not any(run.ok for run in runs):
        failures.append(Failure("tool-ran", 1, f"{facts.tool} ran but failed: exit code {runs[0].exit_code}, "
                                f"arguments {dict(runs[0].arguments)}"))
    if facts.file_content is None:
        failures.append(Failure("file-written", 1, "the file was not created"))
    elif facts.file_content != facts.expected_content:
        failures.append(Failure("file-written", 1, f"the file holds {facts.file_content!r}, "
                                f"expected {facts.expected_content!r}"))
    later = [b for b in bodies if tool_results(facts.upstream, b) >= 1]
    if not later:
        if runs:
            failures.append(Failure("steps", 2, "no request carrying the tool result reached the mock"))
    else:
        calls, results = call_ids(facts.upstream, later[0])
        printed = {run.call_id for run in runs if run.call_id}
        if not results or any(r not in calls for r in results):
            failures.append(Failure("result-id", 2, f"the request's tool result ids {results} do not answer its "
                                    f"calls {calls}"))
        elif printed and not printed & set(results):
            failures.append(Failure("result-id", 2, f"the agent received call id(s) {sorted(printed)} but the "
                                    f"result went back under {results}"))
    if facts.exit_code is None:
        failures.append(Failure("agent-exit", 2, f"the agent did not exit within {facts.timeout:g} s"))
    elif facts.exit_code != 0:
        failures.append(Failure("agent-exit", 2, f"the agent exited with {facts.exit_code}"))
    final = facts.transcript.final_text
    if final is None or facts.final_text not in final:
        failures.append(Failure("final-text", 2, f"the run ended with {final!r}, expected {facts.final_text!r}"))
    for problem in facts.transcript.problems:
        if "not a JSON event" not in problem:
            failures.append(Failure("final-text", 2, f"the event stream reports: {problem}"))
    return failures


def _step(upstream: WireDialect, body: Any) -> int:
    return tool_results(upstream, body) + 1 if isinstance(body, Mapping) else 1
