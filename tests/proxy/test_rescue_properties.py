"""Properties of the rescue parser that must hold for any text and any split of it."""

from __future__ import annotations

import json
import re

from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.library import load_library
from support.rescue import ALL, check_events, feed_frames, outcome, split_at
from support.rescue_cases import CASES, Case, coder, hermes, invoke

from harness.core.dialects.frames import ContentFrame
from harness.core.scenario.model import Scenario
from reference_proxy.request_shaping import anthropic_tools
from reference_proxy.rescue import Rescuer, Text, ToolSpec, rescue_text, tools_from_request
from reference_proxy.rescue.families.code import MAX_FENCE_LINE
from reference_proxy.rescue.family import Context, Family, reject
from reference_proxy.rescue.scanner import FAMILIES
from reference_proxy.rescue.toolbox import Toolbox

# Pieces that come near every opener and closer without naming a declared tool.
NEAR_MISSES = [
    "<", ">", "/", "<tools>", "</tools>", "<tool_call>", "</tool_call>", "<tool_c", "<function=", "<parameter=",
    "</parameter>", "</function>", "<function_calls>", "</function_calls>", "<invoke", "</invoke>", "<parameter",
    ' name="', '">', "count", "count\n", "c", "co", "cou", "ac", "`", "```", "```tool_code", "```tool_code\n",
    "```bash\n", "``", "```\n", "\n```\n", "`x`", "` <", "{", "}", "[", "]", '"', "\\", ":", ",", '"name"', '"arguments"', '"parameters"', '"tool"',
    '"nope"', "null", "true", "1.5", "\n", "\r\n", " ", "   ", "\t", "a", "word", "Über", "世界", "🚀",
]
EMPTY_MARKER = re.compile(r"<tool_call>\s*</tool_call>|<tools>\s*</tools>|<function_calls>\s*</function_calls>")
NEVER = (ToolSpec("zz_never_named"),)

CALLS = [
    hermes("read_file", {"path": "a</tool_call>b"}),
    hermes("get_weather", {"city": "Paris"}, "parameters"),
    '<tools>{"name": "list_files", "arguments": {"path": "."}}</tools>',
    '<tools>[{"name": "run", "arguments": {}}]</tools>',
    coder("get_weather", city="Oslo", days="2"),
    "<function_calls>\n" + invoke("read_file", path=" x ") + "\n</function_calls>",
    "count\n" + invoke("ns:tool:run", flag="true"),
    invoke("list_files", path="/"),
    '```tool_code\n{"tool": "read_file", "path": "t"}\n```',
    "\n```xml\n" + invoke("read_file", path="f") + "\n```\n",
    '\n```json\n{"name": "run", "arguments": {}}\n```\n',
    "`" + invoke("run", x="inline") + "`",
    '\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n',
    '\n[{"name": "run", "arguments": {"n": 1}}] {"name": "run"}\n',
]

near_miss_text = st.lists(st.sampled_from(NEAR_MISSES), max_size=40).map("".join)
mixed_text = st.lists(st.sampled_from(NEAR_MISSES + CALLS * 3), max_size=30).map("".join)
cuts = st.lists(st.integers(min_value=0, max_value=2000), max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(CASES), cuts)
def test_any_split_of_a_case_gives_the_same_result(case: Case, points: list[int]) -> None:
    _, whole = feed_frames([case.text], case.tools)
    _, split = feed_frames(split_at(case.text, points), case.tools)
    check_events(split)
    assert outcome(split) == outcome(whole)


@settings(max_examples=300, deadline=None)
@given(near_miss_text, cuts)
def test_no_text_lost(text: str, points: list[int]) -> None:
    assume(not EMPTY_MARKER.search(text))
    for tools in (NEVER, ALL):
        _, events = feed_frames(split_at(text, points), tools)
        check_events(events)
        assert not [e for e in events if not isinstance(e, Text)]
        assert "".join(e for e in events if isinstance(e, Text)) == text


@settings(max_examples=300, deadline=None)
@given(mixed_text, cuts)
def test_streaming_equals_whole_text(text: str, points: list[int]) -> None:
    _, events = feed_frames(split_at(text, points), ALL)
    check_events(events)
    visible, calls = rescue_text(text, ALL)
    assert outcome(events)[0] == visible
    assert outcome(events)[1] == [(c.name, json.loads(c.arguments)) for c in calls]
    _, one_by_one = feed_frames(list(text), ALL)
    assert outcome(one_by_one) == outcome(events)


