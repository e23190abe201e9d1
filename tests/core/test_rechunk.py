"""Re-chunking is pure: variants keep the text, cut where they claim, follow the seed,
and shrinking finds the boundary a predicate breaks on."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.core.dialects.frames import ContentFrame, RawFrame, ToolCallFrame, ToolUseFrame
from harness.core.frames.rechunk import (
    MAX_FRAMES,
    MAX_TORN_WRITES,
    STRATEGIES,
    Layout,
    apply_variant,
    describe_split,
    layout,
    make_variant,
    native_pieces,
    per_char_splits,
    tag_splits,
    variant_random,
    variants,
)
from harness.core.frames.shrink import shrink
from harness.core.replay.planned import wire_events
from harness.core.replay.wire import writes
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.model import Scenario
from support.library import load_library

LIBRARY = load_library()


def _scenario(frames: list[Any], **backend: Any) -> Scenario:
    return parse_scenario(
        {
            "id": "rechunk-case",
            "title": "t",
            "source": "synthetic",
            "backend": {"dialect": "openai", "frames": frames, **backend},
            "client": {
                "request": {
                    "model": "m",
                    "stream": True,
                    "messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
                }
            },
            "expect": {"content": ""},
        }
    )


MIXED = _scenario(
    [
        "Checking. ",
        {"tool_call": {"index": 0, "id": "call_1", "type": "function", "name": "get_weather"}},
        {"tool_call": {"index": 0, "arguments": '{"city": "S\\u00e3o \\"Paulo\\"", '}},
        {"tool_call": {"index": 0, "arguments": '"days": 2}'}},
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Sa\\"o Paulo"}}</tool_call>',
        {"raw": ": keep-alive\n\n"},
        {"content": " déjà ☀️ ```json\n{}\n```", "delay_ms": 5},
        "</invoke> end",
    ]
)
CASES = [MIXED, *[s for s in LIBRARY if s.streams][:20]]


def _skeleton(frames: Any) -> list[tuple[int, Any]]:
    """Each non-content frame with the content offset it sits at, its argument text left
    out (the later pieces of a re-split call are deltas of their own: left out too)."""
    out: list[tuple[int, Any]] = []
    offset = 0
    for frame in frames:
        if isinstance(frame, ContentFrame):
            offset += len(frame.content)
        elif isinstance(frame, ToolCallFrame):
            if frame != ToolCallFrame(frame.index, arguments=frame.arguments):
                out.append((offset, ("call", frame.index, frame.id, frame.type, frame.name, frame.delay_ms)))
        elif isinstance(frame, ToolUseFrame):
            out.append((offset, ("use", frame.name, frame.id, frame.delay_ms)))
        else:
            out.append((offset, frame))
    return out


def _arguments(frames: Any) -> dict[Any, str]:
    """Each native call's argument text, joined."""
    out: dict[Any, str] = {}
    for frame in frames:
        key = ("call", frame.index) if isinstance(frame, ToolCallFrame) else ("use", getattr(frame, "name", None))
        out[key] = out.get(key, "") + "".join(native_pieces(frame))
    return out


@pytest.mark.parametrize("scenario", CASES, ids=[s.id for s in CASES])
@pytest.mark.parametrize("index", range(len(STRATEGIES)), ids=list(STRATEGIES))
def test_variants_keep_text_and_other_frames(scenario: Scenario, index: int) -> None:
    variant = variants(scenario, index + 1, seed=42)[index]
    played = apply_variant(scenario, variant)
    text = "".join(f.content for f in played.backend.frames if isinstance(f, ContentFrame))
    assert text == scenario.backend.text
    assert _skeleton(played.backend.frames) == _skeleton(scenario.backend.frames)
    assert _arguments(played.backend.frames) == _arguments(scenario.backend.frames)
    if not variant.strategy.startswith("native-"):  # native frames exactly as written
        assert [f for f in played.backend.frames if not isinstance(f, ContentFrame)] == [
            f for f in scenario.backend.frames if not isinstance(f, ContentFrame)]
    assert all(f.content for f in played.backend.frames if isinstance(f, ContentFrame))
    # What the mock is armed with is a valid scenario with the same frames.
    again = parse_scenario(played.to_mapping())
    assert again.backend.frames == played.backend.frames
    assert again.backend.write_bytes == variant.write_bytes
    assert again.backend.split_multibyte == variant.split_multibyte


