"""The house's walls: the layers the folders show, and the import arrows between the packages.

``harness`` is cut into layer folders, each importing only the layers before it in
``LAYERS`` (docs/architecture.md draws them); nothing imports in a circle, by any kind of
import (at the top, inside a function, or under ``TYPE_CHECKING``); no module imports another
module's private name, and only a package's ``__init__`` passes names on (no facade
modules); each package says in ``__all__`` which of its modules and names are its public face,
and the other packages use only that. Every import from one of ``harness``, ``mock_backends``
and ``reference_proxy`` into another is listed with its reason, unless it reads the shared
core, which the mock may always read. The reference proxy, an independent implementation of
the wire formats, never imports the harness's readers or judges: a shared bug could then make
both agree.
"""

from __future__ import annotations

import ast
import functools
import importlib
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("harness", "mock_backends", "reference_proxy")

# The harness's layers, lowest first: each imports only itself and those before it.
LAYERS = ("core", "judge", "generate", "report", "capture", "run", "agents", "pytest", "cli")
CORE = "harness.core"
# What the harness reads and judges answers with: never the reference proxy's to use.
JUDGES = ("harness.judge", "harness.generate")
# A listening socket bound before its address is printed: the one shell helper the mock's and the
# proxy's own commands share with the harness.
SOCKETS = "harness.run.servers"

# (importing module, imported module prefix): why the arrow exists. Reading the core is always
# allowed for the mock and the reference proxy's errors, and is not listed.
CROSSING: dict[tuple[str, str], str] = {
    # The shells that are about another shell: the CLI starts the mock and the proxy (the soak
    # each in a process of its own); the embedded run serves both in-process.
    ("harness.cli.main", "mock_backends.cli"): "the CLI's mock command",
    ("harness.cli.main", "reference_proxy.cli"): "the CLI's proxy command",
    ("harness.run.soak", "mock_backends.cli"): "the soak starts the mock's command in a process of its own",
    ("harness.run.soak", "reference_proxy.cli"): "the soak starts the proxy's command in a process of its own",
    ("harness.run.embedded", "mock_backends.app"): "the bundled run serves the mock in-process",
    ("harness.run.embedded", "reference_proxy.app"): "the bundled run serves the reference proxy in-process",
    ("harness.run.embedded", "reference_proxy.config"): "the bundled run configures the reference proxy",
    ("harness.run.embedded", "mock_backends.control"): "the bundled run arms the mock it serves on its registry",
    # The harness drives the mock through its control client (arming scenarios, reading what arrived).
    ("harness.pytest.session", "mock_backends.control"): "arms scenarios, reads what reached the mock",
    ("harness.run.runner", "mock_backends.control"): "arms scenarios, reads what reached the mock",
    ("harness.run.proxy_client", "mock_backends.control"): "arms a scenario, reads what reached the mock",
    ("harness.run.health", "mock_backends.control"): "the preflight's exchange through the mock",
    ("harness.run.isolation", "mock_backends.control"): "isolation rounds arm several scenarios at once",
    ("harness.run.fuzzing", "mock_backends.control"): "generated cases are armed like written ones",
    ("harness.run.fuzz_pool", "mock_backends.control"): "each worker arms the cases it plays on its own mock",
    # The importer asks the reference proxy for a proposed expectation.
    ("harness.capture.importer", "reference_proxy.rescue"): "a capture's proposed calls, as the reference proxy rescues them",
    ("harness.capture.expect", "reference_proxy.rescue"): "a capture's proposed calls",
    ("harness.capture.expect", "reference_proxy.anthropic_message"): "a capture's proposed Messages answer",
    ("harness.capture.expect", "reference_proxy.dedup"): "a capture's proposed calls without a text copy",
    ("harness.capture.expect", "reference_proxy.request_shaping"): "a capture's proposed upstream request",
    # The agents tier plays each agent against its own mock, arming one scenario and reading what arrived.
    ("harness.agents.runner", "mock_backends.control"): "arms an agent run's scenario, reads what reached the mock",
    # The mock's and the proxy's commands bind their socket before printing the address.
    ("mock_backends.cli", SOCKETS): "a listening socket bound before the address is printed",
    ("reference_proxy.cli", SOCKETS): "a listening socket bound before the address is printed",
}