@settings(max_examples=200, deadline=None)
@given(mixed_text, cuts)
def test_visible_text_is_the_input_minus_call_markup(text: str, points: list[int]) -> None:
    """Nothing but markup disappears: the visible text is the input with some pieces cut out,
    in order (checked as a subsequence), and without calls it is the input itself."""
    _, events = feed_frames(split_at(text, points), ALL)
    pieces = [e for e in events if isinstance(e, Text)]
    # Characters, not pieces: the text on both sides of markup of no call (an empty
    # wrapper) leaves as one piece.
    rest = iter(text)
    assert all(ch in rest for ch in "".join(pieces)), "the visible text is not the input with pieces cut out"
    if len(pieces) == len(events) and not EMPTY_MARKER.search(text):
        assert "".join(pieces) == text


# The characters some format's opener begins with (letters too: Phi-4-mini's `functools[`,
# the `count` variant of the invoke wrapper): text without any of them has nothing to hold.
OPENER_STARTS = "".join(sorted({opener.literal[0] for family in FAMILIES for opener in family.openers}))

PLAIN = st.text(
    alphabet=st.characters(exclude_characters=OPENER_STARTS, exclude_categories=["Cs"]),
    min_size=1,
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(PLAIN, cuts)
def test_plain_text_is_never_held(text: str, points: list[int]) -> None:
    """Text without any character that can begin an opener comes back from the same feed."""
    rescuer = Rescuer(ALL)
    for frame in split_at(text, points):
        events = rescuer.feed(frame)
        assert "".join(e for e in events if isinstance(e, Text)) == frame
        assert all(isinstance(e, Text) for e in events)
    assert rescuer.finish() == []


# --------------------------------------------------------------------------- fence lines

AFTER_FENCE = hermes("read_file", {"path": "t"})
FENCE_CONTENT = {"code": "x\n", "call": AFTER_FENCE + "\n", "nothing": ""}


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(FENCE_CONTENT)),
    st.integers(min_value=0, max_value=MAX_FENCE_LINE + 4),
    st.integers(min_value=1, max_value=MAX_FENCE_LINE + 4),
    st.sampled_from(["", " ", "\t\r"]),
    st.lists(st.integers(min_value=0, max_value=300), max_size=12),
)
def test_a_fence_line_of_any_length_closes_alike_in_any_split(
    content: str, indent: int, run: int, trailing: str, points: list[int]
) -> None:
    """A line of blanks and backticks closes the fence when its backticks are enough
    and it is at most ``MAX_FENCE_LINE`` characters long, whether it arrives whole, cut
    anywhere, or a character at a time; the call after the fence is rescued exactly then."""
    line = " " * indent + "`" * run + trailing
    text = "```\n" + FENCE_CONTENT[content] + line + "\n" + AFTER_FENCE
    closes = run >= 3 and len(line) <= MAX_FENCE_LINE
    fenced = [("read_file", {"path": "t"})] if content == "call" else []
    _, whole = feed_frames([text], ALL)
    assert outcome(whole)[1] == ([*fenced, ("read_file", {"path": "t"})] if closes else [])
    for frames in (split_at(text, points), list(text)):
        _, split = feed_frames(frames, ALL)
        check_events(split)
        assert outcome(split) == outcome(whole), frames


# --------------------------------------------------------------------------- the buffer cap