def _delayed_offsets(frames: Any) -> list[tuple[int, float]]:
    out, offset = [], 0
    for frame in frames:
        if isinstance(frame, ContentFrame):
            if frame.delay_ms is not None:
                out.append((offset, frame.delay_ms))
            offset += len(frame.content)
    return out


def test_delayed_frames_keep_their_start_and_delay() -> None:
    wanted = _delayed_offsets(MIXED.backend.frames)
    assert len(wanted) == 1
    for variant in variants(MIXED, 8, seed=3):
        assert _delayed_offsets(apply_variant(MIXED, variant).backend.frames) == wanted


def test_per_char_is_one_character_per_frame() -> None:
    variant = make_variant(layout(MIXED.backend.frames), MIXED.id, 1, STRATEGIES.index("per-char"), sizes=())
    content = [f for f in apply_variant(MIXED, variant).backend.frames if isinstance(f, ContentFrame)]
    assert {len(f.content) for f in content} == {1}


LONG = ("Writing it now.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"content\": \""
        + "1000,sample,0.25\\n" * 2000 + "\"}}\n</tool_call>\n```\ndone\n```")


def test_a_long_answer_is_cut_every_few_characters_and_one_at_a_time_in_its_markup() -> None:
    """Past ``MAX_FRAMES`` characters, ``per-char`` keeps to about that many frames, with
    every offset of every tag and fence still cut; ``random`` keeps to that many cuts."""
    assert len(LONG) > 8 * MAX_FRAMES
    cuts = per_char_splits(LONG)
    markup = [m.span() for m in re.finditer(r"</?[A-Za-z_][^<>]*>|```", LONG)]
    assert len(markup) == 4
    assert len(cuts) <= MAX_FRAMES + sum(end - start + 1 for start, end in markup)
    for start, end in markup:
        assert set(range(start, min(end + 1, len(LONG)))) <= cuts, LONG[start:end]
    gaps = [b - a for a, b in zip(sorted(cuts), sorted(cuts)[1:])]
    assert max(gaps) == -(-len(LONG) // MAX_FRAMES)
    short = LONG[:MAX_FRAMES]
    assert per_char_splits(short) == set(range(1, len(short)))
    scenario = _scenario([LONG])
    lay = layout(scenario.backend.frames)
    for index in range(len(STRATEGIES)):
        assert len(make_variant(lay, scenario.id, index, STRATEGIES.index("random"), sizes=()).splits) <= MAX_FRAMES


def test_tag_strategy_cuts_inside_every_tag_fence_and_json_string() -> None:
    text = MIXED.backend.text
    cuts = tag_splits(text, variant_random(7, MIXED.id, 1))
    spans = [m.span() for m in re.finditer(r"</?[A-Za-z_][^<>]*>", text)]
    spans += [m.span() for m in re.finditer(r"```", text)]
    spans += [m.span() for m in re.finditer(r'"(?:[^"\\]|\\.)*"', text)]
    assert len(spans) >= 8
    for start, end in spans:
        assert any(start < c < end for c in cuts), text[start:end]
    for m in re.finditer("<", text):
        assert m.start() + 1 in cuts  # a frame ends right after "<"
    for m in re.finditer("</", text):
        assert m.start() + 2 in cuts  # and right after "</"
    escape = text.index('\\"')
    assert escape + 1 in cuts  # between the backslash and the quote it escapes


def test_multibyte_strategy_tears_network_writes() -> None:
    index = STRATEGIES.index("multibyte")
    with_utf8 = variants(MIXED, index + 1, seed=9)[index]
    assert with_utf8.split_multibyte and with_utf8.write_bytes is None
    assert with_utf8.splits == layout(MIXED.backend.frames).original
    ascii_only = _scenario(["<tool_call>{\"name\": ", "\"get_weather\"}</tool_call>"])
    plain = variants(ascii_only, index + 1, seed=9)[index]
    assert not plain.split_multibyte and plain.write_bytes in (1, 2, 3, 5, 7)
    assert apply_variant(ascii_only, plain).to_mapping()["backend"]["write_bytes"] == plain.write_bytes


TORN = STRATEGIES.index("multibyte")
STREAMED = [s for s in LIBRARY if s.streams]


@pytest.mark.parametrize("scenario", [MIXED, *STREAMED], ids=["mixed", *(s.id for s in STREAMED)])
def test_torn_writes_of_an_answer_are_at_most_about_a_thousand(scenario: Scenario) -> None:
    """The mock pauses between torn writes, so a long answer in tiny writes would take
    minutes: every event counts (envelopes, native and raw frames), not only the text."""
    variant = variants(scenario, TORN + 1, seed=4)[TORN]
    torn = apply_variant(scenario, variant)
    events = wire_events(torn)
    made = sum(len(writes(e, write_bytes=variant.write_bytes, split_multibyte=variant.split_multibyte))
               for e in events)
    limit = 2 * len(events) if variant.split_multibyte else max(MAX_TORN_WRITES, len(events))
    assert len(events) < made <= limit


def test_same_seed_same_variants_other_seed_other_variants() -> None:
    scenario = MIXED
    assert variants(scenario, 8, seed=1234) == variants(scenario, 8, seed=1234)
    random_index = STRATEGIES.index("random")
    seen = {variants(scenario, random_index + 1, seed=s)[random_index].splits for s in range(10)}
    assert len(seen) > 5
    count = len(STRATEGIES) + 2
    assert [v.strategy for v in variants(scenario, count, seed=0)] == [*STRATEGIES, *STRATEGIES[:2]]


ANTHROPIC_TOOL = next(s for s in LIBRARY if any(isinstance(f, ToolUseFrame) for f in s.backend.frames) and s.streams)


@pytest.mark.parametrize("scenario", [MIXED, ANTHROPIC_TOOL], ids=["openai", "anthropic"])
def test_native_per_char_sends_the_arguments_one_character_per_delta(scenario: Scenario) -> None:
    variant = variants(scenario, len(STRATEGIES), seed=5)[STRATEGIES.index("native-per-char")]
    assert variant.strategy == "native-per-char"
    frames = apply_variant(scenario, variant).backend.frames
    pieces = [p for f in frames for p in native_pieces(f)]
    assert pieces and {len(p) for p in pieces} <= {0, 1}
    assert [f for f in frames if isinstance(f, ContentFrame)] == [
        f for f in scenario.backend.frames if isinstance(f, ContentFrame)]  # the content as written


def test_native_json_cuts_inside_every_json_string_of_the_arguments() -> None:
    lay = layout(MIXED.backend.frames)
    variant = variants(MIXED, len(STRATEGIES), seed=5)[STRATEGIES.index("native-json")]
    assert variant.strategy == "native-json"
    cuts = {s - len(lay.text) for s in variant.splits if s > len(lay.text)}
    assert set(variant.splits) - {s + len(lay.text) for s in cuts} == set(lay.original)
    strings = list(re.finditer(r'"(?:[^"\\]|\\.)*"', lay.native))
    assert len(strings) >= 3
    for m in strings:
        assert any(m.start() < c < m.end() for c in cuts), m.group()


def test_native_strategies_without_native_arguments_re_split_the_content() -> None:
    plain = _scenario(["Just prose, ", "no calls at all."])
    for variant in variants(plain, len(STRATEGIES), seed=5)[STRATEGIES.index("native-per-char"):]:
        assert variant.strategy == "random" and variant.splits
        assert all(0 < s < len(plain.backend.text) for s in variant.splits)


def test_a_native_split_shrinks_and_is_described() -> None:
    """A boundary inside the arguments is found by the shrinker and shown in the native text."""
    lay = layout(MIXED.backend.frames)
    bad = len(lay.text) + lay.native.index("Paulo") + 2
    variant = variants(MIXED, len(STRATEGIES), seed=5)[STRATEGIES.index("native-per-char")]
    result = shrink(variant.splits, lambda splits: bad in splits)
    assert result.splits == (bad,) and result.complete
    lines = describe_split(MIXED, result.splits)
    assert any("[native tool call: '{\"city\": \"S\\\\u00e3o \\\\\"Pa'" in line for line in lines), lines
    assert any(f"boundary at character {bad} of the native arguments" in line and "‖ 'ulo" in line for line in lines)


# --------------------------------------------------------------------------- shrinking


def _counting(predicate: Callable[[tuple[int, ...]], bool]) -> tuple[Callable[[tuple[int, ...]], bool], list[int]]:
    calls: list[int] = []

    def run(splits: tuple[int, ...]) -> bool:
        calls.append(1)
        return predicate(splits)

    return run, calls


@pytest.mark.parametrize(
    ("bad", "size"),
    [({57}, 200), ({0 + 1}, 200), ({199}, 200), ({3, 4}, 60), ({10, 150}, 180), ({5}, 6)],
)
def test_shrink_finds_the_boundaries_that_matter(bad: set[int], size: int) -> None:
    fails, calls = _counting(lambda splits: bad <= set(splits))
    result = shrink(list(range(1, size)), fails, budget=30)
    assert set(result.splits) == bad
    assert result.complete
    assert len(calls) == result.runs <= 30


def test_shrink_reports_failures_that_need_no_split() -> None:
    result = shrink([3, 9, 20], lambda splits: True)
    assert result.splits == () and result.runs == 1


def test_shrink_stops_at_the_budget_with_a_still_failing_split() -> None:
    bad = {11, 47, 90, 133}
    result = shrink(list(range(1, 160)), lambda splits: bad <= set(splits), budget=6)
    assert not result.complete and result.runs == 6
    assert bad <= set(result.splits)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_shrink_result_is_failing_and_one_minimal(data: st.DataObject) -> None:
    size = data.draw(st.integers(2, 120))
    splits = sorted(data.draw(st.sets(st.integers(1, size), min_size=1, max_size=size)))
    bad = data.draw(st.sets(st.sampled_from(splits), min_size=1, max_size=2))

    def fails(candidate: tuple[int, ...]) -> bool:
        return bad <= set(candidate)

    result = shrink(splits, fails, budget=200)
    assert fails(result.splits)
    for s in result.splits:  # removing any one boundary makes it pass
        assert not fails(tuple(x for x in result.splits if x != s))


def test_describe_split_marks_the_boundary() -> None:
    scenario = _scenario(['<tool_call>{"name": "get_weather", "arguments": {}}</tool_call>'])
    boundary = scenario.backend.text.index("name") + 2
    lines = describe_split(scenario, [boundary])
    assert "  frame 1: '<tool_call>{\"na'" in lines
    assert any(line.startswith("  frame 2: 'me\"") for line in lines)
    assert any(f"boundary at character {boundary}" in line and "‖ 'me" in line for line in lines)


def test_layout_round_trips_the_original_split() -> None:
    lay: Layout = layout(MIXED.backend.frames)
    frames = lay.frames(lay.original)
    assert [f for f in frames if not isinstance(f, ContentFrame)] == [
        f for f in MIXED.backend.frames if isinstance(f, (ToolCallFrame, RawFrame))
    ]
    assert frames == MIXED.backend.frames