# Circles still to be cut, each with what cuts it; the list only shrinks.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}
# Private names still imported across modules, (importer, module, name); the list only shrinks.
KNOWN_PRIVATE: frozenset[tuple[str, str, str]] = frozenset()


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES: dict[str, Path] = {_module(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _is_package(module: str) -> bool:
    return SOURCES[module].name == "__init__.py"


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"))


def _import_froms(module: str) -> Iterator[tuple[str, ast.alias]]:
    """Each (target module, imported alias) of ``from … import …`` in ``module``, relative ones resolved."""
    for node in ast.walk(_tree(SOURCES[module])):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".") if _is_package(module) else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield target, alias


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute imports, those inside functions and under
    ``TYPE_CHECKING`` included); ``from package import module`` counts as importing
    ``package.module`` too, and so does a ``"package.module:attribute"`` string, as the
    CLI names the commands it imports when they are called."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ":" in node.value:
            module, _, attribute = node.value.partition(":")
            if module in SOURCES and attribute.isidentifier():
                names.add(module)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names
                         if f"{node.module}.{a.name}" in SOURCES or a.name.startswith("test_"))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def in_core(module: str) -> bool:
    """A core module or one inside the core package (``harness.core_x`` is not in ``harness.core``)."""
    return module == CORE or module.startswith(CORE + ".")


def imports() -> set[tuple[str, str]]:
    """Every (module, imported module) pair among the three packages."""
    return {(here, name) for here, path in SOURCES.items() for name in imported(path) if name.split(".")[0] in PACKAGES}


def crossings() -> set[tuple[str, str]]:
    """The imports that cross from one package into another."""
    return {(m, name) for m, name in imports() if m.split(".")[0] != name.split(".")[0]}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 and parts[1] in LAYERS else None


def test_every_harness_module_lives_in_a_layer() -> None:
    loose = sorted(m for m in SOURCES if m.startswith("harness.") and layer(m) is None)
    assert loose == [], "put these in the layer folder they belong to"


def test_each_layer_imports_only_the_layers_before_it() -> None:
    upward = sorted((m, name) for m, name in imports()
                    if layer(m) is not None and name.startswith("harness.")
                    and (layer(name) is None or LAYERS.index(layer(name)) > LAYERS.index(layer(m))))
    assert upward == []


def test_the_core_imports_only_the_core() -> None:
    assert sorted((m, name) for m, name in imports() if in_core(m) and not in_core(name)) == []


def _edges() -> dict[str, set[str]]:
    """Module → the modules loading it loads: what it imports and those modules' packages
    (a package's ``__init__`` runs first), less the packages it is itself inside."""
    edges: dict[str, set[str]] = {}
    for here, path in SOURCES.items():
        found: set[str] = set()
        for name in imported(path):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                step = ".".join(parts[:i])
                if step in SOURCES and step != here and not here.startswith(step + "."):
                    found.add(step)
        edges[here] = found
    return edges


def circles() -> list[frozenset[str]]:
    """The strongly connected sets of more than one module (Tarjan, iteratively)."""
    edges = _edges()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(frozenset(members))
    return found


def test_no_import_circles() -> None:
    found = set(circles())
    assert sorted(map(sorted, found - set(KNOWN_CIRCLES))) == [], "cut these circles"
    assert sorted(map(sorted, set(KNOWN_CIRCLES) - found)) == [], "circles gone: take them off the list"


def test_no_private_name_is_imported_from_another_module() -> None:
    found = {(here, target, alias.name) for here in SOURCES for target, alias in _import_froms(here)
             if target.split(".")[0] in PACKAGES and alias.name.startswith("_") and f"{target}.{alias.name}" not in SOURCES}
    assert sorted(found - KNOWN_PRIVATE) == [], "give a shared helper a public name in the module that owns it"
    assert sorted(KNOWN_PRIVATE - found) == [], "no longer imported: take them off the list"


