"""Defects of the rescue parser that generated answers found (``toolcall-conformance fuzz``),
each reduced to the frames that showed it. The shrunk scenario of each is in the library
(``scenarios/<family>/generated-*.yaml``); this is the parser-level half, quick to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from reference_proxy.rescue import ToolSpec
from support.rescue import READ, WEATHER, check_events, feed_frames, outcome, same_calls


@dataclass(frozen=True)
class Found:
    id: str
    frames: tuple[str, ...]
    visible: str
    calls: tuple[tuple[str, dict[str, Any]], ...]
    tools: tuple[ToolSpec, ...] = (READ, WEATHER)


FOUND = [
    # Mistral v11: the first call's name arrived in two frames, so part of it was marked as
    # searched for `[ARGS]`; that mark outlived the call, and the next call's `[ARGS]`, nearer
    # its token than the first name was long, was never found: the call went out as text.
    Found("mistral-v11-name-search-outlives-its-call",
          ("[TOOL_CALLS]get_weather[ARG", 'S]{}[TOOL_CALLS]read_file[ARGS]{"path": "a"}'),
          "", (("get_weather", {}), ("read_file", {"path": "a"}))),
    Found("mistral-v11-name-search-outlives-its-call-long-arguments",
          ("caf\u00e9 \n[TOOL_CALLS]get_weather[ARG", "S]{}[TOO",
           'L_CALLS]read_file[ARGS]{"path": "' + "x" * 300 + '"}[TOOL_CALLS]get_weather[', "ARGS]{}\nbye"),
          "caf\u00e9 \n\nbye", (("get_weather", {}), ("read_file", {"path": "x" * 300}), ("get_weather", {}))),
]


@pytest.mark.parametrize("case", FOUND, ids=[c.id for c in FOUND])
def test_a_found_case_reads_alike_in_its_frames_and_whole(case: Found) -> None:
    for frames in (list(case.frames), ["".join(case.frames)]):
        _, events = feed_frames(frames, case.tools)
        check_events(events)
        visible, calls = outcome(events)
        assert visible == case.visible, frames
        assert same_calls(calls, case.calls), calls
