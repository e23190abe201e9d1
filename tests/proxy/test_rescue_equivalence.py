"""The plain-text fast path's cheap tests stand in for dearer ones (a character class before the
line-opener pattern, a first character before a match, a last character before ``endswith``):
each may only answer "maybe" where the dearer one says yes, and a rescuer taking the fast path
gives, in order, the events of the general scanner alone, whatever the frames."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import pytest
from support.rescue import ALL
from support.rescue_cases import CASES

from reference_proxy.rescue import Event, Rescuer, scanner
from reference_proxy.rescue.openers import Openers

OPENERS: Openers = scanner._OPENERS
LINE_LITERALS = sorted(literal for literal, spec in OPENERS.specs.items() if spec.line_start)
WORD_LINE_PREFIXES = sorted({x[:k] for x in LINE_LITERALS if x[0].isalpha() for k in range(1, len(x))})
BLANKS = ["", " ", "\t", " \t ", "\n"]
AFTER = ["", "x", " ", "\n", "{", "(", "<b>"]


def _line_texts() -> Iterator[str]:
    """Text around a newline: every line opener and its word prefixes, behind blanks and
    before other text, with prose and near misses mixed in."""
    heads = ["", "word", "a.\n"]
    bodies = [*LINE_LITERALS, *WORD_LINE_PREFIXES, "fact", "cat", "{x", "[y", "<b>", "]", "x", ""]
    for head, blank, body, after in itertools.product(heads, BLANKS, bodies, AFTER):
        yield f"{head}\n{blank}{body}{after}"


LINE_TEXTS = list(_line_texts())


def test_the_line_hint_matches_wherever_the_line_pattern_does() -> None:
    risky = 0
    for text in LINE_TEXTS:
        for start in range(len(text)):
            piece = text[start:]
            if OPENERS.line_risk.search(piece) is not None:
                risky += 1
                assert OPENERS.line_risk_hint.search(piece) is not None, piece
    assert risky > 1000, "the texts must reach the line pattern"


def test_a_line_opener_here_starts_with_one_of_the_first_characters() -> None:
    found = 0
    for text in LINE_TEXTS:
        for start in range(len(text)):
            piece = text[start:]
            if OPENERS.line_here.match(piece) is not None:
                found += 1
                assert piece[0] in OPENERS.line_here_firsts, piece
    assert found > 500


def test_every_word_prefix_ends_in_one_of_the_last_characters() -> None:
    assert OPENERS.word_prefixes, "no word openers: the shortcut tests have nothing to stand in for"
    for prefix in OPENERS.word_prefixes:
        assert prefix[-1] in scanner._WORD_PREFIX_ENDS


WORDS = ["the", "count", "court", "cou", "coun", "cour", "co", "c", "account", "scout", "func", "call", "cat", "fact"]
SEPARATORS = [" ", "  ", ".\n", ".\n\n", "\n  ", "\n\t", ", "]
MARKUP = [
    '\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n',
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "a"}}\n</tool_call>',
    'count\n<invoke name="read_file">\n<parameter name="path">/etc/hosts</parameter>\n</invoke>',
    "\n[get_weather(city='Oslo')]\n",
    "\nfunctools[{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}]",
    "\ncall:get_weather{city:<|\"|>Rome<|\"|>}",
    "a < b and x[0]",
    "use `ls` here",
]


def _texts() -> list[str]:
    """Prose that puts word-opener letters and line starts at every frame boundary, with
    calls and near misses between, and the case table's texts."""
    rng = random.Random(2611)
    texts = []
    for k in range(60):
        parts = []
        for _ in range(rng.randint(20, 60)):
            parts.append(rng.choice(WORDS) + rng.choice(SEPARATORS))
            if rng.random() < 0.08:
                parts.append(rng.choice(MARKUP))
        text = "".join(parts)
        texts.append(text[: rng.randint(1, len(text))] if k % 4 == 0 else text)
    return texts + [case.text for case in CASES[::3]]


TEXTS = _texts()


def _events(text: str, sizes: list[int], cap: int) -> tuple[str, bool, bool]:
    """The events of ``text`` cut into frames of the ``sizes`` (repeated), adjacent texts
    joined; whether the rescuer overflowed, and whether any frame met the fast path."""
    rescuer = Rescuer(ALL, buffer_cap=cap)
    events: list[Event] = []
    fast = False
    i = 0
    for size in itertools.cycle(sizes):
        if i >= len(text):
            break
        fast = fast or rescuer._plain
        events += rescuer.feed(text[i : i + size])
        i += size
    events += rescuer.finish()
    return repr(scanner._merged(events)), rescuer.overflowed, fast


@pytest.mark.parametrize("cap", [65536, 40])
@pytest.mark.parametrize("sizes", [[1], [2], [3], [5], [7], [16], [64], [1, 4, 2, 9, 16, 3]], ids=str)
def test_the_fast_path_gives_the_general_scanner_s_events(sizes: list[int], cap: int) -> None:
    fast_seen = 0
    for text in TEXTS:
        events, overflowed, fast = _events(text, sizes, cap)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(scanner, "SHORTCUTS", False)
            patch.setattr(scanner, "_WORD_OPENER", None)
            general, general_overflowed, _ = _events(text, sizes, cap)
        assert (events, overflowed) == (general, general_overflowed), text
        fast_seen += fast
    assert fast_seen > len(TEXTS) // 4, "the fast path must be taken"