def test_only_a_package_passes_names_on() -> None:
    """``from x import a as a`` (an explicit re-export) belongs in a package's ``__init__``, its
    public face; a plain module that re-exports is a facade, and callers should import from
    where the name is defined."""
    facades = sorted((here, alias.name) for here in SOURCES if not _is_package(here)
                     for target, alias in _import_froms(here)
                     if target.split(".")[0] in PACKAGES and alias.asname == alias.name)
    assert facades == []


HARNESS_PACKAGES = sorted(m for m in SOURCES if m.split(".")[0] == "harness" and _is_package(m))


@pytest.mark.parametrize("package", HARNESS_PACKAGES)
def test_each_package_declares_its_public_face(package: str) -> None:
    """As httpx guards its exports: ``__all__`` is there, sorted, and every entry is a module of
    the package or a name it defines or imports."""
    module = importlib.import_module(package)
    assert module.__doc__, f"{package}: say in a docstring what the package is for"
    public = getattr(module, "__all__", None)
    assert isinstance(public, list) and public, f"{package}: declare __all__"
    assert public == sorted(public)
    missing = [n for n in public if not hasattr(module, n) and f"{package}.{n}" not in SOURCES]
    assert missing == []


def test_other_packages_use_only_a_package_s_public_face() -> None:
    """A module outside a harness package imports only the modules that package lists in ``__all__``."""
    faces = {p: set(importlib.import_module(p).__all__) for p in HARNESS_PACKAGES}
    inside: list[tuple[str, str]] = []
    for here, name in imports():
        for package, public in faces.items():
            if name.startswith(package + ".") and not (here == package or here.startswith(package + ".")):
                child = name[len(package) + 1:].split(".")[0]
                if f"{package}.{child}" in SOURCES and child not in public:
                    inside.append((here, name))
    assert sorted(inside) == [], "import the package's public modules, or add the module to its __all__"


def test_every_import_across_packages_is_listed_with_its_reason() -> None:
    found = {(m, name) for m, name in crossings() if not in_core(name)}
    assert sorted(found - set(CROSSING)) == [], "new arrows between packages: avoid them or list them with a reason"
    assert sorted(set(CROSSING) - found) == [], "arrows no longer there: take them off the list"


def test_the_reference_proxy_never_uses_the_harness_readers_or_judges() -> None:
    used = {name for m, name in crossings() if m.startswith("reference_proxy")}
    assert [n for n in used if n.startswith(JUDGES)] == []
    assert sorted(n for n in used if n != SOCKETS and n != "harness.core.errors") == []


def test_the_mock_reads_only_the_core_model() -> None:
    used = {name for m, name in crossings() if m.startswith("mock_backends")}
    assert sorted(n for n in used if not in_core(n) and n != SOCKETS) == []


def test_no_test_module_imports_another() -> None:
    """Test modules share builders and fixtures through ``tests/support``, never by
    importing each other: a test module is read on its own, and moving a test never
    breaks another file."""
    test_modules = {path.stem for path in (ROOT / "tests").rglob("test_*.py")}
    found = sorted(
        (path.stem, name)
        for path in (ROOT / "tests").rglob("test_*.py")
        for name in imported(path)
        if name.removeprefix("tests.").split(".")[0] in test_modules
    )
    assert found == [], "move what they share into tests/support"


