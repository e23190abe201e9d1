"""Hypothesis strategies that compose a whole case from its parts.

request (tools with generated schemas, ``tool_choice``, stream or not, the client
dialect), answer (prose, call blocks in one text format or native calls, the finish
reason) and frames (cuts anywhere, and on purpose inside every delimiter and next to
every non-ASCII character; torn network writes). Every part shrinks on its own, so a
failure ends as the fewest calls, the shortest prose and the fewest cuts that still
break the rule.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from harness.formats import FORMATS, Call
from harness.fuzz import prose, values
from harness.fuzz.case import Case, Profile, Tool

NATIVE = "native"  # the answer's calls come as structured calls (no text format)
# Tiny network writes cost the mock a pause each (so that they leave separately): only
# answers whose events stay under this many writes are torn into them.
TEAR_LIMIT = 400
EVENT_BYTES = 160  # about what one chunk's envelope and a short delta take on the wire


@st.composite
def tools(draw: st.DrawFn) -> tuple[Tool, ...]:
    names = draw(st.lists(st.sampled_from(values.TOOL_NAMES), min_size=1, max_size=3, unique=True))
    return tuple(Tool(name, draw(values.object_schemas())) for name in names)


@st.composite
def calls(draw: st.DrawFn, offered: Sequence[Tool], max_calls: int = 3) -> tuple[Call, ...]:
    chosen = draw(st.lists(st.sampled_from(list(offered)), max_size=max_calls))
    return tuple(Call(t.name, draw(values.objects(t.schema))) for t in chosen)


def _blocks(found: tuple[Call, ...], breaks: Sequence[bool]) -> tuple[tuple[Call, ...], ...]:
    """The calls grouped into consecutive blocks (several calls in a row, or apart):
    a new block starts before call ``i + 1`` where ``breaks[i]``."""
    blocks: list[tuple[Call, ...]] = []
    current: list[Call] = []
    for i, call in enumerate(found):
        if current and breaks[i - 1]:
            blocks.append(tuple(current))
            current = []
        current.append(call)
    if current:
        blocks.append(tuple(current))
    return tuple(blocks)


def tool_choices(profile: Profile, offered: Sequence[Tool], found: Sequence[Call]) -> st.SearchStrategy[Any]:
    """Only choices the answer already honours: the proxy has nothing to enforce."""
    options: list[Any] = [None]
    names = {c.name for c in found}
    if profile == "anthropic":
        options.append({"type": "auto"})
        if found:
            options.append({"type": "any"})
            if len(names) == 1:
                options.append({"type": "tool", "name": next(iter(names))})
    else:
        options.append("auto")
        if found:
            options.append("required")
            if len(names) == 1:
                options.append({"type": "function", "function": {"name": next(iter(names))}})
    return st.sampled_from(options)


def interesting_offsets(text: str, delimiters: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of every delimiter occurrence and of every non-ASCII character."""
    spans: list[tuple[int, int]] = []
    for d in {d for d in delimiters if len(d) > 1}:
        at = text.find(d)
        while at >= 0:
            spans.append((at, at + len(d)))
            at = text.find(d, at + 1)
    spans += [(i, i + 1) for i, ch in enumerate(text) if ord(ch) > 0x7F]
    return sorted(spans)


@st.composite
def cuts(draw: st.DrawFn, text: str, native: str, delimiters: Sequence[str]) -> tuple[int, ...]:
    """Offsets into ``text + native``: some anywhere, some inside delimiters and
    around multi-byte characters."""
    whole = len(text) + len(native)
    if whole < 2:
        return ()
    chosen: set[int] = set(draw(st.lists(st.integers(1, whole - 1), max_size=8)))
    for start, end in interesting_offsets(text, delimiters):
        low, high = max(1, start if end - start == 1 else start + 1), min(end if end - start == 1 else end - 1,
                                                                          len(text) - 1)
        if low <= high and draw(st.integers(0, 2)) == 0:
            chosen.add(draw(st.integers(low, high)))
    if draw(st.integers(0, 5)) == 0:  # now and then: every character its own frame
        chosen.update(range(1, len(text)))
    return tuple(sorted(c for c in chosen if 0 < c < whole and c != len(text)))


@st.composite
def cases(draw: st.DrawFn, formats: Sequence[str], profiles: Sequence[Profile] = ("openai",),
          native: bool = True) -> Case:
    """A whole case: request, answer and frames."""
    profile = draw(st.sampled_from(list(profiles)))
    offered = draw(tools())
    kinds = [*formats, *([NATIVE] if native else [])]
    kind = draw(st.sampled_from(kinds))
    found = draw(calls(offered))
    format_id = None if kind == NATIVE else kind
    breaks = draw(st.lists(st.booleans(), min_size=len(found), max_size=len(found)))
    blocks = _blocks(found, breaks) if format_id is not None else ()
    native_calls = found if format_id is None else ()
    stretches = [draw(prose.segments()) for _ in range(len(blocks) + 1)]
    if format_id is not None and found and draw(st.booleans()):
        stretches[-1] += (" " if stretches[-1] else "") + draw(prose.mentions(FORMATS[format_id].delimiters))
    anthropic = profile == "anthropic"
    if found:
        finish = draw(st.sampled_from(["end_turn", "tool_use"] if anthropic else ["stop", "tool_calls"]))
    else:
        finish = draw(st.sampled_from(["end_turn", "max_tokens"] if anthropic else ["stop", "length"]))
    stream = draw(st.booleans())
    case = Case(profile=profile, tools=offered, format_id=format_id, prose=tuple(stretches), blocks=blocks,
                native=native_calls, finish=finish, stream=stream,
                tool_choice=draw(tool_choices(profile, offered, found)))
    if not stream:
        return case
    native_text = "".join(json.dumps(dict(c.arguments), ensure_ascii=False) for c in native_calls)
    delimiters = FORMATS[format_id].delimiters if format_id is not None else ()
    splits = draw(cuts(case.text, native_text, delimiters))
    write_bytes = None
    size = (len(splits) + len(native_calls) + 4) * EVENT_BYTES + len(case.text.encode()) + len(native_text)
    if draw(st.integers(0, 9)) == 0:
        write_bytes = next((n for n in draw(st.permutations([1, 2, 3])) if size // n <= TEAR_LIMIT), None)
    split_multibyte = write_bytes is None and draw(st.booleans())
    return Case(profile=profile, tools=offered, format_id=format_id, prose=tuple(stretches), blocks=blocks,
                native=native_calls, finish=finish, stream=stream, tool_choice=case.tool_choice, splits=splits,
                write_bytes=write_bytes, split_multibyte=split_multibyte)
