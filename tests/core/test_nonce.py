"""Where the harness puts its nonce, and how the mock reads it back: pure, no server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness.core.dialects import DIALECTS
from harness.core.nonce import NONCE_RE, find_nonce, new_nonce, nonce_line, place_nonce

OLD, NEW = new_nonce(), new_nonce()
TEXT_PART = {"type": "text", "text": "Look at this."}
RESULT_BLOCK = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "done"}


def _lines(body: Any) -> list[str]:
    """Every nonce in the body's text, in order (one per copy)."""
    return [m.decode() for m in NONCE_RE.findall(json.dumps(body).encode())]


def _user_texts(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body["messages"]:
        if message.get("role") == "user":
            content = message["content"]
            texts.append(content if isinstance(content, str) else json.dumps(content))
    return texts


# (dialect, messages, how many user turns must carry the line)
PLACEMENTS: dict[str, tuple[str, list[dict[str, Any]], list[bool]]] = {
    "one-turn": ("openai", [{"role": "user", "content": "Hi."}], [True]),
    "two-turns": ("openai", [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                             {"role": "user", "content": "C"}], [True, True]),
    "middle-turn-untouched": ("openai", [{"role": "user", "content": "A"}, {"role": "user", "content": "B"},
                                         {"role": "tool", "tool_call_id": "x", "content": "r"},
                                         {"role": "user", "content": "C"}], [True, False, True]),
    "parts": ("openai", [{"role": "system", "content": "S"}, {"role": "user", "content": [TEXT_PART]}], [True]),
    "null-content": ("openai", [{"role": "user", "content": None}], [True]),
    "anthropic-blocks": ("anthropic", [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"},
                                       {"role": "user", "content": [RESULT_BLOCK]}], [True, True]),
}


@pytest.mark.parametrize("case", list(PLACEMENTS))
def test_the_nonce_goes_in_the_first_and_last_user_turns_and_the_user_id(case: str) -> None:
    dialect, messages, marked = PLACEMENTS[case]
    body = {"model": "m", "messages": messages}
    placed = place_nonce(body, NEW, DIALECTS[dialect])
    assert body == {"model": "m", "messages": messages}, "the caller's body is untouched"
    user_id = placed["metadata"]["user_id"] if dialect == "anthropic" else placed["user"]
    assert user_id == NEW and ("user" in placed) == (dialect == "openai")
    assert [NEW in text for text in _user_texts(placed)] == marked
    assert _lines(placed["messages"]) == [NEW] * sum(marked), "one line per marked turn"
    others = [m for m in placed["messages"] if m.get("role") != "user"]
    assert others == [m for m in messages if m.get("role") != "user"]
    for before, after in zip(messages, placed["messages"]):
        if isinstance(before.get("content"), list):  # the client's own parts stay, in order, before the line
            assert after["content"][: len(before["content"])] == before["content"]
            assert after["content"][len(before["content"]):] in ([], [{"type": "text", "text": nonce_line(NEW)}])
    assert place_nonce(placed, NEW, DIALECTS[dialect]) == placed, "placing again changes nothing"


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_a_new_nonce_replaces_an_old_one_everywhere(dialect: str) -> None:
    messages = [{"role": "user", "content": "A"}, {"role": "assistant", "content": "B"},
                {"role": "user", "content": [TEXT_PART]}]
    old = place_nonce({"model": "m", "messages": messages}, OLD, DIALECTS[dialect])
    new = place_nonce(old, NEW, DIALECTS[dialect])
    assert OLD not in json.dumps(new) and _lines(new) == [NEW] * 3
    assert new == place_nonce({"model": "m", "messages": messages}, NEW, DIALECTS[dialect])


@pytest.mark.parametrize(
    ("dialect", "given", "kept"),
    [("openai", {"user": "alice"}, True), ("anthropic", {"metadata": {"user_id": "alice"}}, True),
     ("openai", {"user": OLD}, False), ("anthropic", {"metadata": {"user_id": OLD}}, False)],
    ids=["openai-own", "anthropic-own", "openai-old-nonce", "anthropic-old-nonce"],
)
def test_the_clients_own_user_id_is_kept_but_an_old_nonce_is_not(dialect: str, given: dict[str, Any],
                                                                 kept: bool) -> None:
    placed = place_nonce({"messages": [{"role": "user", "content": "x"}], **given}, NEW, DIALECTS[dialect])
    user_id = placed["metadata"]["user_id"] if dialect == "anthropic" else placed["user"]
    assert user_id == ("alice" if kept else NEW)


def test_content_that_is_not_text_is_left_as_written() -> None:
    odd = {"role": "user", "content": {"not": "text"}}
    placed = place_nonce({"messages": [odd, {"role": "user", "content": 7}]}, NEW)
    assert placed["messages"] == [odd, {"role": "user", "content": 7}] and placed["user"] == NEW


@pytest.mark.parametrize(
    ("headers", "body", "armed", "found"),
    [
        ({}, b"{}", set(), None),
        ({"x-conformance-nonce": OLD}, NEW.encode(), {NEW}, NEW),  # the stale header copy loses
        ({"x-other": f"a {OLD} b"}, f'"{NEW}" "{OLD}"'.encode(), {OLD}, OLD),
        ({}, f"{OLD} {NEW}".encode(), set(), OLD),  # none armed: the first, so the answer can name it
        ({"x-conformance-nonce": NEW}, b"", None, NEW),
    ],
    ids=["none", "stale-header", "armed-anywhere", "nothing-armed", "no-registry"],
)
def test_find_nonce_prefers_an_armed_run(headers: dict[str, str], body: bytes, armed: set[str] | None,
                                         found: str | None) -> None:
    assert find_nonce(headers, body, None if armed is None else armed.__contains__) == found


def test_a_new_nonce_and_its_line_are_what_the_patterns_find() -> None:
    """The nonce, the line holding it and the patterns that find them are built from one
    pattern: what the harness writes is what the mock and a rerun recognise."""
    nonce = new_nonce()
    assert NONCE_RE.fullmatch(nonce.encode())
    line = nonce_line(nonce)
    again = place_nonce({"messages": [{"role": "user", "content": f"Q\n\n{line}"}]}, NEW)
    assert again["messages"][0]["content"] == f"Q\n\n{nonce_line(NEW)}"  # found as a line: replaced, not added
