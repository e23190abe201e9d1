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