# The tests mirror the source: one test package per source package (a harness layer, the reference proxy, the mock),
# and one for what tests the project as a whole. Shared builders live in tests/support/.
TEST_PACKAGES: dict[str, str] = {
    **{layer: f"harness/{layer}/" for layer in LAYERS},
    "proxy": "reference_proxy/",
    "mock": "mock_backends/",
    "project": "the whole project: its walls, packaging, docs, CI kit, benchmarks, scripts and mutant proxies",
}
# Beside the test packages: the fixtures, the shared builders, the broken proxies and the data the tests read.
TEST_HELPERS = {"conftest.py", "rule_proofs.py", "support", "fixtures", "mutants", "captures", "bad_scenarios"}
# Where a test file's name says it belongs (a hint in the failure message).
_BY_WORD = {"proxy": "proxy", "rescue": "proxy", "mock": "mock", "rules": "judge", "rule": "judge", "sse": "judge",
            "plugin": "pytest", "cli": "cli", "import": "capture", "capture": "capture", "report": "report",
            "agents": "agents", "fuzz": "generate", "formats": "generate", "dialects": "core", "scenarios": "core",
            "options": "run", "runner": "run", "soak": "run"}


def _belongs(path: Path) -> str:
    words = path.stem.removeprefix("test_").split("_")
    guess = next((_BY_WORD[w] for w in words if w in _BY_WORD), None)
    home = f"tests/{guess}/ ({TEST_PACKAGES[guess]})" if guess else "the test package of what it tests"
    return (f"{path.relative_to(ROOT)}: a test module lives in the test package of the source package it tests; "
            f"move it (git mv) to {home}; the packages: "
            + ", ".join(f"tests/{name}/ for {what}" for name, what in TEST_PACKAGES.items()))


def test_the_tests_mirror_the_source_packages() -> None:
    tests = ROOT / "tests"
    misplaced = [_belongs(p) for p in sorted(tests.glob("test_*.py"))]
    misplaced += [f"{p.relative_to(ROOT)}: tests/ holds the test packages ({', '.join(TEST_PACKAGES)}) and "
                  f"{', '.join(sorted(TEST_HELPERS))}; a test module goes into its package"
                  for p in sorted(tests.iterdir()) if p.name not in TEST_PACKAGES and p.name not in TEST_HELPERS
                  and not p.name.startswith((".", "__pycache__")) and not p.name.startswith("test_")]
    misplaced += [f"{p.relative_to(ROOT)}: only test modules (test_*.py) sit in a test package; shared builders "
                  "go to tests/support/" for name in TEST_PACKAGES if (tests / name).is_dir()
                  for p in sorted((tests / name).iterdir()) if p.suffix == ".py" and not p.name.startswith("test_")]
    assert misplaced == [], "\n".join(misplaced)


# Modules are cut by concept, not by line count: past this many lines a module is worth a second look (a
# warning), and one kept long on purpose says why here.
LONG = 400
ONE_CONCEPT: dict[str, str] = {
    "harness/core/dialects/habits.py": "one short rewrite per real server's habit: the catalogue the profiles share",
    "harness/generate/formats/cases.py": "the case taxonomy: one small builder per case id, read as one table (docs/taxonomy.md "
                                "is generated from it)",
    "reference_proxy/pipeline.py": "one streamed chat-completions answer: a per-choice state machine whose held text, "
                                   "buffered native calls, numbering and finish share their invariants",
    "reference_proxy/anthropic_stream.py": "the same state machine for a streamed Messages answer",
    "reference_proxy/rescue/scanner.py": "the incremental rescuer: one scanning loop and the buffer it owns",
    "reference_proxy/http1.py": "one HTTP/1.1 client transport: connection, parser callbacks and body stream together",
}


def _lines() -> dict[str, int]:
    return {str(path.relative_to(ROOT)): len(path.read_text("utf-8").splitlines()) for path in SOURCES.values()}


def test_long_modules_are_named_and_the_one_concept_list_only_shrinks() -> None:
    """A long module not on the list is a warning (is it one concept?); an entry whose module
    shrank below the limit, or is gone, fails until it leaves the list."""
    lines = _lines()
    long = {path: n for path, n in lines.items() if n > LONG and path not in ONE_CONCEPT}
    if long:
        warnings.warn(f"long modules: is each one concept? (list it with the reason) {long}", stacklevel=1)
    assert sorted(p for p in ONE_CONCEPT if lines.get(p, 0) <= LONG) == []
