"""An imported scenario written as YAML a person can review: a checklist at the top, readable scalars,
one frame per line, and comments that say what the import guessed or dropped."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.core.dialects import ANTHROPIC, OPENAI, RESPONSES, WireDialect, dialect
from harness.core.dialects.frames import ContentFrame, Frame, RawFrame, ToolCallFrame, ToolUseFrame, frame_to_mapping


@dataclass
class ReviewNotes:
    """What the author must check (the numbered list) and what the import guessed or dropped."""

    checks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    client_comment: list[str] = field(default_factory=list)


class _Dumper(yaml.SafeDumper):
    """Block style, insertion order, no line folding, list items indented under their key."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _Quoted(str):
    """Written double-quoted: every character visible, escapes for the invisible ones."""


class _FlowMap(dict[str, Any]):
    """Written on one line."""


class _FlowList(list[Any]):
    """Written on one line."""


_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    # Multi-line text reads best as a literal block; the emitter falls back to quotes
    # when the text cannot be one (trailing spaces...). Unicode line separators and
    # control characters always get double quotes: PyYAML mangles them in other styles.
    if _NEEDS_ESCAPES.search(data):
        style: str | None = '"'
    else:
        style = "|" if "\n" in data.rstrip("\n") else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_quoted(dumper: yaml.SafeDumper, data: _Quoted) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style='"')


def _represent_flow_map(dumper: yaml.SafeDumper, data: _FlowMap) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", dict(data), flow_style=True)


def _represent_flow_list(dumper: yaml.SafeDumper, data: _FlowList) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(data), flow_style=True)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Quoted, _represent_quoted)
_Dumper.add_representer(_FlowMap, _represent_flow_map)
_Dumper.add_representer(_FlowList, _represent_flow_list)


def _frame(frame: Frame) -> Any:
    """One frame on one line, its text double-quoted so the split points stay visible, with
    the delay before it when it has one (a live recording's)."""
    written = _bare_frame(frame)
    if frame.delay_ms is None:
        return written
    if isinstance(frame, ContentFrame):
        return _FlowMap({"content": written, "delay_ms": frame.delay_ms})
    return _FlowMap({**written, "delay_ms": frame.delay_ms})


def _bare_frame(frame: Frame) -> Any:
    if isinstance(frame, ContentFrame):
        return _Quoted(frame.content)
    if isinstance(frame, RawFrame):
        return _FlowMap({"raw": _Quoted(frame.raw)})
    if isinstance(frame, ToolUseFrame):
        use: dict[str, Any] = {} if frame.id is None else {"id": frame.id}
        use["name"] = frame.name
        use["input_json"] = _FlowList([_Quoted(f) for f in frame.input_json])
        return _FlowMap({"tool_use": _FlowMap(use)})
    if not isinstance(frame, ToolCallFrame):
        return frame_to_mapping(frame)
    call: dict[str, Any] = {"index": frame.index}
    for key in ("id", "type", "name"):
        value = getattr(frame, key)
        if value is not None:
            call[key] = value
    if frame.arguments is not None:
        call["arguments"] = _Quoted(frame.arguments)
    return _FlowMap({"tool_call": _FlowMap(call)})


def _compact(value: Any, width: int = 80) -> Any:
    """Short collections on one line, long ones in block style."""
    if isinstance(value, (dict, list)):
        try:
            flat = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            flat = "\n"
        if value and len(flat) <= width and "\\n" not in flat:
            return _FlowMap(value) if isinstance(value, dict) else _FlowList(value)
        if isinstance(value, dict):
            return {k: _compact(v, width) for k, v in value.items()}
        return [_compact(v, width) for v in value]
    return value


def _dump(key: str, value: Any) -> str:
    return yaml.dump(
        {key: value}, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=2**31 - 1, default_flow_style=False
    )


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
    out.append("".join(_dump(k, _FlowList(v) if k == "tags" else v) for k, v in identity.items()))
    backend = dict(mapping["backend"])
    backend["frames"] = [_frame(f) for f in backend["frames"]]
    if "usage" in backend:
        backend["usage"] = _FlowMap(backend["usage"])
    about = _ABOUT_FRAMES[dialect(mapping["backend"]["dialect"]), streamed]  # the mapping names it
    out.append(_comment(about) + _dump("backend", backend))
    client = {k: _compact(v) for k, v in mapping["client"].items()}
    client["request"] = {k: _compact(v) for k, v in mapping["client"]["request"].items()}
    out.append(_comment(notes.client_comment) + _dump("client", client))
    expect = dict(mapping["expect"])
    expect["tool_calls"] = [_compact(c) for c in expect["tool_calls"]]
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
