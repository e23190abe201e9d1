"""How the harness decides that two answers mean the same thing.

Shared by every rule that compares: expected vs received calls, content, and the
streaming vs non-streaming answer. Equality is semantic where clients are: key order
and white space never matter, types do (``true`` is never ``1``), numbers compare by
value. Differences are rendered as short, readable lines for failure messages.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_UNIT = re.compile(r"\s+|\S")


def folded_units(text: str) -> list[tuple[str, int]]:
    """The text as compared by default, unit by unit with the offset each starts at:
    the ends trimmed, and each inner run of white space one unit, a newline when it
    holds a line break (CR, LF or CRLF), else a space; every other character its own
    unit. Line structure counts (a proxy that turns a paragraph break into a space, or
    drops a newline delta, differs), while the number of blank lines where markup was
    cut out of the text does not."""
    units: list[tuple[str, int]] = []
    for m in _UNIT.finditer(text):
        piece = m.group()
        if not piece.isspace():
            units.append((piece, m.start()))
        elif units and m.end() < len(text):
            units.append(("\n" if "\n" in piece or "\r" in piece else " ", m.start()))
    return units


_SPACE = re.compile(r"\s+")


def fold_ws(text: str) -> str:
    """``text`` folded as ``folded_units`` says, as one string."""
    return _SPACE.sub(lambda m: "\n" if "\n" in m.group() or "\r" in m.group() else " ", text.strip())


def content_equal(expected: str, actual: str, *, exact: bool = False, lines_are_layout: bool = False) -> bool:
    """``lines_are_layout``: a line break and a space are alike too (the text outside an XML
    client's calls, which the proxy lays out on lines of their own wherever they stood)."""
    if exact:
        return expected == actual
    if lines_are_layout:
        return fold_ws(expected).replace("\n", " ") == fold_ws(actual).replace("\n", " ")
    return fold_ws(expected) == fold_ws(actual)


def matched_prefix(expected: str, actual: str, *, exact: bool = False) -> tuple[int, int]:
    """How far ``expected`` and ``actual`` agree as ``content_equal`` compares: the
    offsets in each where they part (a text's length where it ends first)."""
    if exact:
        same = len(os.path.commonprefix([expected, actual]))
        return same, same
    want, got = folded_units(expected), folded_units(actual)
    for (w, w_at), (g, g_at) in zip(want, got):
        if w != g:
            return w_at, g_at
    common = min(len(want), len(got))
    return (want[common][1] if common < len(want) else len(expected),
            got[common][1] if common < len(got) else len(actual))


def first_difference(expected: str, actual: str, *, exact: bool = False) -> int | None:
    """The offset in ``actual`` where it stops matching ``expected`` as ``content_equal``
    compares (its length when it matches a part of it only); None when they are equal."""
    at_expected, at_actual = matched_prefix(expected, actual, exact=exact)
    return None if (at_expected, at_actual) == (len(expected), len(actual)) else at_actual


def json_equal(a: Any, b: Any) -> bool:
    """Semantic JSON equality: mappings by keys, lists in order, numbers by value,
    bools and null strictly (a bool never equals a number)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    return False


def render(value: Any, limit: int = 120) -> str:
    """Compact JSON text for messages, shortened to ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(mapping: Any, key: str, label: str | None = None) -> str:
    """``<label> is <value>``, or ``no <label>`` when the key is absent, for messages."""
    label = label or key
    if not isinstance(mapping, Mapping) or key not in mapping:
        return f"no {label}"
    return f"{label} is {render(mapping[key])}"


def shorten(text: str, limit: int = 120) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[: limit - 2] + "…'"


@dataclass(frozen=True, slots=True)
class CallView:
    """A received call reduced to what comparison needs."""

    name: str
    arguments: Mapping[str, Any] | None  # None when the raw text is not one JSON object
    raw: str  # the arguments as received, for messages

    @classmethod
    def from_json_text(cls, name: str, text: str) -> CallView:
        parsed = parse_object(text)
        return cls(name, parsed, text)


def parse_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text``, or None when it is anything else."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


ValueEqual = Callable[[Any, Any], bool]  # (expected value, received value)


def _describe(name: str, args: Mapping[str, Any] | None, raw: str) -> str:
    return f"{name}({render(args) if args is not None else shorten(raw)})"


def argument_differences(expected: Mapping[str, Any], actual: Mapping[str, Any], equal: ValueEqual,
                         words: tuple[str, str] = ("expected", "got")) -> list[str]:
    """One line per argument that differs; ``words`` name the two sides (the reference first)."""
    ref, other = words
    out: list[str] = []
    for key in expected:
        if key not in actual:
            out.append(f"'{key}' missing ({ref} {render(expected[key])})")
        elif not equal(expected[key], actual[key]):
            out.append(f"'{key}': {ref} {render(expected[key])}, {other} {render(actual[key])}")
    for key in actual:
        if key not in expected:
            out.append(f"unexpected '{key}': {render(actual[key])}" if words == ("expected", "got")
                       else f"'{key}' only {other}: {render(actual[key])}")
    return out


def first_call_mismatch(
    expected: Sequence[tuple[str, Mapping[str, Any]]], actual: Sequence[CallView], equal: ValueEqual = json_equal
) -> int:
    """The position of the first received call that is not the one expected there
    (the shorter list's length when one list extends the other)."""
    for i, ((name, args), got) in enumerate(zip(expected, actual)):
        if got.name != name or got.arguments is None or argument_differences(args, got.arguments, equal):
            return i
    return min(len(expected), len(actual))


def diff_calls(
    expected: Sequence[tuple[str, Mapping[str, Any]]], actual: Sequence[CallView], equal: ValueEqual = json_equal,
    words: tuple[str, str] = ("expected", "got"),
) -> list[str]:
    """One line per position that differs; empty when the calls match in order. ``words`` name the two
    sides, the reference first: two answers of which neither is the expected one are not called "expected".

    Calls are paired by position; extra received calls that repeat an earlier one
    are named as duplicates, since that is the usual defect behind them."""
    lines: list[str] = []
    for i in range(max(len(expected), len(actual))):
        n = i + 1
        if i >= len(actual):
            name, args = expected[i]
            lines.append(f"#{n} missing: {words[0]} {_describe(name, args, '')}")
            continue
        got = actual[i]
        if i >= len(expected):
            dup = next(
                (
                    j + 1
                    for j in range(i)
                    if actual[j].name == got.name
                    and (
                        actual[j].raw == got.raw
                        or (
                            actual[j].arguments is not None
                            and got.arguments is not None
                            and json_equal(actual[j].arguments, got.arguments)
                        )
                    )
                ),
                None,
            )
            extra = f"#{n} extra: {_describe(got.name, got.arguments, got.raw)}"
            lines.append(extra + (f" (duplicate of #{dup})" if dup else ""))
            continue
        name, args = expected[i]
        problems: list[str] = []
        if got.name != name:
            problems.append(f"name: {words[0]} {name!r}, {words[1]} {got.name!r}")
        if got.arguments is None:
            problems.append(f"arguments are not one JSON object: {shorten(got.raw)}")
        else:
            problems.extend(argument_differences(args, got.arguments, equal, words))
        if problems:
            lines.append(f"#{n} {name}: " + "; ".join(problems))
    if lines:
        lines.insert(0, f"{words[0]} {len(expected)} call(s), {words[1]} {len(actual)}")
    return lines
