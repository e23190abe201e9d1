"""An imported scenario written as YAML a person can review: a checklist at the top, readable scalars,
one frame per line, and comments that say what the import guessed or dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES, WireDialect, dialect
from harness.core.dialects.frames import ContentFrame, Frame, RawFrame, ToolCallFrame, ToolUseFrame, frame_to_mapping
from harness.core.scenario.yaml_writer import FlowList, FlowMap, Quoted, compact, dump


@dataclass
class ReviewNotes:
    """What the author must check (the numbered list) and what the import guessed or dropped."""

    checks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    client_comment: list[str] = field(default_factory=list)


def _frame(frame: Frame) -> Any:
    """One frame on one line, its text double-quoted so the split points stay visible, with
    the delay before it when it has one (a live recording's)."""
    written = _bare_frame(frame)
    if frame.delay_ms is None:
        return written
    if isinstance(frame, ContentFrame):
        return FlowMap({"content": written, "delay_ms": frame.delay_ms})
    return FlowMap({**written, "delay_ms": frame.delay_ms})


def _bare_frame(frame: Frame) -> Any:
    if isinstance(frame, ContentFrame):
        return Quoted(frame.content)
    if isinstance(frame, RawFrame):
        return FlowMap({"raw": Quoted(frame.raw)})
    if isinstance(frame, ToolUseFrame):
        use: dict[str, Any] = {} if frame.id is None else {"id": frame.id}
        use["name"] = frame.name
        use["input_json"] = FlowList([Quoted(f) for f in frame.input_json])
        return FlowMap({"tool_use": FlowMap(use)})
    if not isinstance(frame, ToolCallFrame):
        return frame_to_mapping(frame)
    call: dict[str, Any] = {"index": frame.index}
    for key in ("id", "type", "name"):
        value = getattr(frame, key)
        if value is not None:
            call[key] = value
    if frame.arguments is not None:
        call["arguments"] = Quoted(frame.arguments)
    return FlowMap({"tool_call": FlowMap(call)})


def _dump(key: str, value: Any) -> str:
    return dump({key: value}, literal_blocks=True)


def _comment(lines: Sequence[str], indent: str = "") -> str:
    return "".join(f"{indent}# {line}".rstrip() + "\n" for line in lines)


def review_checks(notes: ReviewNotes) -> list[str]:
    """What the author must check, in the order of the file."""
    return [
        "expect.tool_calls: exactly the calls the client SHOULD have received (names, arguments, order). "
        "They are what the reference parser found in the text plus the native calls; drop a call the model "
        "only talked about, add one the parser missed.",
        "expect.content: the text the user should see once the calls are taken out.",
        "source: say where you saw this: backend and model, proxy, client, with versions (a case for the "
        "bundled library keeps its capture under tests/captures/ and names it here).",
        *notes.checks,
        "id, title, tags: name the case after what it shows.",
    ]


_ABOUT_FRAMES: Mapping[tuple[WireDialect, bool], tuple[str, ...]] = {
    (OPENAI, True): ("The backend's answer as captured: one frame per event, split where the backend split it.",),
    (OPENAI, False): (
        "The backend's answer as captured: its content as one frame, each native call as one frame.",
    ),
    (ANTHROPIC, True): (
        "The backend's answer as captured: one frame per text_delta, split where the backend split it;",
        "each tool_use block one frame, its input_json fragments as split.",
    ),
    (ANTHROPIC, False): ("The backend's answer as captured: each text block and each tool_use block one frame.",),
    (RESPONSES, True): (
        "The backend's answer as captured: one frame per output_text delta, split where the backend split it;",
        "each function_call item one frame, its argument fragments as split.",
    ),
    (RESPONSES, False): ("The backend's answer as captured: each message and each function_call item one frame.",),
}


def render_yaml(
    mapping: Mapping[str, Any], notes: ReviewNotes, *, origin: str, streamed: bool = True,
    tool: str = "toolcall-conformance import", made: str = "Imported", checks: Sequence[str] | None = None,
) -> str:
    """The scenario file: a review checklist (``checks``, by default an import's), then the
    scenario in block style with one frame per line."""
    head = [
        f"{made} by `{tool}` from {origin}.",
        "",
        "REVIEW REQUIRED: the expectation below is a proposal. Check:",
        *_numbered(review_checks(notes) if checks is None else checks),
        "Then delete the `review: required` line, move the file to scenarios/<family>/ (and set",
        "family to match), and run `toolcall-conformance validate` on it.",
    ]
    if notes.warnings:
        head += ["", "The import had to guess or drop something:"]
        head += [f"  - {w}" for w in notes.warnings]
    out = [_comment(head)]
    identity = {k: mapping[k] for k in ("id", "title", "family", "tags", "source", "review", "stream_equivalence")
                if k in mapping}
    out.append("".join(_dump(k, FlowList(v) if k == "tags" else v) for k, v in identity.items()))
    backend = dict(mapping["backend"])
    backend["frames"] = [_frame(f) for f in backend["frames"]]
    if "usage" in backend:
        backend["usage"] = FlowMap(backend["usage"])
    about = _ABOUT_FRAMES[dialect(mapping["backend"]["dialect"]), streamed]  # the mapping names it
    out.append(_comment(about) + _dump("backend", backend))
    client = {k: compact(v, 80) for k, v in mapping["client"].items()}
    client["request"] = {k: compact(v, 80) for k, v in mapping["client"]["request"].items()}
    out.append(_comment(notes.client_comment) + _dump("client", client))
    expect = dict(mapping["expect"])
    expect["tool_calls"] = [compact(c, 80) for c in expect["tool_calls"]]
    proposer = "the import" if checks is None else f"`{tool}`"
    out.append(_comment([f"Proposed by {proposer}: review (see the top of the file)."]) + _dump("expect", expect))
    return "\n".join(out)


def _numbered(items: Sequence[str], width: int = 96) -> list[str]:
    lines: list[str] = []
    for n, item in enumerate(items, start=1):
        prefix = f"  {n}. "
        words = item.split(" ")
        line = prefix
        for word in words:
            if len(line) + len(word) > width and line.strip():
                lines.append(line.rstrip())
                line = " " * len(prefix)
            line += word + " "
        lines.append(line.rstrip())
    return lines
