"""The fixtures every test module may use, defined in ``tests/support``."""

import importlib
import pkgutil

import pytest
from support.servers import servers  # noqa: F401  (every live server in the tests is started through it)

# Run under Locust only: importing it would start gevent's monkey-patching in the test process.
_NOT_IMPORTED = frozenset({"harness.run.locustfile"})


def _import_the_project() -> None:
    """Hypothesis also draws from the constants of the local modules imported so far, so which
    modules a worker had imported when a property test ran changed its examples from one run to
    the next. Importing every module of the project first makes that pool the same on every run
    and every worker, whatever order the tests run in."""
    for package in ("harness", "mock_backends", "reference_proxy"):
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, package + "."):
            if info.name not in _NOT_IMPORTED:
                importlib.import_module(info.name)


def pytest_configure(config: pytest.Config) -> None:
    # `toolcall-conformance run` started in this folder collects scenarios, not these tests:
    # it loads this file all the same (pyproject's testpaths), and should not pay for them.
    if config.getoption("conformance_only", default=False):
        return
    from hypothesis import settings

    # The project's own suite gates every change, so its property tests play the same examples
    # on every run (derived from each test): a failure is the change's, never the draw's. New
    # examples are searched for by `toolcall-conformance fuzz` and the long runs, which print
    # their seed. No example has a deadline: a loaded machine makes any one slow, and speed is
    # measured by the benchmarks, never by a test.
    settings.register_profile("gate", derandomize=True, database=None, deadline=None)
    settings.load_profile("gate")
    _import_the_project()


def pytest_report_header(config: pytest.Config) -> list[str]:
    """Which build of the parser the tests exercise: its source, or a wheel's mypyc-compiled modules."""
    if config.getoption("conformance_only", default=False):
        return []
    from reference_proxy.rescue import COMPILED

    return [f"reference_proxy.rescue: {'compiled (mypyc)' if COMPILED else 'pure Python'}"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The ``long`` tests first (each worker of a parallel run collects the same order): started
    last, one of them would keep a single worker busy for minutes after the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
