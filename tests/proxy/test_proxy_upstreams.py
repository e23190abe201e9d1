"""The reference proxy's upstream objects: one per upstream API, chosen once from the
configuration, and what each makes of a client's request."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

from reference_proxy.config import UPSTREAM_DIALECTS, ProxyConfig
from reference_proxy.errors import ProxyError
from reference_proxy.parts import parse_and_shape_messages
from reference_proxy.upstreams import REGISTRY, ClientBody, Upstream, upstream_for
from support.messages_requests import assistant, encoded, messages_request, system_message, user

ROOT = Path(__file__).resolve().parents[2]
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


# --------------------------------------------------------------------------- a system message inside Messages `messages`

# (id, the Messages client's request): Claude Code's <system-reminder> as a system message
# inside the conversation, a string or text blocks, between turns or last.
SYSTEM_MESSAGE_CASES: list[tuple[str, dict[str, Any]]] = [
    ("string-last", messages_request(user("Fix the test."), assistant("Reading it."), system_message(),
                                     system="You are Claude Code.")),
    ("blocks-between-turns", messages_request(user("Fix the test."), system_message(blocks=True),
                                              assistant("Reading it."), user("Go on."), stream=True)),
    ("two-without-top-level-system", messages_request(system_message("first"), user("Hi."),
                                                      system_message("second", blocks=True))),
]


def _said(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str))


def _client_sequence(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The Messages request as (role, text) in order, the top-level system prompt first."""
    head = [("system", body["system"])] if "system" in body else []
    return head + [(m["role"], _said(m["content"])) for m in body["messages"]]


def _upstream_sequence(dialect: str, sent: dict[str, Any]) -> list[tuple[str, str]]:
    """What the upstream got, as (role, text) in order."""
    if dialect == "openai":
        return [(m["role"], _said(m["content"])) for m in sent["messages"]]
    assert dialect == "responses"
    return [(item["role"], _said(item["content"])) for item in sent["input"] if item.get("type") == "message"]


def _sent(dialect: str, body: dict[str, Any]) -> tuple[bytes, bytes]:
    """The client's bytes, and the bytes a proxy calling a ``dialect`` upstream sends for them."""
    raw = encoded(body)
    req, shaped = parse_and_shape_messages(raw)
    upstream = upstream_for(ProxyConfig(upstream="http://h:1/v1", upstream_dialect=dialect), "anthropic")
    sent = ClientBody(req.body, raw) if shaped is None else ClientBody(shaped, encoded(shaped))
    return raw, upstream.messages_request([("anthropic-beta", "mid-conversation-system-2026-04-07")], sent,
                                          req.stream).content


@pytest.mark.parametrize(("case", "body"), SYSTEM_MESSAGE_CASES, ids=[c for c, _ in SYSTEM_MESSAGE_CASES])
def test_a_system_message_inside_messages_is_relayed_to_a_messages_upstream(case: str, body: dict[str, Any]) -> None:
    raw, content = _sent("anthropic", body)
    assert content == raw  # the same dialect: the body as it came, byte for byte


@pytest.mark.parametrize("dialect", ["openai", "responses"])
@pytest.mark.parametrize(("case", "body"), SYSTEM_MESSAGE_CASES, ids=[c for c, _ in SYSTEM_MESSAGE_CASES])
def test_a_system_message_inside_messages_keeps_its_text_and_place_upstream(case: str, body: dict[str, Any],
                                                                            dialect: str) -> None:
    """A chat upstream gets a system message, a Responses upstream a system input message,
    each where the client's stood: never dropped, never moved to the front."""
    _, content = _sent(dialect, body)
    assert _upstream_sequence(dialect, json.loads(content)) == _client_sequence(body)


@pytest.mark.parametrize("content", [3, None, [{"type": "image", "source": {}}], [{"type": "text"}], "x"])
def test_only_a_text_system_message_is_taken(content: Any) -> None:
    raw = encoded(messages_request(user("Hi."), {"role": "system", "content": content}))
    if content == "x":
        assert parse_and_shape_messages(raw)[0].body["messages"][1] == {"role": "system", "content": "x"}
        return
    with pytest.raises(ProxyError) as raised:
        parse_and_shape_messages(raw)
    assert raised.value.status == 400 and "messages.1.content" in raised.value.message
