"""Live servers in tests: every one is started through the ``servers`` fixture, which
stops them all at teardown, or in a process of their own with ``served_apart``."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from multiprocessing.connection import Connection
from typing import Any, TypeVar

import pytest

from harness.run.servers import RunningServer, serve

ServeFn = Callable[[Any], RunningServer]
T = TypeVar("T")


@pytest.fixture
def servers() -> Iterator[ServeFn]:
    """Start any number of ASGI apps on free loopback ports; all stop at teardown."""
    with ExitStack() as stack:

        def start(app: Any) -> RunningServer:
            return stack.enter_context(serve(app))

        yield start


# Seconds a process of servers has to start: a spawned interpreter imports the app first.
APART_STARTUP = 60.0


def _serve_apart(build: Callable[[ExitStack], Any], conn: Connection) -> None:
    with ExitStack() as stack:
        conn.send(build(stack))
        try:
            conn.recv()  # the word to stop; EOF when the test's process is gone
        except EOFError:
            pass


@contextmanager
def served_apart(build: Callable[[ExitStack], T]) -> Iterator[T]:
    """What ``build`` starts (servers entered on the stack it gets; it returns where they
    listen), in a process of its own until the block ends. For the servers whose verdict
    hangs on their timing, such as whether the bytes of two writes reach the proxy as two
    reads: the test's own process may be busy (drawing cases, holding the interpreter's
    lock), and a server thread beside it would read late. ``build`` is pickled: a function
    of a module."""
    context = multiprocessing.get_context("spawn")  # this process runs threads: no fork
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve_apart, args=(build, theirs), daemon=True, name="servers-apart")
    process.start()
    theirs.close()
    try:
        if not ours.poll(APART_STARTUP):
            raise AssertionError(f"the servers apart did not start in {APART_STARTUP:.0f} s")
        yield ours.recv()
    finally:
        try:
            ours.send(None)
        except OSError:
            pass
        ours.close()
        process.join(10)
        if process.is_alive():
            process.kill()
            process.join(5)
