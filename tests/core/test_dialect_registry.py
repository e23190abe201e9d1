"""The dialects and client profiles are objects held everywhere between the edges, and
their registries (``DIALECTS``, ``CLIENTS``) are the one list of their names: every table
keyed by a dialect or a profile covers every registered one, the scenario schema names
them all, and the dialects import nothing of the scenario model (which imports them)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.core.dialects import DIALECTS, WireDialect, dialect, dialect_choices
from harness.core.dialects.clients import CLIENTS, OLD_NAMES, ClientProfile, client, default_profiles
from harness.core.errors import ScenarioError
from harness.core.replay.planned import _PLANNED
from harness.core.scenario.loading import parse_scenario
from harness.core.scenario.schema import scenario_schema
from harness.judge.readers.reading import READERS
from harness.judge.rules.locate import _PLACES
from harness.judge.rules.registry import EVERY_PROFILE
from harness.run.isolation import MALFORMED_EVENT
from harness.run.options import BY_NAME
from mock_backends.registry import PLANNERS
from mock_backends.routes import ROUTES

ROOT = Path(__file__).resolve().parents[2]

# Every table keyed by a dialect object: each must hold every registered dialect.
DIALECT_TABLES: dict[str, Mapping[WireDialect, Any]] = {
    "harness.judge.readers.reading.READERS": READERS,
    "harness.judge.rules.locate._PLACES": _PLACES,
    "harness.core.replay.planned._PLANNED": _PLANNED,
    "harness.run.isolation.MALFORMED_EVENT": MALFORMED_EVENT,
    "mock_backends.registry.PLANNERS": PLANNERS,
    "mock_backends.routes.ROUTES": ROUTES,
}
# Every set of profiles that stands for "all of them".
PROFILE_TABLES: dict[str, Any] = {
    "harness.judge.rules.registry.EVERY_PROFILE": EVERY_PROFILE,
}

# Names of dialects and profiles deliberately left where they are, at an edge:
# - the capture readers (``harness/capture``) name the dialect a capture file was read as
#   (``Capture.dialect``, Chat Completions or Messages only); the importer turns it into the
#   object (``harness.core.dialects.dialect``) where it chooses the case's profiles;
# - ``backend.upstream_dialects`` is read from a scenario's raw YAML (``Scenario.raw``);
# - the bundled proxies are started, and looked up, by the name of the upstream dialect they
#   call (``Shared.proxy_urls``, with ``native`` for each client's own), a command-line value;
# - ``ItemRecord`` (the JSON a worker sends its controller, and the reports) holds names.


@pytest.mark.parametrize("name", DIALECT_TABLES)
def test_every_table_keyed_by_dialect_covers_every_dialect(name: str) -> None:
    table = DIALECT_TABLES[name]
    assert all(isinstance(key, WireDialect) for key in table), f"{name} is keyed by dialect objects"
    assert set(table) == set(DIALECTS.values()), f"{name} lacks {set(DIALECTS.values()) - set(table)}"


@pytest.mark.parametrize("name", PROFILE_TABLES)
def test_every_table_of_profiles_covers_every_profile(name: str) -> None:
    assert set(PROFILE_TABLES[name]) == set(CLIENTS.values())


def test_the_registries_are_keyed_by_their_objects_names() -> None:
    assert all(d.name == name for name, d in DIALECTS.items())
    assert all(p.name == name for name, p in CLIENTS.items())
    assert all(p.answers in DIALECTS.values() and p.written_in in DIALECTS.values() for p in CLIENTS.values())


def test_the_option_choices_come_from_the_registries() -> None:
    assert BY_NAME["client-profile"].choices == (*CLIENTS, *OLD_NAMES, "all")
    assert BY_NAME["upstream-dialect"].choices == ("natural", *DIALECTS, "spread", "all")
    assert dialect_choices("or") in BY_NAME["upstream-dialect"].help


def test_the_scenario_schema_names_every_registered_dialect_and_profile() -> None:
    defs = scenario_schema()["$defs"]
    backend, case_client = defs["backend"]["properties"], defs["client"]["properties"]
    assert backend["dialect"]["enum"] == list(DIALECTS)
    assert backend["upstream_dialects"]["items"]["enum"] == list(DIALECTS)
    # A case is written under a profile of its own API; a translating client only plays it.
    written = [p.name for p in CLIENTS.values() if p.written_as is None]
    assert sorted(case_client["profile"]["enum"]) == sorted([*written, *OLD_NAMES])
    assert sorted(case_client["profiles"]["items"]["enum"]) == sorted([*CLIENTS, *OLD_NAMES])


def test_an_unknown_name_is_refused_naming_every_registered_one() -> None:
    with pytest.raises(ValueError) as exc:
        dialect("gemini")
    assert all(name in str(exc.value) for name in DIALECTS)
    with pytest.raises(ValueError) as exc:
        client("cursor")
    assert all(name in str(exc.value) for name in (*CLIENTS, *OLD_NAMES))
    assert client("vtc") is CLIENTS["xml-client"]


def test_a_loaded_scenario_holds_the_objects() -> None:
    scenario = parse_scenario({
        "id": "inline-objects", "title": "t", "source": "s",
        "backend": {"dialect": "anthropic", "frames": ["hi"]},
        "client": {"profile": "anthropic", "request": {"model": "m", "max_tokens": 5,
                                                       "messages": [{"role": "user", "content": "x"}]}},
        "expect": {"content": "hi", "finish_reason": "end_turn"},
    })
    assert scenario.backend.dialect is DIALECTS["anthropic"]
    assert scenario.client.profile is CLIENTS["anthropic"]
    assert scenario.client.profiles == default_profiles(CLIENTS["anthropic"])
    assert all(isinstance(p, ClientProfile) for p in scenario.client.profiles)
    assert scenario.client.dialect is DIALECTS["anthropic"]


def test_a_scenario_naming_an_unknown_dialect_is_refused_with_the_registered_names() -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario({"id": "inline-unknown", "title": "t", "source": "s",
                        "backend": {"dialect": "gemini", "frames": ["hi"]},
                        "client": {"request": {"model": "m", "messages": [{"role": "user", "content": "x"}]}},
                        "expect": {"content": "hi", "finish_reason": "stop"}})
    assert all(name in str(exc.value) for name in DIALECTS)


def _runtime_imports(path: Path) -> list[str]:
    """The modules ``path`` imports when it runs (imports under ``if TYPE_CHECKING:`` left out)."""
    tree = ast.parse(path.read_text("utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out.extend(alias.name for alias in node.names)
    return out


def test_the_dialects_import_nothing_of_the_scenario_model() -> None:
    """The scenario model imports the dialects (``Backend.dialect`` is one); the reverse would be a circle."""
    for path in sorted((ROOT / "harness" / "core" / "dialects").glob("*.py")):
        bad = [m for m in _runtime_imports(path) if m.startswith("harness.core.scenario")]
        assert not bad, f"{path.name} imports {bad}"
    probe = ("import sys, harness.core.dialects, harness.core.dialects.clients, harness.core.dialects.profiles, "
             "harness.core.dialects.script; "
             "print([m for m in sys.modules if m.startswith('harness.core.scenario')])")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert loaded.stdout.strip() == "[]"


def test_the_option_tables_of_the_docs_name_every_registered_dialect_and_profile() -> None:
    """The docs' option tables are written by hand: this says when one falls behind the registries."""
    rows = {line.split("|")[1].strip(): line for line in (ROOT / "docs" / "harness.md").read_text("utf-8").splitlines()
            if line.startswith("| `--")}
    profile_row = next(row for flag, row in rows.items() if flag.startswith("`--client-profile"))
    dialect_row = next(row for flag, row in rows.items() if flag.startswith("`--upstream-dialect"))
    assert all(f"`{name}`" in profile_row or f"\\|{name}" in profile_row or f" {name}\\|" in profile_row
               for name in CLIENTS), profile_row[:200]
    assert all(f"`{name}`" in dialect_row for name in DIALECTS), dialect_row[:200]


def test_no_code_compares_a_dialect_or_profile_by_its_name() -> None:
    """Between the edges a dialect or profile is its object: no ``x == "anthropic"`` and no table
    keyed by two or more of their names anywhere in the three packages (a table is keyed by the objects)."""
    names = set(DIALECTS) | set(CLIENTS)
    found = []
    for package in ("harness", "reference_proxy", "mock_backends"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.Compare) and any(isinstance(op, ast.Eq | ast.NotEq) for op in node.ops):
                    if any(isinstance(s, ast.Constant) and s.value in names for s in (node.left, *node.comparators)):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: compares a name")
                if isinstance(node, ast.Dict):
                    keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                    if sum(k in names for k in keys) >= 2:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: a table keyed by names")
    assert found == [], "hold the objects (DIALECTS[name] / CLIENTS[name] at the edge):\n" + "\n".join(found)
