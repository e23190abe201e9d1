"""Closing wrappers left over with no opener (``</tool_call>`` after a call already
closed, a stray ``</function_calls>``): markup of no call, never shown to the user.

Only a closer at the start of a line, with only blanks between it and the markup of a
call just recognised, counts: one quoted in prose, or closing a block that turned out to
be no call (and so is delivered as text), stays.
"""

from __future__ import annotations

from typing import Final

from reference_proxy.rescue.family import Context, Family, MarkerParser, Opener, Verdict, accept, reject
from reference_proxy.rescue.toolbox import Toolbox

CLOSERS: Final = (
    "</tool_call>",
    "</tools>",
    "</function_calls>",
    "</seed:tool_call>",
    "</minimax:tool_call>",
    "<|tool_calls_section_end|>",
    "<｜tool▁calls▁end｜>",
    "<|call|>",
    "</｜DSML｜function_calls>",
    "</｜DSML｜tool_calls>",
    "<|python_end|>",
    "<tool_call|>",
    "<|close|>tools<|sep|>",
    "]<]minimax[>[</tool_call>",
)


class OrphanParser(MarkerParser):
    def __init__(self, opener: str, after_call: bool) -> None:
        self._end = len(opener)
        self._orphan = after_call

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        return self.finish()

    def finish(self) -> Verdict:
        return accept((), self._end) if self._orphan else reject(self._end)


class Orphans(Family):
    name = "orphans"
    openers = tuple(Opener(closer, line_start=True) for closer in CLOSERS)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return OrphanParser(opener, context.after_call)
