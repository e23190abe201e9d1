"""The raw answer as a failure shows it: trimmed around the offending spot, marked ``>>``.

A stream is shown line by line with byte offsets; a single JSON body is shown
indented, one member per line, so the tool calls a rule names are visible whole and
the member at the rule's JSON pointer can be marked. The fields every chunk or body
repeats (id, object, created, model, system_fingerprint) are left out so what
differs shows. Pure: an ``Exchange`` and a ``Position`` in, lines out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.judge.readers.assemble import parse_body, response_kind
from harness.core.exchange import Exchange
from harness.judge.readers.sse import parse_events

WIDTH = 160
BOILERPLATE = ("id", "object", "created", "model", "system_fingerprint")
_TEXT_WINDOW = 40  # characters of a long string shown either side of the offending one


@dataclass(frozen=True)
class Position:
    """Where a rule's evidence places a finding: a stream event or byte, or the JSON
    pointer of a member of a single body (and a character inside a string member)."""

    event_index: int | None = None
    byte_offset: int | None = None
    json_path: str | None = None
    text_offset: int | None = None

    @classmethod
    def of(cls, evidence: Mapping[str, Any]) -> Position:
        def number(key: str) -> int | None:
            value = evidence.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) else None

        path = evidence.get("json_path")
        return cls(number("event_index"), number("byte_offset"), path if isinstance(path, str) else None,
                   number("text_offset"))

    @property
    def known(self) -> bool:
        return self.event_index is not None or self.byte_offset is not None or self.json_path is not None

    def describe(self) -> str:
        parts = [f"event {self.event_index}" if self.event_index is not None else "",
                 f"byte {self.byte_offset}" if self.byte_offset is not None else "",
                 self.json_path or ("(the whole body)" if self.json_path == "" else ""),
                 f"character {self.text_offset}" if self.text_offset is not None else ""]
        return ", ".join(p for p in parts if p)


def clip(text: str, width: int = WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def readable_line(line: str) -> str:
    """A chunk line with the fields every chunk repeats left out, so the delta shows."""
    field_name, colon, value = line.partition(":")
    if not colon or field_name != "data":
        return line
    try:
        data = json.loads(value)
    except ValueError:
        return line
    if not isinstance(data, dict) or not any(k in data for k in BOILERPLATE):
        return line
    rest = {k: v for k, v in data.items() if k not in BOILERPLATE}
    return "data: {…" + ("," + json.dumps(rest, ensure_ascii=False, separators=(",", ":"))[1:] if rest else "}")


# --------------------------------------------------------------------------- JSON bodies


@dataclass(frozen=True, slots=True)
class JsonLine:
    pointer: str  # the member that starts (or, for a closing bracket, ends) on this line
    text: str
    value: Any  # the member's value when the line holds all of it


def json_pointer(parts: Iterable[str | int]) -> str:
    """The JSON pointer (RFC 6901) of the member reached through ``parts``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def json_lines(value: Any, *, omit: Sequence[str] = ()) -> list[JsonLine]:
    """``value`` indented two spaces per level, one member per line, each line with
    the JSON pointer of its member; top-level keys in ``omit`` are left out."""
    out: list[JsonLine] = []

    def emit(v: Any, pointer: str, depth: int, prefix: str, comma: str) -> None:
        pad = "  " * depth
        if isinstance(v, (dict, list)) and v:
            items = list(v.items()) if isinstance(v, dict) else list(enumerate(v))
            opener, closer = ("{", "}") if isinstance(v, dict) else ("[", "]")
            out.append(JsonLine(pointer, f"{pad}{prefix}{opener}", None))
            for i, (k, x) in enumerate(items):
                key = f"{json.dumps(k, ensure_ascii=False)}: " if isinstance(v, dict) else ""
                emit(x, pointer + json_pointer([k]), depth + 1, key, "," if i < len(items) - 1 else "")
            out.append(JsonLine(pointer, f"{pad}{closer}{comma}", None))
        else:
            out.append(JsonLine(pointer, f"{pad}{prefix}{json.dumps(v, ensure_ascii=False)}{comma}", v))

    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in omit}
    emit(value, "", 0, "", "")
    return out


def _marked_json_lines(lines: Sequence[JsonLine], pointer: str) -> tuple[int, int]:
    """The first and last line of the member at ``pointer``, or of its nearest ancestor shown."""
    parts = pointer.split("/")
    for n in range(len(parts), 0, -1):
        wanted = "/".join(parts[:n])
        found = [i for i, line in enumerate(lines) if line.pointer == wanted]
        if found:
            return found[0], found[-1]
    return 0, 0