CAP = 300
OVERSIZED = [
    hermes("read_file", {"path": "p" * 400}),
    '<tools>{"name": "read_file", "arguments": {"path": "' + "p" * 400 + '"}}</tools>',
    coder("run", script="s\n" * 200),
    "<function_calls>\n" + invoke("run", script="s" * 400) + "\n</function_calls>",
    "count\n" + invoke("read_file", path="p" * 400),
    '```tool_code\n{"tool": "read_file", "path": "' + "p" * 400 + '"}\n```',
    "```\n" + hermes("read_file", {"path": "p" * 400}) + "\n```",
    '\n{"name": "read_file", "arguments": {"path": "' + "p" * 400 + '"}}\n',
    "<tool_call>\n" + " " * 400,
]
around = st.lists(st.sampled_from(NEAR_MISSES + CALLS), max_size=6).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(OVERSIZED), around, around, cuts)
def test_an_oversized_marker_gives_one_answer_for_any_split(marker: str, before: str, after: str, points: list[int]) -> None:
    """Past the cap too, the answer depends on the text only: whole (as a non-streaming
    body is fed), in any split, and one character at a time."""
    text = before + marker + after
    whole_rescuer, whole = feed_frames([text], ALL, buffer_cap=CAP)
    split_rescuer, split = feed_frames(split_at(text, points), ALL, buffer_cap=CAP)
    check_events(split)
    assert (outcome(split), split_rescuer.overflowed) == (outcome(whole), whole_rescuer.overflowed)
    single_rescuer, single = feed_frames(list(text), ALL, buffer_cap=CAP)
    assert (outcome(single), single_rescuer.overflowed) == (outcome(whole), whole_rescuer.overflowed)


# --------------------------------------------------------------------------- shared openers

SHARED = [(family, opener.literal) for family in FAMILIES for opener in family.openers
          if sum(1 for f in FAMILIES for o in f.openers if o.literal == opener.literal) > 1]
AFTER_OPENER = st.lists(st.sampled_from(NEAR_MISSES + CALLS + ["<function=run>", "read_file\n", "ls "]), max_size=4).map("".join)


def test_some_openers_are_shared() -> None:
    assert {opener for _, opener in SHARED} >= {"<tool_call>"}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SHARED), AFTER_OPENER | st.sampled_from(["", " ", "\n<", "\n<func", "<", "</tool_", "{", "\n{", "run"]))
def test_a_family_declines_a_shared_opener_exactly_where_its_parser_gives_up(shared: tuple[Family, str], after: str) -> None:
    """The scanner starts no parser for a family that declines: its word must be the
    parser's own verdict on the same text."""
    family, opener = shared
    text = opener + after
    declined = family.declines(opener, text, len(opener))
    if declined is not None:
        verdict = family.parser(opener, Toolbox(ALL), Context(True, "")).feed(text, 0)
        assert verdict == reject(declined)


# --------------------------------------------------------------------------- the scenario library


def _tools(scenario: Scenario) -> list[ToolSpec]:
    request = scenario.client.request
    return list(anthropic_tools(request) if scenario.client.profile.name == "anthropic" else tools_from_request(request))


def _text_runs(scenario: Scenario) -> tuple[str, list[int], list[str]]:
    """The content text, where other frames (native calls, raw events) stand in it, and
    the text frames as the author wrote them."""
    text: list[str] = []
    others: list[int] = []
    written: list[str] = []
    length = 0
    for frame in scenario.backend.frames:
        if isinstance(frame, ContentFrame):
            text.append(frame.content)
            written.append(frame.content)
            length += len(frame.content)
        else:
            others.append(length)
    return "".join(text), others, written


TEXT_SCENARIOS = [s for s in load_library() if any(isinstance(f, ContentFrame) and f.content for f in s.backend.frames)]


def test_the_library_has_text_scenarios_of_both_dialects() -> None:
    assert {s.client.profile.name for s in TEXT_SCENARIOS} >= {"openai", "anthropic"}


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(TEXT_SCENARIOS), cuts, st.integers(min_value=0))
def test_the_library_read_in_any_split(scenario: Scenario, points: list[int], stretch: int) -> None:
    """Each library scenario's text, re-split anywhere (other frames kept where they
    stand), gives the calls and text of the split its author wrote, and so does the
    whole text, as the non-streaming path reads it."""
    tools = _tools(scenario)
    text, others, written = _text_runs(scenario)
    scale = max(len(text) // 2000, 1)  # cut the long scenarios all along their text
    rescuer, events = feed_frames(written, tools)
    expected = (outcome(events), rescuer.overflowed)
    resplit = split_at(text, [p * scale + stretch % scale for p in points] + others)
    split_rescuer, split = feed_frames(resplit, tools)
    check_events(split)
    assert (outcome(split), split_rescuer.overflowed) == expected, resplit
    whole_rescuer, whole = feed_frames([text], tools)
    assert (outcome(whole), whole_rescuer.overflowed) == expected
