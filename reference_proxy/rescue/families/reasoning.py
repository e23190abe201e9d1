"""A closed reasoning block, ``<think>…</think>`` (Seed-OSS: ``<seed:think>…</seed:think>``),
written into the content.

Reasoning models (Qwen3, DeepSeek-R1, GLM) served without a reasoning parser leave the
block in the text. A call drafted while thinking is no call: the block is text as a
whole, delivered as it arrives, and no opener inside it counts. Scanning resumes after
``</think>``; a block never closed is text to the end. The block opens at the start of a
line, as models write it; a ``<think>`` mentioned mid-sentence is an ordinary tag.
Each model closes the block with its own tag (Seed-OSS's chat template and vLLM's
``seed_oss`` parser: https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_seed_oss_tool_parser.py;
Gemma 4 thinks in ``<|channel>thought…<channel|>``, vLLM's ``gemma4`` reasoning parser;
MiniMax M3 in ``<mm:think>…</mm:think>``, its chat template's think tokens).
"""

from __future__ import annotations

from typing import Final

from reference_proxy.rescue.family import Carry, Context, Family, MarkerParser, Opener, Verdict, reject
from reference_proxy.rescue.toolbox import Toolbox

OPEN: Final = "<think>"
CLOSE: Final = "</think>"
SEED_OPEN: Final = "<seed:think>"
SEED_CLOSE: Final = "</seed:think>"
GEMMA_OPEN: Final = "<|channel>thought"
GEMMA_CLOSE: Final = "<channel|>"
MM_OPEN: Final = "<mm:think>"
MM_CLOSE: Final = "</mm:think>"
_CLOSERS: Final = {OPEN: CLOSE, SEED_OPEN: SEED_CLOSE, GEMMA_OPEN: GEMMA_CLOSE, MM_OPEN: MM_CLOSE}


class ReasoningParser(MarkerParser):
    def __init__(self, close: str = CLOSE) -> None:
        self._carry = Carry()
        self._close = close

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        s, i = carry.join(text, start)
        close = self._close
        k = s.find(close, i)
        if k >= 0:
            return reject(carry.base + k + len(close))
        keep = max(i, len(s) - len(close) + 1)  # a closer may be cut at the piece's end
        return carry.pass_through(s, keep)

    def finish(self) -> Verdict:
        return reject(self._carry.end)


class Reasoning(Family):
    name = "reasoning"
    openers = tuple(Opener(opener, line_start=True) for opener in _CLOSERS)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return ReasoningParser(_CLOSERS[opener])
