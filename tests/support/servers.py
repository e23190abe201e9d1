"""Live servers in tests: every one is started through the ``servers`` fixture, which
stops them all at teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from harness.run.servers import RunningServer, serve

ServeFn = Callable[[Any], RunningServer]


@pytest.fixture
def servers() -> Iterator[ServeFn]:
    """Start any number of ASGI apps on free loopback ports; all stop at teardown."""
    with ExitStack() as stack:

        def start(app: Any) -> RunningServer:
            return stack.enter_context(serve(app))

        yield start
