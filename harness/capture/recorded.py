"""From a live recording to a scenario to review: the upstream's frames where it split them,
with the delay before each, and an expectation derived from the upstream's own answer.

Native calls are expected as the upstream sent them; the text is expected as it came, unless
it holds a text format's markup (found with the harness's own format writers' delimiters,
never with a proxy's parser), in which case the text calls are left for the reviewer and
the scenario says so. Every recorded scenario carries ``review: required`` and a checklist
saying what was derived and what was not.

Pure: a ``Recording`` in, text out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from harness.capture.chat import read_completion_object, read_sse
from harness.capture.errors import CaptureError
from harness.capture.expect import native_calls
from harness.capture.recording import Recording
from harness.capture.stream import loads
from harness.capture.yaml_out import ReviewNotes, render_yaml
from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES, WireDialect
from harness.core.dialects.clients import (
    ANTHROPIC_CLIENT,
    DEFAULT_PROFILE,
    OPENAI_CLIENT,
    RESPONSES_CLIENT,
    ClientProfile,
)
from harness.core.dialects.frames import ContentFrame, Frame, ToolCallFrame, ToolUseFrame, frame_to_mapping
from harness.core.dialects.responses_request import responses_to_chat
from harness.core.errors import ScenarioError
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from harness.generate.formats import FORMATS

FAMILY = "recorded"
MIN_DELIMITER = 6  # shorter delimiters ("<", "[", ")]") occur in any prose


@dataclass(frozen=True, slots=True)
class ReadAnswer:
    """An upstream answer read into scenario frames."""

    frames: tuple[Frame, ...]
    finish_reason: str | None
    usage: Mapping[str, int] | None
    model: str | None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RecordedScenario:
    scenario: Scenario
    text: str
    derived: tuple[str, ...]
    not_derived: tuple[str, ...]


# --------------------------------------------------------------------------- reading the answer


def _events_data(recording: Recording) -> list[Any]:
    out = []
    for event in recording.events:
        data = "\n".join(line.partition(":")[2].lstrip(" ") for line in event.text.splitlines()
                         if line.startswith("data:"))
        out.append(loads(data) if data else None)
    return out


def _chat_count(payload: Any) -> int:
    """How many frames the capture reader makes of one chat-completions chunk."""
    if not isinstance(payload, dict):
        return 0
    count = 0
    for choice in payload.get("choices") or ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta: dict[str, Any] = choice["delta"] if isinstance(choice.get("delta"), dict) else {}
        content = delta.get("content")
        if isinstance(content, str) and (content or not ("role" in delta or choice.get("finish_reason"))):
            count += 1
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            count += sum(1 for c in calls if isinstance(c, dict))
    return count


def _messages_count(payload: Any) -> int:
    """How many frames the capture reader makes of one Messages event."""
    if not isinstance(payload, dict):
        return 0
    kind = payload.get("type")
    block: dict[str, Any] = payload["content_block"] if isinstance(payload.get("content_block"), dict) else {}
    delta: dict[str, Any] = payload["delta"] if isinstance(payload.get("delta"), dict) else {}
    if kind == "content_block_start":
        return int(block.get("type") == "tool_use" or (block.get("type") == "text" and bool(block.get("text"))))
    return int(kind == "content_block_delta" and delta.get("type") == "text_delta" and isinstance(delta.get("text"), str))


def _with_delays(frames: Sequence[Frame], counts: Sequence[int], delays: Sequence[float]) -> tuple[Frame, ...] | None:
    """Each frame with the time since the frame before it, from the events that made them;
    None when the events do not account for the frames one to one."""
    if sum(counts) != len(frames):
        return None
    out: list[Frame] = []
    waited = 0.0
    for count, delay in zip(counts, delays, strict=True):
        waited += delay
        for _ in range(count):
            out.append(replace(frames[len(out)], delay_ms=round(waited, 3)))
            waited = 0.0
    return tuple(out)


def _read_sse_answer(recording: Recording, count: Callable[[Any], int]) -> ReadAnswer:
    origin = f"recording of {recording.path}"
    answer = read_sse("".join(e.text for e in recording.events).encode("utf-8", "surrogatepass"), origin)
    counts = [count(p) for p in _events_data(recording)]
    timed = _with_delays(answer.frames, counts, [e.delay_ms for e in recording.events])
    warnings = list(answer.summary_warnings(origin))
    if timed is None:
        warnings.append("the delays between frames could not be matched to the events; frames carry no delay_ms")
    return ReadAnswer(timed if timed is not None else tuple(answer.frames), answer.finish_reason, answer.usage,
                      answer.model, tuple(warnings))


def _read_body(recording: Recording) -> ReadAnswer:
    origin = f"recording of {recording.path}"
    answer = read_completion_object(json.loads(recording.body or "null"), origin)
    return ReadAnswer(tuple(answer.frames), answer.finish_reason, answer.usage, answer.model,
                      tuple(answer.summary_warnings(origin)))


def _responses_items(output: Any, frames: list[Frame]) -> None:
    for item in output if isinstance(output, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    frames.append(ContentFrame(part["text"]))
        elif item.get("type") == "function_call":
            frames.append(ToolUseFrame(str(item.get("name") or ""), item.get("call_id"),
                                       (str(item.get("arguments") or ""),)))


def _responses_finish(response: Any, frames: Sequence[Frame]) -> tuple[str | None, dict[str, int] | None]:
    if not isinstance(response, dict):
        return None, None
    usage: dict[str, Any] = response["usage"] if isinstance(response.get("usage"), dict) else {}
    counts = {k: v for k in ("input_tokens", "output_tokens") if isinstance(v := usage.get(k), int)}
    if response.get("status") == "incomplete":
        return "max_output_tokens", counts or None
    calls = any(isinstance(f, ToolUseFrame) for f in frames)
    return ("function_calls" if calls else "completed"), counts or None


def _read_responses(recording: Recording) -> ReadAnswer:
    """A Responses answer: text deltas one frame each, each function_call item one frame
    with its argument fragments as they came."""
    if not recording.streamed:
        body = json.loads(recording.body or "null")
        frames: list[Frame] = []
        _responses_items(body.get("output") if isinstance(body, dict) else None, frames)
        finish, usage = _responses_finish(body, frames)
        return ReadAnswer(tuple(frames), finish, usage, body.get("model") if isinstance(body, dict) else None)
    frames = []
    open_calls: dict[Any, tuple[int, list[str]]] = {}
    waited, final, model = 0.0, None, None
    for event, payload in zip(recording.events, _events_data(recording), strict=True):
        waited += event.delay_ms
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        item: dict[str, Any] = payload["item"] if isinstance(payload.get("item"), dict) else {}
        if kind == "response.output_text.delta" and isinstance(payload.get("delta"), str):
            frames.append(ContentFrame(payload["delta"], round(waited, 3)))
            waited = 0.0
        elif kind == "response.output_item.added" and item.get("type") == "function_call":
            open_calls[payload.get("output_index")] = (len(frames), [])
            frames.append(ToolUseFrame(str(item.get("name") or ""), item.get("call_id"), (), round(waited, 3)))
            waited = 0.0
        elif kind == "response.function_call_arguments.delta" and payload.get("output_index") in open_calls:
            open_calls[payload.get("output_index")][1].append(str(payload.get("delta") or ""))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            final = payload.get("response")
        if isinstance(payload.get("response"), dict) and isinstance(payload["response"].get("model"), str):
            model = payload["response"]["model"]
    for position, fragments in open_calls.values():
        frame = frames[position]
        assert isinstance(frame, ToolUseFrame)
        frames[position] = replace(frame, input_json=tuple(fragments))
    finish, usage = _responses_finish(final, frames)
    warnings = () if final is not None else ("the stream ended without response.completed",)
    return ReadAnswer(tuple(frames), finish, usage, model, warnings)


# How each dialect's recorded answer is read, keyed by the dialect objects.
READERS: Mapping[WireDialect, Callable[[Recording], ReadAnswer]] = {
    OPENAI: lambda r: _read_sse_answer(r, _chat_count) if r.streamed else _read_body(r),
    ANTHROPIC: lambda r: _read_sse_answer(r, _messages_count) if r.streamed else _read_body(r),
    RESPONSES: _read_responses,
}
# Which client a recorded request's case is played by, and the request in the case's words (cases
# are written in Chat Completions words; a Responses client says them in its own), keyed by dialect.
CASE_REQUESTS: Mapping[WireDialect, tuple[ClientProfile, Callable[[Mapping[str, Any]], dict[str, Any]]]] = {
    OPENAI: (OPENAI_CLIENT, dict), ANTHROPIC: (ANTHROPIC_CLIENT, dict), RESPONSES: (RESPONSES_CLIENT, responses_to_chat),
}
# The words an answer read by the judge names each dialect's finish in (a Responses answer's in
# Chat Completions words, ``harness.judge.readers.responses_events``).
EXPECTED_FINISH_IN: Mapping[WireDialect, WireDialect] = {OPENAI: OPENAI, ANTHROPIC: ANTHROPIC, RESPONSES: OPENAI}


def read_answer(recording: Recording) -> ReadAnswer:
    """The recorded answer as frames; ``CaptureError`` when it is no answer of its dialect."""
    if recording.status >= 400:
        raise CaptureError(f"the upstream answered HTTP {recording.status}: an error, kept as a capture only")
    try:
        return READERS[recording.dialect](recording)
    except (ValueError, KeyError, TypeError) as exc:
        raise CaptureError(f"the recorded answer is not a {recording.dialect.title} answer: {exc}") from exc


# --------------------------------------------------------------------------- the expectation


def native_expected(frames: Sequence[Frame]) -> tuple[list[dict[str, Any]], list[str]]:
    """The native calls as the upstream sent them, and what could not be read of them."""
    calls: list[dict[str, Any]] = []
    problems: list[str] = []
    pending = [(c.name, c.arguments) for c in native_calls([f for f in frames if isinstance(f, ToolCallFrame)])]
    pending += [(f.name, "".join(f.input_json)) for f in frames if isinstance(f, ToolUseFrame)]
    for name, text in pending:
        try:
            arguments = json.loads(text or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            problems.append(f"the native call {name} has arguments that are no JSON object ({text[:60]!r})")
            arguments = {}
        calls.append({"name": name, "arguments": arguments})
    return calls, problems


def text_formats(text: str) -> list[str]:
    """The text formats whose distinctive markup ``text`` holds (the harness's writers' delimiters)."""
    return [f.id for f in FORMATS.values()
            if any(len(d) >= MIN_DELIMITER and d in text for d in f.delimiters)]


def _finish(recording: Recording, answer: ReadAnswer, calls: bool) -> str | None:
    native = answer.finish_reason
    if native is None:
        return None
    neutral = recording.dialect.neutral_finish(native)
    target = EXPECTED_FINISH_IN[recording.dialect]
    if calls:
        return target.native_finish("tool")
    return target.native_finish(neutral) if neutral is not None else native


def scenario_id(recording: Recording) -> str:
    return f"rec-{recording.dialect.name}-{recording.key}"


def recorded_scenario(recording: Recording, *, capture_path: str, id: str | None = None) -> RecordedScenario:
    """The scenario a recording makes, validated, and its YAML; ``capture_path`` is where the
    recording itself is kept (the scenario's ``source`` names it)."""
    answer = read_answer(recording)
    text = "".join(f.content for f in answer.frames if isinstance(f, ContentFrame))
    calls, problems = native_expected(answer.frames)
    formats = text_formats(text)
    derived = ["backend.frames: one per event, split where the upstream split them, with the delay before each"]
    not_derived: list[str] = []
    expect: dict[str, Any] = {"tool_calls": calls}
    if calls:
        derived.append("expect.tool_calls: the native calls, as the upstream sent them")
    if formats:
        not_derived.append(
            f"expect.tool_calls: the text holds {', '.join(formats)} markup; calls written in it were not "
            "derived (add them, set `rescues:` or the family, and the text the user should see)")
    else:
        expect["content"] = text.strip()
        derived.append("expect.content: the upstream's text, as it came")
    finish = _finish(recording, answer, bool(calls))
    if finish:
        expect["finish_reason"] = finish
        derived.append("expect.finish_reason: from the upstream's own finish")
    not_derived += problems
    not_derived.append("source: name the server, its version, the model and the proxy the exchange went through")
    profile, words = CASE_REQUESTS[recording.dialect]
    written = profile.written_as or profile  # the profile whose words the case is written in
    client: dict[str, Any] = {} if written is DEFAULT_PROFILE else {"profile": written.name}
    client["profiles"] = list(dict.fromkeys((written.name, profile.name)))
    client["request"] = words(recording.request)
    if profile.written_as is not None:
        derived.append(f"client.request: the {recording.dialect.title} request in the case's words; a "
                       f"{profile.name} client sends it in its own")
    backend: dict[str, Any] = {"dialect": recording.dialect.name}
    if bool(recording.request.get("stream")) != recording.streamed:
        backend["stream"] = recording.streamed
    if answer.model:
        backend["model"] = answer.model
    backend["frames"] = list(answer.frames)
    if answer.finish_reason:
        backend["finish_reason"] = answer.finish_reason
    if answer.usage:
        backend["usage"] = dict(answer.usage)
    when = f" on {recording.recorded_on}" if recording.recorded_on else ""
    mapping: dict[str, Any] = {
        "id": id or scenario_id(recording),
        "title": f"Recorded from {recording.server} {recording.version}: {len(calls)} native call(s) in "
                 f"{len(answer.frames)} frame(s)",
        "family": FAMILY,
        "tags": ["recorded"],
        "source": f"recorded live from {recording.server} {recording.version}{when} ({capture_path})",
        "review": "required",
        "backend": backend,
        "client": client,
        "expect": expect,
    }
    notes = ReviewNotes(warnings=list(answer.warnings) + list(recording.warnings))
    checks = [*(f"derived from the upstream's answer, check it: {d}" for d in derived),
              *(f"not derived, fill it in: {n}" for n in not_derived),
              "id, title, tags: name the case after what it shows."]
    yaml_text = render_yaml(mapping, notes, origin=capture_path, streamed=recording.streamed,
                            tool="toolcall-conformance record", made="Recorded", checks=checks)
    expected = {**mapping, "backend": {**backend, "frames": [frame_to_mapping(f) for f in answer.frames]}}
    loaded = yaml.safe_load(yaml_text)
    if loaded != expected:
        raise CaptureError(f"{capture_path}: the generated YAML does not load back to the recorded data")
    try:
        scenario = parse_scenario(loaded, where=capture_path, family=FAMILY, text=yaml_text)
    except ScenarioError as exc:
        problems_text = "; ".join(f"{p.field}: {p.message}" for p in exc.problems)
        raise CaptureError(f"{capture_path}: the recording does not fit the scenario format: {problems_text}") from exc
    return RecordedScenario(scenario, yaml_text, tuple(derived), tuple(not_derived))
