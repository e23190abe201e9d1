"""The bundled scenario library, read once per test process.

Reading and checking the library costs about 0.8 s of CPU; some thirty test modules use it,
and every xdist worker imports every module when it collects, so each module reading it for
itself cost the suite about half a minute of CPU per worker before a test ran. The
scenarios are frozen dataclasses; each call returns a new list of the same ones.
"""

from __future__ import annotations

from functools import cache

from harness.core.scenario import loading
from harness.core.scenario.model import Scenario


@cache
def bundled() -> tuple[Scenario, ...]:
    return tuple(loading.load_library())


def load_library() -> list[Scenario]:
    """The bundled library, as ``harness.core.scenario.loading.load_library()`` reads it."""
    return list(bundled())


@cache
def one_generated_cell_per_case() -> frozenset[str]:
    """The ids of the hand-written scenarios and of one generated cell per case id, the formats
    taken in turn (the first case's cell in the first format, the next case's in the next).

    What a proxy does around a rescued call (translating it, re-framing its answer) does not
    depend on the text format the call was rescued from, but on the shape of the answer: text
    before or after, several calls, a long argument, reasoning. Each case id is one such shape,
    so the runs that judge that part play each case once, not once per format; every cell is
    still played in its own dialect by the rechunked whole-library run."""
    cells: dict[str, list[Scenario]] = {}
    chosen: set[str] = set()
    for scenario in bundled():
        case = next((t.removeprefix("case-") for t in scenario.tags if t.startswith("case-")), None)
        if "generated" not in scenario.tags or case is None:  # a fuzz finding kept as a case is its own shape
            chosen.add(scenario.id)
        else:
            cells.setdefault(case, []).append(scenario)
    for turn, case in enumerate(sorted(cells)):
        in_formats = sorted(cells[case], key=lambda s: s.id)
        chosen.add(in_formats[turn % len(in_formats)].id)
    return frozenset(chosen)
