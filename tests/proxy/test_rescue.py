"""The rescue parser against a table of cases, the scenario library, and its contracts.

Every case runs whole, in 1-character frames and in random splits; all must give the
same visible text and calls, and the events must keep the event contract.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

import pytest
from support.library import load_library
from support.rescue import (
    ALL,
    Calls,
    check_events,
    feed_frames,
    folded,
    outcome,
    random_frames,
    same_calls,
)
from support.rescue_cases import CASES, W_PARIS, Case, coder, hermes, invoke

from harness.core.dialects.frames import ContentFrame, EventFrame, RawFrame, ToolCallFrame, ToolUseFrame
from harness.core.scenario.model import Scenario
from reference_proxy.rescue import (
    ArgumentsDelta,
    Rescuer,
    Text,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    collect,
    rescue_text,
    scanner,
    tools_from_request,
)
from reference_proxy.rescue.family import Call


def _run(case: Case, frames: list[str]) -> tuple[str, Calls]:
    _, events = feed_frames(frames, case.tools)
    check_events(events)
    return outcome(events)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_whole_and_split(case: Case) -> None:
    expected = (case.visible, case.calls)
    whole = _run(case, [case.text])
    assert whole[0] == expected[0]
    assert same_calls(whole[1], expected[1]), whole[1]
    assert _run(case, list(case.text)) == whole, "1-character frames"
    rng = random.Random(case.id)
    for _ in range(8):
        frames = random_frames(case.text, rng)
        assert _run(case, frames) == whole, f"frames {frames!r}"
    assert rescue_text(case.text, case.tools) == collect(feed_frames(list(case.text), case.tools)[1])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_general_scanner_agrees_with_shortcuts(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the plain-text shortcuts off (as when a new family does not fit them), the
    general scanner alone gives the same results."""
    monkeypatch.setattr(scanner, "SHORTCUTS", False)
    monkeypatch.setattr(scanner, "_WORD_OPENER", None)
    rng = random.Random(case.id)
    for frames in ([case.text], list(case.text), random_frames(case.text, rng)):
        visible, calls = _run(case, frames)
        assert visible == case.visible and same_calls(calls, case.calls), frames


BACKTICK_CASES = [c for c in CASES if "`" in c.text] + [
    Case("inline-then-tool-code", '` ```tool_code{"tool": "read_file", "path": "a"}\n```', "` ", [("read_file", {"path": "a"})]),
    Case("inline-pair-then-fence-run", "`a` ```` `b`\n", None),
]


@pytest.mark.parametrize("case", BACKTICK_CASES, ids=[c.id for c in BACKTICK_CASES])
def test_every_cut_of_code_gives_the_same_result(case: Case) -> None:
    """Backtick runs are decided by what follows them: no cut may change that."""
    whole = _run(case, [case.text])
    assert whole == (case.visible, whole[1]) and same_calls(whole[1], case.calls)
    for k in range(1, len(case.text)):
        assert _run(case, [case.text[:k], case.text[k:]]) == whole, k


def test_case_ids_are_unique() -> None:
    assert len({c.id for c in CASES}) == len(CASES)


# --------------------------------------------------------------------------- letter-initial openers, fast path

# Openers that begin with a letter: the fast path's signal characters ("<", "[", "`")
# never see them coming, so the shortcuts must find them by their first letters instead.
LETTER_OPENERS = sorted(literal for literal in scanner._OPENERS.specs if literal[0].isalpha())
LETTER_CASES = [
    Case(
        "functools-after-prose",
        'I will look it up for you.\nfunctools[{"name": "get_weather", "arguments": {"city": "Paris"}}]\nDone.',
        "I will look it up for you.\n\nDone.",
        [W_PARIS],
    ),
    Case("functools-mid-line-is-prose", 'The cache comes from functools[{"name": "get_weather"}] here.', None),
    Case(
        "count-glued-to-prose",
        'Checking the weather now.count\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
        "</invoke>\n</count> after",
        None,  # decided by the whole-text run below; the cuts must agree with it
        [W_PARIS],
    ),
    Case("count-the-word", "Let me count the files: there are six of them.\nAnd counting.", None),
    Case(
        "court-on-its-own-line",
        'すみません、正しく実行します。\n\ncourt\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n</invoke>',
        "すみません、正しく実行します。\n\n",
        [W_PARIS],
    ),
    Case("court-the-word", "The court ruled on the courtyard.\nA courteous reply.", None),
    Case(
        "gemma-bare-call-after-prose",
        "Let me check the weather.\ncall:get_weather{city:Paris}\nDone.",
        "Let me check the weather.\n\nDone.",
        [W_PARIS],
    ),
    Case("gemma-call-mid-line-is-prose", "Make the call:get_weather{city:Paris} when ready.", None),
    Case(
        "pythonic-after-prose",
        'Sure, one moment please.\n[get_weather(city="Paris")]\nThat is all.',
        "Sure, one moment please.\n\nThat is all.",
        [W_PARIS],
    ),
]


