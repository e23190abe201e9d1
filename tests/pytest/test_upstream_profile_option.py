"""``--upstream-profile``: the servers a run plays, named one by one, all, none, or the default sample."""

from __future__ import annotations

import pytest

from harness.core.dialects.servers import SERVERS
from harness.pytest.session import parse_servers


@pytest.mark.parametrize(("value", "bundled", "names", "sample"), [
    ("tgi,gemini", True, ["tgi", "gemini"], False),
    ("gemini, tgi,gemini", False, ["gemini", "tgi"], False),  # each once, in the order asked
    ("vllm", True, ["vllm"], False),
    ("all", False, list(SERVERS), False),
    ("none", True, [], False),
    (None, True, list(SERVERS), True),
    (None, False, [], False),
])
def test_the_servers_a_run_plays(value: str | None, bundled: bool, names: list[str], sample: bool) -> None:
    servers, sampled = parse_servers(value, bundled=bundled)
    assert [s.name for s in servers] == names and sampled is sample


def test_an_unknown_server_names_the_choices() -> None:
    with pytest.raises(ValueError, match="choose from"):
        parse_servers("tgi,nope", bundled=True)
