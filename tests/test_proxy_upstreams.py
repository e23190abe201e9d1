"""The reference proxy's upstream objects: one per upstream API, chosen once from the
configuration, and what each makes of a client's request."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reference_proxy.config import UPSTREAM_DIALECTS, ProxyConfig
from reference_proxy.upstreams import REGISTRY, Upstream, upstream_for

ROOT = Path(__file__).resolve().parent.parent
CLIENT_APIS = ("openai", "anthropic", "responses")


def test_the_registry_holds_every_upstream_dialect_the_configuration_accepts() -> None:
    assert sorted(REGISTRY) == sorted(d for d in UPSTREAM_DIALECTS if d != "native")
    assert all(cls.name == name and issubclass(cls, Upstream) for name, cls in REGISTRY.items())


@pytest.mark.parametrize("dialect", UPSTREAM_DIALECTS)
@pytest.mark.parametrize("client_api", CLIENT_APIS)
def test_each_client_api_is_served_by_the_configured_upstream(dialect: str, client_api: str) -> None:
    upstream = upstream_for(ProxyConfig(upstream="http://h:1/v1", upstream_dialect=dialect), client_api)
    assert upstream.name == (client_api if dialect == "native" else dialect)
    assert upstream.url.startswith("http://h:1/v1/")


def test_no_route_asks_which_api_the_upstream_speaks() -> None:
    """The routes hand requests and answers to their upstream object: none compares an API
    name or imports one upstream's module (a new dialect touches ``upstreams/`` only)."""
    for path in sorted((ROOT / "reference_proxy" / "routes").glob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        assert not {m for m in imported if m.startswith("reference_proxy.upstreams.")}, path.name
        compared = [node for node in ast.walk(tree) if isinstance(node, ast.Compare)
                    and any(isinstance(c, ast.Constant) and c.value in REGISTRY for c in [node.left, *node.comparators])]
        assert compared == [], path.name


def test_no_private_name_is_imported_across_the_proxys_modules() -> None:
    for path in sorted((ROOT / "reference_proxy").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reference_proxy"):
                assert not [a.name for a in node.names if a.name.startswith("_")], f"{path}: {node.module}"
