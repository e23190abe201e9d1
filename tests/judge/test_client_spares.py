"""The spec rules split off a client rule, read by the installed official SDKs: every answer that breaks one
of them, and no client rule, reaches the application as a correct answer would (its text and calls whole, or
the error raised with its message), so the shapes they judge are rightly no client's breakage.

A client rule fails only the shapes its ``versions`` say break the current release (test_client_breaks.py
checks those); the rest of what the spec forbids is the spec rule named here beside it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rule_proofs import families
from support.sdk_claims import ANTHROPIC, OPENAI, Answer, Claim, case, default_reader, delivers, raises
from support.sdk_clients import Reading

from harness.judge.rules import RULES

# Each spec rule split off a client rule: the client rule, or None for a rule graded down whole (no current
# client breaks on any answer it fails).
SPLIT_FROM: dict[str, str | None] = {
    "AERR-003": "AERR-001", "AEV-014": "AEV-001", "AEV-015": "AEV-002", "CALLS-003": "CALLS-002",
    "RESP-013": "RESP-003", "TOOL-009": None, "UP-001": None,
}

_HELLO_WORLD = delivers(lambda r: r.first.content == "Hello world")
_CALL = delivers(lambda r: r.first.calls[0].name == "get_weather"
                 and r.first.calls[0].arguments == '{"city": "Paris", "unit": "celsius"}')
_WHOLE = delivers(lambda r: r.first.content == "Let me check." and r.first.calls[0].arguments == '{"city": "Paris"}')


def spare(rule: str, client: str, case_id: str, family: str, says: str,
          holds: Callable[[Reading, Answer], bool]) -> tuple[str, Claim]:
    return case_id, Claim(rule, client, case(case_id, family), says, holds)


SPARES: dict[str, Claim] = dict([
    spare("RESP-013", OPENAI, "delta-names-another-item", "responses", "a wrong item_id is ignored", _WHOLE),
    spare("RESP-013", OPENAI, "arguments-done-at-the-messages-index", "responses",
          "an arguments .done at another index is ignored", _WHOLE),
    spare("AERR-003", ANTHROPIC, "aerr-003-error-not-in-shape", "anthropic", "the error raises, its data the message",
          raises(r"^APIStatusError: \{'error': 'upstream died'\}")),
    spare("AERR-003", ANTHROPIC, "aerr-003-chat-completions-shaped-error-event", "anthropic",
          "the error raises, its data the message", raises(r"^APIStatusError: \{'error': \{'message': 'upstream died'")),
    spare("CALLS-003", OPENAI, "calls-003-wrong-finish", "chat", "text read whole whatever the finish", _HELLO_WORLD),
    spare("TOOL-009", OPENAI, "tool-009-finish-stop-with-calls", "chat", "a call finished at stop is read whole",
          _CALL),
    spare("UP-001", OPENAI, "up-001-nothing-reached-backend", "chat", "the answer is read whole", _HELLO_WORLD),
    spare("AEV-014", ANTHROPIC, "aev-014-wrong-name", "anthropic", "read by its data's type", _HELLO_WORLD),
    spare("AEV-015", ANTHROPIC, "aev-015-no-type", "anthropic", "an object without type is skipped", _HELLO_WORLD),
    spare("AEV-015", ANTHROPIC, "aev-015-empty-keep-alive", "anthropic", "a ping is skipped", _HELLO_WORLD),
])


@pytest.mark.parametrize("spare", SPARES.values(), ids=list(SPARES))
def test_the_current_release_reads_what_only_the_spec_forbids(spare: Claim) -> None:
    answer = spare.answer()
    reading = (spare.reader or default_reader(answer.exchange))(answer.exchange)
    assert spare.holds(reading, answer), (
        f"{spare.rule}: {spare.client} was to read this as a correct answer ({spare.says}), but raised "
        f"{reading.raised or 'nothing'}; {reading.choices}. Its shape breaks the client: move it to "
        f"{SPLIT_FROM[spare.rule] or 'client severity'}.")


def test_the_split_rules_are_graded_apart() -> None:
    for spec, client in SPLIT_FROM.items():
        assert RULES[spec].severity == "spec"
        assert client is None or RULES[client].severity == "client"


def test_every_case_that_breaks_only_a_split_off_rule_is_read_here() -> None:
    """A new case that breaks the spec part and no client rule is one the SDK must read as correct (cases that
    also break a client rule may be read here too, to show the spec part adds nothing to that breakage)."""
    alone = {c.id for _, broken, _ in families().values() for c in broken
             if set(c.fails) & set(SPLIT_FROM) and all(RULES[r].severity != "client" for r in c.fails)}
    assert alone <= set(SPARES), f"read these with the SDK here: {sorted(alone - set(SPARES))}"