def _fed(frames: list[str], tools: tuple[ToolSpec, ...]) -> tuple[tuple[str, Calls], bool]:
    """The outcome of ``frames``, and whether the plain-text fast path was open before
    one of them (so that the shortcuts, not only the general scanner, saw the text)."""
    rescuer = Rescuer(tools)
    events = []
    fast = False
    for frame in frames:
        fast = fast or rescuer._plain
        events += rescuer.feed(frame)
    events += rescuer.finish()
    check_events(events)
    return outcome(events), fast


def test_the_letter_initial_openers_are_the_ones_these_cases_cover() -> None:
    assert LETTER_OPENERS == ["call:", "count", "court", "functools"], "a new letter-initial opener needs its cases here"
    assert scanner.SHORTCUTS, "the shortcuts are off: these cases would not test them"


@pytest.mark.parametrize("case", LETTER_CASES, ids=[c.id for c in LETTER_CASES])
def test_the_fast_path_finds_letter_initial_openers_at_every_cut(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut at every frame boundary (two frames at every position, and three frames with
    both cuts near the opener), the shortcuts give what the whole text gives, and that is
    what the general scanner alone gives."""
    whole, _ = _fed([case.text], case.tools)
    if case.text_out is not None:
        assert whole[0] == case.text_out
    assert same_calls(whole[1], case.calls), whole[1]
    start = max((case.text.find(o) for o in LETTER_OPENERS + ["\n["]), default=0)
    fast_seen = False
    for k in range(1, len(case.text)):
        got, fast = _fed([case.text[:k], case.text[k:]], case.tools)
        assert got == whole, k
        fast_seen = fast_seen or fast
    near = range(max(1, start - 6), min(len(case.text), start + 12))
    for a in near:
        for b in near:
            if a < b:
                got, fast = _fed([case.text[:a], case.text[a:b], case.text[b:]], case.tools)
                assert got == whole, (a, b)
                fast_seen = fast_seen or fast
    assert fast_seen, "no frame reached the fast path"
    assert _fed(list(case.text), case.tools)[0] == whole, "1-character frames"
    monkeypatch.setattr(scanner, "SHORTCUTS", False)
    monkeypatch.setattr(scanner, "_WORD_OPENER", None)
    assert _fed([case.text], case.tools)[0] == whole, "the general scanner"


# --------------------------------------------------------------------------- hold-back


@dataclass(frozen=True)
class Holding:
    id: str
    frames: list[str]
    released: list[str]  # joined text of the events each feed returned
    tools: tuple[ToolSpec, ...] = ALL


HOLDING = [
    Holding("plain-goes-out-at-once", ["Hello ", "world, ", "a > b"], ["Hello ", "world, ", "a > b"]),
    Holding("angle-released-when-not-a-tag", ["a <", " b"], ["a ", "< b"]),
    Holding("partial-tag-held", ["Hi <to", "ol", "s>"], ["Hi ", "", ""]),
    Holding("word-c-held-then-released", ["I will c", "ount", " ", "the sheep"], ["I will ", "", "", "count the sheep"]),
    Holding("c-inside-word-not-held", ["publi", "c", " music"], ["publi", "c", " music"]),
    Holding("account-not-held", ["the account", " is"], ["the account", " is"]),
    Holding("brace-mid-line-not-held", ["a {", "b}"], ["a {", "b}"]),
    Holding("brace-at-line-start-held", ["x\n", "{", " hi"], ["x\n", "", "{ hi"]),
    # A fence is held until its content shows it is code, then let through as it comes.
    Holding(
        "fence-held-until-its-content-is-code",
        ["`", "``", "bash\n", "\n", "npm test\n", "npm run lint\n", "``", "`\n"],
        ["", "", "", "", "```bash\n\nnpm test\n", "npm run lint\n", "", "```\n"],
    ),
    Holding("inline-code-released", ["use `git` ", "now"], ["use `git` ", "now"]),
    Holding("inline-code-held-to-its-close", ["use `", "git", " status` now"], ["use ", "", "`git status` now"]),
    Holding("lone-backtick-released-at-line-end", ["a ` b", " c\n", "d"], ["a ", "` b c\n", "d"]),
    Holding(
        "text-before-call-sent-before-it-completes",
        ["Let me check. <tool_call>\n", '{"name": "read_file", ', '"arguments": {}}\n</tool_call>', " ok"],
        ["Let me check. ", "", "", " ok"],
    ),
    Holding(
        "no-tools-no-hold-back",
        ["<tool_c", "all>", "x\n{", "I will c", "ount", " `", "`"],
        ["<tool_c", "all>", "x\n{", "I will c", "ount", " `", "`"],
        (),
    ),
]


@pytest.mark.parametrize("case", HOLDING, ids=[c.id for c in HOLDING])
def test_text_released_as_early_as_possible(case: Holding) -> None:
    rescuer = Rescuer(case.tools)
    released = []
    for frame in case.frames:
        events = rescuer.feed(frame)
        released.append("".join(e for e in events if isinstance(e, Text)))
    assert released == case.released


def test_call_events_come_whole_and_in_order() -> None:
    text = "a " + hermes("read_file", {"path": "x"}) + " b " + coder("get_weather") + " c"
    _, events = feed_frames(list(text), ALL)
    kinds = ["Text" if isinstance(e, Text) else type(e).__name__ for e in events]
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1] or k != "Text"]
    assert collapsed == [
        "Text",
        "ToolCallStart",
        "ArgumentsDelta",
        "ToolCallEnd",
        "Text",
        "ToolCallStart",
        "ArgumentsDelta",
        "ToolCallEnd",
        "Text",
    ]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [(s.index, s.name) for s in starts] == [(0, "read_file"), (1, "get_weather")]
    deltas = [e for e in events if isinstance(e, ArgumentsDelta)]
    assert [(d.index, d.fragment) for d in deltas] == [(0, '{"path":"x"}'), (1, "{}")]
    assert [e.index for e in events if isinstance(e, ToolCallEnd)] == [0, 1]


def test_kept_calls_are_taken_once() -> None:
    """A rescuer made with ``keep_calls`` hands each call over once, as recognised; one
    made without says it keeps none."""
    rescuer = Rescuer(ALL, keep_calls=True)
    rescuer.feed(hermes("read_file", {"path": "x"}) + " and " + invoke("run", a="b"))
    rescuer.finish()
    assert rescuer.take_calls() == (Call("read_file", {"path": "x"}), Call("run", {"a": "b"}))
    assert rescuer.take_calls() == ()
    with pytest.raises(ValueError, match="keep_calls"):
        Rescuer(ALL).take_calls()


def test_counters() -> None:
    rescuer = Rescuer(ALL)
    rescuer.feed(hermes("read_file", {"path": "x"}) + invoke("run", a="1"))
    rescuer.finish()
    assert rescuer.calls_emitted == 2 and not rescuer.overflowed


# --------------------------------------------------------------------------- buffer cap


def test_marker_longer_than_cap_is_released_and_scanning_goes_on() -> None:
    long_call = hermes("read_file", {"path": "x" * 300})
    later = invoke("list_files", path=".")
    text = "before " + long_call + " middle " + later + " after"
    for size in (1, 7, 64, 100, 101, len(text)):
        frames = [text[i : i + size] for i in range(0, len(text), size)]
        rescuer, events = feed_frames(frames, ALL, buffer_cap=100)
        check_events(events)
        visible, calls = outcome(events)
        assert rescuer.overflowed, size
        assert calls == [("list_files", {"path": "."})]
        assert visible == "before " + long_call + " middle " + " after"


def test_cap_releases_promptly() -> None:
    rescuer = Rescuer(ALL, buffer_cap=50)
    assert collect(rescuer.feed("<tool_call>\n{\"name\": \"read_file\", "))[0] == ""
    released = collect(rescuer.feed('"arguments": {"path": "' + "y" * 40))[0]
    assert rescuer.overflowed and released.startswith("<tool_call>") and released.endswith("y" * 40)


def test_cap_applies_within_one_big_frame() -> None:
    rescuer = Rescuer(ALL, buffer_cap=50)
    text = 'a <tools>{"name": "read_file", "arguments": {"path": "' + "z" * 200
    released = collect(rescuer.feed(text))[0]
    assert rescuer.overflowed and released == text
    assert collect(rescuer.finish())[0] == ""


@pytest.mark.parametrize(
    ("text", "cap", "overflowed"),
    [
        # The call ends exactly at the cap: recognised, in one piece or many.
        (hermes("read_file", {"path": "x" * 60}), len(hermes("read_file", {"path": "x" * 60})), False),
        (hermes("read_file", {"path": "x" * 60}), len(hermes("read_file", {"path": "x" * 60})) - 1, True),
        # Each call of an invoke run restarts the count, as do the lines of a code block.
        ("<function_calls>\n" + "\n".join([invoke("read_file", path="x" * 40)] * 20), 150, False),
        ("```python\n" + "print('x')\n" * 100 + "```", 64, False),
        # A fence holding only calls is held whole, so all of it counts.
        ("```\n" + "\n".join([invoke("read_file", path="x" * 40)] * 20) + "\n```", 400, True),
    ],
    ids=["call-at-the-cap", "call-one-past-the-cap", "invoke-run", "code-block", "fenced-calls"],
)
def test_cap_counts_positions_not_pieces(text: str, cap: int, overflowed: bool) -> None:
    """The cap decides by where a marker's text lies, never by how it was split: whole,
    in 1-character frames and in random frames, the answer is the same."""
    whole_rescuer, whole = feed_frames([text], ALL, buffer_cap=cap)
    assert whole_rescuer.overflowed is overflowed
    rng = random.Random(text)
    for frames in (list(text), random_frames(text, rng, max_size=200), random_frames(text, rng, max_size=2)):
        rescuer, events = feed_frames(frames, ALL, buffer_cap=cap)
        check_events(events)
        assert (outcome(events), rescuer.overflowed) == (outcome(whole), overflowed)


def test_call_within_cap_is_recognised() -> None:
    call = hermes("read_file", {"path": "x" * 60})
    rescuer, events = feed_frames(list(call), ALL, buffer_cap=len(call))
    assert not rescuer.overflowed
    assert outcome(events)[1] == [("read_file", {"path": "x" * 60})]


# --------------------------------------------------------------------------- scenario library


def _rescuable(scenario: Scenario) -> bool:
    # Scenarios where the proxy answers without calling upstream (the loop guard) never
    # show the backend's text to a parser, so there is nothing to rescue.
    # Raw frames of a backend that does not speak SSE (Ollama's NDJSON lines) hold its calls
    # in its own framing, which ``_delivered`` does not read.
    return (
        scenario.client.profile.name == "openai"
        and (scenario.backend.dialect.media_type == "text/event-stream"
             or not any(isinstance(f, RawFrame) for f in scenario.backend.frames))
        and not any(isinstance(f, (ToolCallFrame, ToolUseFrame, EventFrame)) for f in scenario.backend.frames)
        and scenario.expect.upstream_requests != 0
    )


LIBRARY = [s for s in load_library() if _rescuable(s)]


def _delivered(scenario: Scenario) -> list[str]:
    """The content frames that reach the proxy's parser, which the expectation
    describes. An upstream HTTP error sends none; a drop ends the upstream after
    ``after_frame`` frames (the half event of a mid-event drop cannot be parsed, so none
    of it is used) and the parser is then finished, as when the upstream ends; so does
    an error event written in the stream. A stall or a missing terminator still
    delivers every frame."""
    frames = scenario.backend.frames
    fault = scenario.backend.fault
    if fault is not None and fault.kind == "http_error":
        frames = ()
    elif fault is not None and fault.kind == "drop":
        frames = frames[: fault.after_frame or 0]
    stop = next((k for k, f in enumerate(frames) if isinstance(f, RawFrame) and _is_error_event(f.raw)), len(frames))
    return [f.content for f in frames[:stop] if isinstance(f, ContentFrame)]


def _is_error_event(raw: str) -> bool:
    for line in raw.splitlines():
        if line.startswith("data:"):
            try:
                data = json.loads(line[5:])
            except ValueError:
                continue
            if isinstance(data, dict) and "error" in data:
                return True
    return False


@pytest.mark.parametrize("scenario", LIBRARY, ids=[s.id for s in LIBRARY])
def test_scenario_library(scenario: Scenario) -> None:
    tools = tools_from_request(scenario.client.request)
    frames = _delivered(scenario)
    rescuer, events = feed_frames(frames, tools)
    check_events(events)
    text, calls = outcome(events)
    expected = [(c.name, c.arguments) for c in scenario.expect.tool_calls]
    assert same_calls(calls, expected), f"calls {calls} != {expected}"
    if scenario.expect.content is not None:
        if scenario.expect.content_exact:
            assert text == scenario.expect.content
        else:
            assert folded(text) == folded(scenario.expect.content)
    if scenario.expect.content_regex is not None:
        assert re.search(scenario.expect.content_regex, text, re.DOTALL), text
    # The buffer cap counts positions, so a whole body (the non-streaming path) gets the
    # same answer as the stream, past the cap too.
    whole_rescuer, whole = feed_frames(["".join(frames)], tools)
    assert outcome(whole) == (text, calls)
    assert whole_rescuer.overflowed == rescuer.overflowed


def test_library_has_rescue_scenarios() -> None:
    assert LIBRARY, "no openai-profile text scenarios found in the library"
