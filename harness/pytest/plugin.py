"""The pytest plugin: ``pytest --proxy-url URL`` runs the conformance suite.

Inert unless ``--conformance`` or ``--proxy-url`` is given, so installing the package
changes nothing in an unrelated project (the harness itself is imported only then).
When active, every scenario becomes one test item ``conformance::<scenario-id>``
under a collector attached to the session, so ``-k``, ``-x``, ``--lf``,
``--junitxml`` and ``-n auto`` work as for any test.

Servers: the controlling process serves the mock backend (unless ``--mock-url``) and,
without ``--proxy-url``, the reference proxy, in ``pytest_configure``; pytest-xdist
workers get the URLs through ``workerinput`` and start nothing, except in a run of the
bundled reference proxy with a mock on any free port, where each worker serves its own
(``Shared.per_worker``): nothing outside the run needs to find them. Each item's result
travels back on its report (``conformance_record``) so the controller can print the
score card and write the JSON / Markdown reports.
"""


from __future__ import annotations

from typing import Any

import pytest

from harness.pytest.hooks import GroupedFailures, RunHooks
from harness.pytest.session import SESSION_PLUGIN, WORKER_KEY, ConformanceSession
from harness.run.options import BY_NAME, OPTIONS


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--conformance`` switches the suite on; every setting is ``--conformance-<name>``
    (``harness.run.options``), so no option of a user's own conftest can collide."""
    group = parser.getgroup("toolcall-conformance", "tool-call proxy conformance (toolcall-conformance)")
    group.addoption("--conformance", action="store_true", default=False,
                    help="Run the conformance suite (against the bundled reference proxy unless "
                         "--conformance-proxy-url).")
    group.addoption("--conformance-only", action="store_true", default=False,
                    help="Like --conformance, and collect nothing else (what 'toolcall-conformance run' passes).")
    for option in OPTIONS:
        if not option.pytest:
            continue
        kwargs: dict[str, Any] = {"dest": option.dest, "help": option.help}
        if option.kind == "flag":
            kwargs.update(action="store_true", default=bool(option.default))
        elif option.kind == "multiple":
            kwargs.update(action="append", default=[], metavar=option.metavar)
        else:
            kwargs.update(type=option.type, default=option.default, metavar=option.metavar)
            if option.choices:
                kwargs.update(choices=option.choices)
        group.addoption(option.pytest_flag, **kwargs)


def _enabled(config: pytest.Config) -> bool:
    return bool(
        config.getoption(BY_NAME["proxy-url"].dest)
        or config.getoption("conformance")
        or config.getoption("conformance_only")
        or config.getoption("conformance_fuzz")
    )


def pytest_configure(config: pytest.Config) -> None:
    if not _enabled(config):
        return
    session = ConformanceSession(config)
    config.add_cleanup(session.close)
    session.start()
    config.pluginmanager.register(session, SESSION_PLUGIN)
    config.pluginmanager.register(RunHooks(session), SESSION_PLUGIN + "-hooks")
    config.pluginmanager.register(GroupedFailures(session), SESSION_PLUGIN + "-causes")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: hand each worker the servers the controller started."""
    session = node.config.pluginmanager.get_plugin(SESSION_PLUGIN)
    if isinstance(session, ConformanceSession) and session.shared is not None:
        node.workerinput[WORKER_KEY] = session.shared.to_json()
