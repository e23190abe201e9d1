"""Shrinking a failing split to the few boundaries that matter: the predicate re-runs the exchange,
this module only decides which splits to try (pure, no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

DEFAULT_SHRINK_BUDGET: Final[int] = 30


@dataclass(frozen=True)
class Shrunk:
    splits: tuple[int, ...]  # still fails; minimal unless ``complete`` is False
    runs: int  # how many times the predicate ran
    complete: bool  # False: the budget ran out first


class _BudgetSpent(Exception):
    pass


def shrink(
    splits: Sequence[int], fails: Callable[[tuple[int, ...]], bool], *, budget: int = DEFAULT_SHRINK_BUDGET
) -> Shrunk:
    """Reduce a failing split to a 1-minimal one (removing any boundary makes it pass).

    Tries no split at all first; then, while the boundaries found so far do not fail
    alone, binary-searches the shortest prefix of the remaining ones that still fails
    with them: its last boundary is needed. A single bad boundary among hundreds costs
    about log2(n) runs, k of them about k·log2(n). ``fails`` is called at most
    ``budget`` times; ``splits`` itself is assumed to fail and is never re-run. Should
    the predicate not be monotone (a proxy that is flaky), the smallest split seen
    failing is returned and marked incomplete.
    """
    runs = 0
    seen: dict[tuple[int, ...], bool] = {}
    best = tuple(sorted(set(splits)))

    def test(candidate: Iterable[int]) -> bool:
        nonlocal runs, best
        key = tuple(sorted(candidate))
        if key not in seen:
            if runs >= budget:
                raise _BudgetSpent
            runs += 1
            seen[key] = fails(key)
            if seen[key] and len(key) < len(best):
                best = key
        return seen[key]

    found: list[int] = []
    remaining = list(best)
    try:
        while not test(found):
            if not remaining:
                return Shrunk(best, runs, False)  # not monotone: the last step passed after all
            lo, hi = 1, len(remaining)  # found + remaining[:hi] fails
            while lo < hi:
                mid = (lo + hi) // 2
                if test([*found, *remaining[:mid]]):
                    hi = mid
                else:
                    lo = mid + 1
            found.append(remaining[lo - 1])
            remaining = remaining[: lo - 1]
    except _BudgetSpent:
        return Shrunk(best, runs, False)
    return Shrunk(tuple(sorted(found)), runs, True)
