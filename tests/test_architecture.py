"""The import arrows between the three packages, as docs/architecture.md draws them.

Every import from one of ``harness``, ``mock_backends`` and ``reference_proxy`` into
another is listed here with the reason it exists; a new one fails until it is either
avoided or added with its reason, and a listed one that disappears must leave the list
(so the list only shrinks as the shared core forms). The reference proxy, an
independent implementation of the wire formats, never imports the harness's readers
or judges: a shared bug could then make both agree.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "mock_backends", "reference_proxy")

# The shared model every shell reads: scenarios, errors, exchange records, nonces, dialects,
# and the replay planning (what a scenario's backend sends, cut and faulted).
CORE = ("harness.core.scenario.loading", "harness.core.scenario.model", "harness.core.scenario.schema", "harness.core.scenario.checks",
        "harness.core.scenario.yaml_source", "harness.core.errors", "harness.core.exchange", "harness.core.nonce", "harness.core.dialects",
        "harness.core.replay", "harness.core.dialects.responses_request")
# What the harness reads and judges answers with: never the reference proxy's to use.
JUDGES = ("harness.judge.rules", "harness.judge.readers.sse", "harness.judge.readers.assemble", "harness.judge.compare", "harness.judge.readers.sdk_compat",
          "harness.judge.readers.xml_calls", "harness.judge.readers.transcript", "harness.judge.readers.anthropic_events", "harness.judge.markup", "harness.generate.formats",
          "harness.judge.readers.reading")

# (importing module, imported module prefix): why the arrow exists.
CROSSING: dict[tuple[str, str], str] = {
    # The shells that are about another shell: the CLI starts the mock and the proxy; the
    # embedded run serves both in-process.
    ("harness.cli.main", "mock_backends.cli"): "the CLI's mock command",
    ("harness.cli.main", "mock_backends.control"): "the CLI's run talks to the mock it started",
    ("harness.cli.main", "reference_proxy.cli"): "the CLI's proxy command",
    ("harness.run.embedded", "mock_backends.app"): "the bundled run serves the mock in-process",
    ("harness.run.embedded", "reference_proxy.app"): "the bundled run serves the reference proxy in-process",
    ("harness.run.embedded", "reference_proxy.config"): "the bundled run configures the reference proxy",
    # The harness drives the mock through its control client (arming scenarios, reading what arrived).
    ("harness.pytest.session", "mock_backends.control"): "arms scenarios, reads what reached the mock",
    ("harness.run.runner", "mock_backends.control"): "arms scenarios, reads what reached the mock",
    ("harness.run.proxy_client", "mock_backends.control"): "arms a scenario, reads what reached the mock",
    ("harness.run.health", "mock_backends.control"): "the preflight's exchange through the mock",
    ("harness.run.isolation", "mock_backends.control"): "isolation rounds arm several scenarios at once",
    ("harness.cli.fuzzing", "mock_backends.control"): "generated cases are armed like written ones",
    ("harness.run.fuzzing", "mock_backends.control"): "generated cases are armed like written ones",
    # The importer asks the reference proxy for a proposed expectation (one seam).
    ("harness.capture.importer", "reference_proxy.rescue"): "a capture's proposed calls, as the reference proxy rescues them",
    ("harness.capture.expect", "reference_proxy.rescue"): "a capture's proposed calls",
    ("harness.capture.expect", "reference_proxy.anthropic_message"): "a capture's proposed Messages answer",
    ("harness.capture.expect", "reference_proxy.dedup"): "a capture's proposed calls without a text copy",
    ("harness.capture.expect", "reference_proxy.request_shaping"): "a capture's proposed upstream request",
    # The mock reads the shared model (to become imports of the core).
    ("mock_backends.app", "harness.core.dialects"): "core: the wire dialects (endpoints, error types, request-id header)",
    ("mock_backends.app", "harness.core.errors"): "core: the exception tree",
    ("mock_backends.app", "harness.core.exchange"): "core: exchange records",
    ("mock_backends.app", "harness.core.nonce"): "core: the nonce that routes a request to its scenario",
    ("mock_backends.app", "harness.core.replay.fault_rate"): "core: faults at a rate",
    ("mock_backends.app", "harness.core.replay.openai"): "core: the Chat Completions replay planner",
    ("mock_backends.app", "harness.core.replay.wire"): "core: events and error answers",
    ("mock_backends.app", "harness.core.scenario.loading"): "core: the scenario model",
    ("mock_backends.cli", "harness.core.errors"): "core: the exception tree",
    ("mock_backends.cli", "harness.core.nonce"): "core: the nonce header",
    ("mock_backends.cli", "harness.core.replay.fault_rate"): "core: faults at a rate",
    ("mock_backends.cli", "harness.core.scenario.loading"): "core: the scenario model",
    ("mock_backends.cli", "harness.run.servers"): "a listening socket bound before the address is printed",
    ("mock_backends.control", "harness.core.errors"): "core: the exception tree",
    ("mock_backends.control", "harness.core.exchange"): "core: exchange records",
    ("mock_backends.control", "harness.core.scenario.loading"): "core: the scenario model",
    ("mock_backends.fault_rate", "harness.core.replay.fault_rate"): "core: the old import path of FaultRate",
    ("mock_backends.registry", "harness.core.dialects"): "core: the wire dialects its replay planners are keyed by",
    ("mock_backends.registry", "harness.core.errors"): "core: the exception tree",
    ("mock_backends.registry", "harness.core.exchange"): "core: exchange records",
    ("mock_backends.registry", "harness.core.nonce"): "core: nonces",
    ("mock_backends.registry", "harness.core.replay"): "core: the replay planners",
    ("mock_backends.registry", "harness.core.replay.openai"): "core: the Chat Completions replay planner",
    ("mock_backends.registry", "harness.core.scenario.loading"): "core: the scenario model",
    ("mock_backends.routes", "harness.core.dialects"): "core: the wire dialect each route serves",
    ("mock_backends.routes", "harness.core.replay"): "core: each dialect's replay planner",
    ("mock_backends.routes", "harness.core.replay.wire"): "core: events and error answers",
    ("mock_backends.streaming", "harness.core.replay.wire"): "core: events and how they are cut into writes",
    # The reference proxy: only the exception tree and a listening socket.
    ("reference_proxy.config", "harness.core.errors"): "core: the exception tree",
    ("reference_proxy.cli", "harness.run.servers"): "a listening socket bound before the address is printed",
}


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute imports, those inside functions included);
    ``from package import module`` counts as importing ``package.module`` too."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names if a.name.startswith("test_"))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def in_core(module: str) -> bool:
    """A core module or one inside a core package (a module whose name only starts like one,
    ``harness.replay_x``, is not in ``harness.core.replay``)."""
    return any(module == core or module.startswith(core + ".") for core in CORE)


def imports() -> set[tuple[str, str]]:
    """Every (module, imported module) pair among the three packages."""
    found: set[tuple[str, str]] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            here = _module(path)
            found.update((here, name) for name in imported(path) if name.split(".")[0] in PACKAGES)
    return found


def crossings() -> set[tuple[str, str]]:
    """The imports that cross from one package into another."""
    return {(m, name) for m, name in imports() if m.split(".")[0] != name.split(".")[0]}


def test_the_core_imports_only_the_core() -> None:
    assert sorted((m, name) for m, name in imports() if in_core(m) and not in_core(name)) == []


def test_every_import_across_packages_is_listed_with_its_reason() -> None:
    found = crossings()
    assert sorted(found - set(CROSSING)) == [], "new arrows between packages: avoid them or list them with a reason"
    assert sorted(set(CROSSING) - found) == [], "arrows no longer there: take them off the list"


def test_the_reference_proxy_never_uses_the_harness_readers_or_judges() -> None:
    used = {(m, name) for m, name in crossings() if m.startswith("reference_proxy")}
    assert [p for p in used if p[1].startswith(JUDGES)] == []
    assert all(in_core(name) or name == "harness.run.servers" for _, name in used)


def test_the_mock_reads_only_the_core_model() -> None:
    used = {name for m, name in crossings() if m.startswith("mock_backends")}
    assert sorted(n for n in used if not in_core(n) and n != "harness.run.servers") == []


def test_no_test_module_imports_another() -> None:
    """Test modules share builders and fixtures through ``tests/support``, never by
    importing each other: a test module is read on its own, and moving a test never
    breaks another file."""
    test_modules = {path.stem for path in (ROOT / "tests").glob("test_*.py")}
    found = sorted(
        (path.stem, name)
        for path in (ROOT / "tests").glob("test_*.py")
        for name in imported(path)
        if name.removeprefix("tests.").split(".")[0] in test_modules
    )
    assert found == [], "move what they share into tests/support"


# Small modules, one job each: a module past this many lines is split by job, unless it holds one concept that
# would only scatter if cut (each entry below says which).
MAX_LINES = 400
ONE_CONCEPT: dict[str, str] = {
    "harness/generate/formats/cases.py": "the case taxonomy: one small builder per case id, read as one table (docs/taxonomy.md "
                                "is generated from it)",
    "reference_proxy/pipeline.py": "one streamed chat-completions answer: a per-choice state machine whose held text, "
                                   "buffered native calls, numbering and finish share their invariants",
    "reference_proxy/anthropic_stream.py": "the same state machine for a streamed Messages answer",
    "reference_proxy/rescue/scanner.py": "the incremental rescuer: one scanning loop and the buffer it owns",
    "reference_proxy/http1.py": "one HTTP/1.1 client transport: connection, parser callbacks and body stream together",
    "reference_proxy/app.py": "the proxy's one ASGI app: its routes share the request path from reading the body to "
                              "choosing the answer path (what to send lives in the pure modules)",
}


def _lines() -> dict[str, int]:
    return {str(path.relative_to(ROOT)): len(path.read_text("utf-8").splitlines())
            for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))}


def test_modules_stay_small_unless_they_hold_one_concept() -> None:
    lines = _lines()
    too_long = {path: n for path, n in lines.items() if n > MAX_LINES and path not in ONE_CONCEPT}
    assert too_long == {}, f"split these by job (or, if one is a single concept, list it with the reason): {too_long}"


def test_the_one_concept_list_names_only_long_modules() -> None:
    """An entry whose module shrank below the limit (or is gone) leaves the list, so it only shrinks."""
    lines = _lines()
    assert sorted(p for p in ONE_CONCEPT if lines.get(p, 0) <= MAX_LINES) == []
