"""Hypothesis strategies that compose a whole case from its parts.

request (tools with generated schemas, ``tool_choice``, stream or not, the client
dialect), answer (prose, call blocks in one text format or native calls, the finish
reason) and frames (cuts anywhere, and on purpose inside every delimiter and next to
every non-ASCII character; torn network writes). Every part shrinks on its own, so a
failure ends as the fewest calls, the shortest prose and the fewest cuts that still
break the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cache
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from harness.core.dialects import Finish
from harness.core.dialects.clients import DEFAULT_PROFILE, OPENAI_CLIENT, XML_CLIENT, Profile
from harness.generate.formats import FORMATS, Call, FormatError
from harness.generate.fuzz import prose, values
from harness.generate.fuzz.case import NATIVE, SEPARATOR, Case, Tool

# Where a format's calls sit differs from the default (prose around each block, any
# client dialect of the run) for two formats: bare JSON is a call only as the whole
# answer (with prose around it, it is prose quoting JSON), and Cline XML is what a
# XML-reading client reads itself, so it is played to that profile only.
ALONE: frozenset[str] = frozenset({"bare-json"})
CLIENT_SIDE: dict[str, tuple[Profile, ...]] = {"cline-xml": (XML_CLIENT,)}
# Reasoning drafts are drawn for the plain Chat Completions client only (docs/fuzzing.md): a
# choice about which cases the fuzzer writes for one profile, not a fact of its dialect.
DRAFTS_REASONING: frozenset[Profile] = frozenset({OPENAI_CLIENT})


def profiles_for(format_id: str, profiles: Sequence[Profile]) -> tuple[Profile, ...]:
    """The client profiles a format is played to in a run covering ``profiles``."""
    return CLIENT_SIDE.get(format_id, tuple(profiles))
PER_CHARACTER = 200  # characters: longer answers are not sent one character per frame (an event each)


_TOOL_NAMES = st.lists(st.sampled_from(values.TOOL_NAMES), min_size=1, max_size=3, unique=True)


@st.composite
def tools(draw: st.DrawFn) -> tuple[Tool, ...]:
    names = draw(_TOOL_NAMES)
    return tuple(Tool(name, draw(values.object_schemas())) for name in names)


# The parts below that depend on what was drawn before (the tools offered, the answer's
# pieces) draw with the case's own ``draw`` and strategies built once: a strategy built per
# draw (a ``sampled_from`` of this case's tools, a composite of its arguments) is validated
# on each draw, which cost a drawn case more than its own choices.


@cache
def _picks(count: int, min_size: int, max_size: int) -> st.SearchStrategy[list[int]]:
    """Indices into ``count`` things (a sampled list of them, built once per size)."""
    return st.lists(st.integers(0, count - 1), min_size=min_size, max_size=max_size)


def _pick(draw: st.DrawFn, options: Sequence[Any]) -> Any:
    """One of ``options`` (the first is the simplest, as ``sampled_from`` shrinks)."""
    return options[draw(st.integers(0, len(options) - 1))]


def _calls(draw: st.DrawFn, offered: Sequence[Tool], max_calls: int = 3, min_calls: int = 0) -> tuple[Call, ...]:
    chosen = [offered[i] for i in draw(_picks(len(offered), min_calls, max_calls))]
    return tuple(Call(t.name, draw(values.objects(t.schema))) for t in chosen)


def writable(format_id: str | None, found: Sequence[Call]) -> tuple[Call, ...]:
    """The calls the format can write (MiniMax M3's template has no writing for a null: it
    leaves the argument out, so a call holding one is no answer that model gives)."""
    if format_id is None:
        return tuple(found)
    kept = []
    for call in found:
        try:
            FORMATS[format_id].write([call])
        except FormatError:
            continue
        kept.append(call)
    return tuple(kept)


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


def tool_choices(profile: Profile, found: Sequence[Call]) -> list[Any]:
    """Only choices the answer already honours: the proxy has nothing to enforce."""
    requests = profile.written_in.requests
    options: list[Any] = [None, requests.tool_choice("auto")]
    names = {c.name for c in found}
    if found:
        options.append(requests.tool_choice("any"))
        if len(names) == 1:
            options.append(requests.tool_choice("one", next(iter(names))))
    return options


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


@cache
def _offsets(size: int) -> st.SearchStrategy[list[int]]:
    """Built once per size: a strategy built per draw is validated on each draw."""
    return st.lists(st.integers(0, size - 1), max_size=2)


@cache
def _flags(count: int) -> st.SearchStrategy[list[bool]]:
    return st.lists(st.booleans(), min_size=count, max_size=count)


def piece_cuts(draw: st.DrawFn, piece: str, delimiters: Sequence[str]) -> tuple[int, ...]:
    """Offsets into one piece of the answer: some anywhere, some inside its delimiters and
    around its multi-byte characters. Fewer cuts is simpler, so every cut shrinks away
    unless the failure needs it."""
    if not piece:
        return ()
    chosen: set[int] = set(draw(_offsets(len(piece))))
    for start, end in interesting_offsets(piece, delimiters):
        low, high = (start, end) if end - start == 1 else (start + 1, end - 1)
        if low <= high and draw(st.booleans()):
            chosen.add(draw(st.integers(low, high)))
    return tuple(sorted(chosen))


def reasoning_blocks(draw: st.DrawFn, format_id: str, offered: Sequence[Tool]) -> str:
    """A closed reasoning block, in the model's own form (``<think>``, Seed-OSS's
    ``<seed:think>``, gpt-oss's analysis message), in which the model drafts calls in the
    format (and thinks better of them): a client must get it as text, and no call from it."""
    drafted = writable(format_id, _calls(draw, offered, max_calls=2, min_calls=1))
    if not drafted:
        reject()  # none of the drafts is one the format can write: no such answer
    thought = [draw(_DRAFT_PROSE), FORMATS[format_id].write(drafted), draw(_DRAFT_PROSE)]
    return FORMATS[format_id].reasoning.wrap(SEPARATOR.join(thought))


# A composite strategy is built anew at each call: these are built once, as the rest are.
_TOOLS = tools()
_PROSE = prose.segments()
_TORN_PROSE = prose.segments(max_tokens=4, wide=True)  # a torn case's: short, mostly multi-byte
_DRAFT_PROSE = prose.segments(max_tokens=6)  # a reasoning block's, around its drafts


@st.composite
def cases(draw: st.DrawFn, formats: Sequence[str], profiles: Sequence[Profile] = (DEFAULT_PROFILE,),
          native: bool = True) -> Case:
    """A whole case: request, answer and frames."""
    profile = _pick(draw, profiles)
    stream = draw(st.integers(0, 3)) > 0  # a streamed case is also played without streaming
    # Now and then a short streamed answer whose every event is torn into writes of one
    # or two bytes: a character of three or four bytes then arrives in three reads or
    # more (of two bytes, only a character of four does), when the proxy reads each write
    # as it comes (the mock pauses between writes, so the case stays short to stay fast,
    # and its prose is mostly such characters).
    # Rare choices are drawn as the highest value, so that shrinking (towards 0) drops them.
    tear = stream and draw(st.integers(0, 4)) == 4
    offered = draw(_TOOLS)
    kinds = [*formats, *([NATIVE] if native else [])]
    kind = _pick(draw, kinds)
    format_id = None if kind == NATIVE else kind
    found = writable(format_id, _calls(draw, offered, max_calls=1 if tear else 3))
    breaks = draw(_flags(len(found)))
    blocks = _blocks(found, breaks) if format_id is not None else ()
    native_calls = found if format_id is None else ()
    alone = format_id in ALONE and bool(found)
    stretches = ["" if alone else draw(_TORN_PROSE if tear else _PROSE)
                 for _ in range(len(blocks) + 1)]
    if format_id is not None and found and not alone and not tear and draw(st.booleans()):
        stretches[-1] += (" " if stretches[-1] else "") + draw(prose.mentions(FORMATS[format_id].delimiters))
    reasoning = ""
    if (format_id is not None and not alone and not tear and profile in DRAFTS_REASONING
            and draw(st.booleans())):
        reasoning = reasoning_blocks(draw, format_id, offered)
    wire = profile.written_in  # the backend speaks the client's dialect
    ending: Finish = "tool" if found else "length"
    finish = _pick(draw, [wire.native_finish("end"), wire.native_finish(ending)])
    case = Case(profile=profile, tools=offered, format_id=format_id, prose=tuple(stretches), blocks=blocks,
                native=native_calls, finish=finish, stream=stream,
                tool_choice=_pick(draw, tool_choices(profile, found)), reasoning=reasoning)
    if not stream:
        return case
    delimiters = FORMATS[format_id].delimiters if format_id is not None else ()
    cut = tuple(piece_cuts(draw, piece, delimiters) for piece in case.pieces)
    per_character = len(case.text) <= PER_CHARACTER and draw(st.integers(0, 5)) == 5  # now and then
    write_bytes = None
    if tear:
        per_character = False
        write_bytes = _pick(draw, (2, 1))
    split_multibyte = write_bytes is None and draw(st.booleans())
    case = replace(case, cuts=cut, per_character=per_character, write_bytes=write_bytes,
                   split_multibyte=split_multibyte)
    if tear:  # at most two cuts: each event is torn into writes already
        case = replace(case, cuts=_first_cuts(case.cuts, 2))
    return case


def _first_cuts(cuts: tuple[tuple[int, ...], ...], most: int) -> tuple[tuple[int, ...], ...]:
    kept: list[tuple[int, ...]] = []
    for offsets in cuts:
        taken = offsets[:most]
        most -= len(taken)
        kept.append(taken)
    return tuple(kept)
