"""A parser inside a value waits for the closing tag's first character (``MarkerParser.waits_for``):
the rescuer keeps the pieces without it aside and shows them joined with the next one. That
changes only the cost: every ``feed`` and ``finish`` answers what it answers when every piece is
shown as it comes, whatever the frame size, where the stream ends, and the buffer cap."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reference_proxy.rescue import Rescuer, ToolSpec
from reference_proxy.rescue.family import MarkerParser
from support.rescue import ALL

WRITE = ToolSpec(
    "write_file",
    {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
)
TOOLS = (*ALL, WRITE)
CODE = "".join(f"def step_{k}(x, y):\n    total = x + y * {k}\n    return total if total > 0 else -total\n\n" for k in range(12))
QUOTING = CODE + 'print("</para", 1 < 2)\n' + CODE  # a value that holds "<" and part of a closing tag


def _calls(value: str) -> list[str]:
    """One call writing ``value`` in each family that reads values as bare text up to a tag."""
    return [
        f"<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
        f"<parameter=content>\n{value}\n</parameter>\n</function>\n</tool_call>",
        f"<seed:tool_call>\n<function=write_file>\n<parameter=content>{value}</parameter>\n</function>\n</seed:tool_call>",
        f'<function_calls>\n<invoke name="write_file">\n<parameter name="content">{value}</parameter>\n</invoke>\n</function_calls>',
        f'<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">{value}</parameter>\n</invoke>\n</minimax:tool_call>',
        f'count\n<invoke name="write_file">\n<parameter name="content">{value}</parameter>\n</invoke>',
    ]


def _texts() -> Iterator[str]:
    for value in (CODE, QUOTING):
        for call in _calls(value):
            yield f"Writing it.\n{call}\nDone, then a < b."
            yield f"Writing it.\n{call[: len(call) * 2 // 3]}"  # the stream ends inside the value
            yield f"{call}{call}"


TEXTS = list(_texts())


def _run(text: str, size: int, cap: int) -> list[str]:
    rescuer = Rescuer(TOOLS, buffer_cap=cap)
    answers = [repr(rescuer.feed(text[i : i + size])) for i in range(0, len(text), size)]
    return [*answers, repr(rescuer.finish()), repr(rescuer.overflowed)]


@pytest.mark.parametrize("cap", [65536, 700])
@pytest.mark.parametrize("size", [1, 7, 16, 64, 900])
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_waiting_parsers_answer_every_feed_as_parsers_shown_every_piece(text: str, size: int, cap: int) -> None:
    waiting = _run(text, size, cap)
    with pytest.MonkeyPatch.context() as patch:  # no parser ever says it waits
        patch.setattr(MarkerParser, "waits_for", property(lambda self: "", lambda self, value: None))
        shown = _run(text, size, cap)
    assert waiting == shown


def test_a_value_s_pieces_are_kept_aside() -> None:
    """The check above could fail: a value in 16-char frames is mostly not shown piece by piece."""
    rescuer = Rescuer(TOOLS)
    text = _calls(CODE)[2]
    kept = 0
    for i in range(0, len(text), 16):
        rescuer.feed(text[i : i + 16])
        kept = max(kept, len(rescuer._unshown))
    assert kept > 10
    assert rescuer.calls_emitted == 1