def _string_window(line: JsonLine, offset: int) -> str:
    """A long string member shown around character ``offset``."""
    text = line.value
    assert isinstance(text, str)
    head = line.text[: len(line.text) - len(line.text.lstrip())]
    key, sep, _ = line.text.strip().partition(": ")
    lo, hi = max(0, offset - _TEXT_WINDOW), offset + _TEXT_WINDOW
    piece = json.dumps(text[lo:hi], ensure_ascii=False)[1:-1]
    shown = ("…" if lo else "") + piece + ("…" if hi < len(text) else "")
    return f'{head}{key + sep if sep else ""}"{shown}"  (character {offset} of {len(text)})'


# --------------------------------------------------------------------------- rendering


_MEMBER_LINES = 40  # lines of one marked JSON member shown whole


def _shown(count: int, mark: int | None, around: int, last: int | None = None) -> list[int]:
    """The lines to show: ``around`` either side of the marked ones (``mark`` to ``last``)."""
    if mark is not None:
        end = mark if last is None else min(last, mark + _MEMBER_LINES)
        return list(range(max(0, mark - around), min(count, end + around + 1)))
    if count <= 2 * around + 2:
        return list(range(count))
    return [*range(around), *range(count - around - 1, count)]  # no position: the start and the end say the most


def _render(rows: Sequence[tuple[str, str]], mark: int | None, around: int, last: int | None = None) -> list[str]:
    out: list[str] = []
    previous = -1
    for i in _shown(len(rows), mark, around, last):
        if i != previous + 1:
            out.append(f"     … {i - previous - 1} line(s) …")
        label, text = rows[i]
        out.append(f"  {'>>' if i == mark else '  '} {label}{clip(text)}")
        previous = i
    if previous < len(rows) - 1:
        out.append(f"     … {len(rows) - previous - 1} line(s) …")
    return out


def _json_transcript(body: Any, position: Position, notes: list[str], around: int) -> list[str]:
    path = position.json_path
    named = (path or "").split("/")[1:2]  # the top-level member the pointer names, kept even if boilerplate
    omit = [k for k in BOILERPLATE if [k] != named]
    lines = json_lines(body, omit=omit if isinstance(body, dict) else ())
    mark, last = _marked_json_lines(lines, path) if path is not None else (None, None)
    rows = [("", line.text) for line in lines]
    if mark is not None:
        notes.append(f"{path or 'the whole body'} marked")
        line = lines[mark]
        if position.text_offset is not None and isinstance(line.value, str):
            rows[mark] = ("", _string_window(line, position.text_offset))
    left_out = "/".join(k for k in omit if isinstance(body, dict) and k in body)
    how = "JSON indented" + (f", {left_out} left out" if left_out else "")
    return [f"answer as received ({', '.join(notes)}; {how}):", *_render(rows, mark, 2 * around, last)]


def _raw_transcript(raw: bytes, position: Position, notes: list[str], around: int) -> list[str]:
    byte_offset = position.byte_offset
    if position.event_index is not None and byte_offset is None:
        events = parse_events(raw).events
        if 0 <= position.event_index < len(events):
            byte_offset = events[position.event_index].byte_offset
    lines: list[tuple[int, bytes]] = []
    pos = 0
    for line in raw.splitlines(keepends=True):
        if line.strip():
            lines.append((pos, line.rstrip(b"\r\n")))
        pos += len(line)
    mark: int | None = None
    if byte_offset is not None:
        for i, (start, line) in enumerate(lines):
            if start <= byte_offset < start + len(line) + 2:
                mark = i
                break
        else:
            mark = len(lines) - 1 if byte_offset >= len(raw) and lines else None
    if mark is not None:
        where = f"event {position.event_index}, " if position.event_index is not None else ""
        notes.append(f"{where}byte {byte_offset} marked")
    rows = [(f"{start:>6} | ", readable_line(line.decode("utf-8", "replace"))) for start, line in lines]
    head = f"answer as received ({', '.join(notes)}; byte offset | line; {'/'.join(BOILERPLATE)} left out):"
    return [head, *_render(rows, mark, around)]


def transcript(exchange: Exchange, position: Position = Position(), *, around: int = 3) -> list[str]:
    """The raw answer as lines, trimmed around ``position`` and marked ``>>`` there."""
    raw = exchange.raw
    status = "no response" if exchange.status is None else f"HTTP {exchange.status}"
    notes = [status, f"{len(raw)} bytes"]
    if exchange.timed_out:
        notes.append(f"gave up after {exchange.elapsed:.1f} s")
    if exchange.transport_error:
        notes.append(f"transport error: {exchange.transport_error}")
    if not raw:
        return [f"answer as received ({', '.join(notes)}): (empty)"]
    if response_kind(exchange) == "json":
        body, problem = parse_body(raw)
        if problem is None:
            return _json_transcript(body, position, notes, around)
    return _raw_transcript(raw, position, notes, around)
