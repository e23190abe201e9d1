"""Claims of what an official Python SDK does with an answer that breaks a rule, and the recorded answers
they are checked on: the rule cases of every family (``rule_proofs.families``) by id, or answers built here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache

from rule_proofs import families
from support import sdk_clients as sdk
from support.chat_rules import exchange

from harness.core.exchange import Exchange
from harness.core.scenario.model import Scenario

OPENAI = "openai-python"
ANTHROPIC = "anthropic-sdk-python"
SDKS = (OPENAI, ANTHROPIC)


@dataclass(frozen=True)
class Answer:
    """One answer a claim feeds the SDK: its scenario and the exchange as the client received it."""

    scenario: Scenario
    exchange: Exchange


@cache
def _cases() -> dict[tuple[str, str], Answer]:
    found: dict[tuple[str, str], Answer] = {}
    for name, (accepted, broken, _) in families().items():
        for c in [*accepted, *broken]:
            found[(name.split()[0], c.id)] = Answer(c.scenario, c.exchange)
    return found


def case(case_id: str, family: str = "chat", *, edit: Callable[[bytes], bytes] | None = None) -> Callable[[], Answer]:
    """A rule case by id (family: chat, anthropic, faults, responses, translation), its bytes ``edit``-ed."""

    def answer() -> Answer:
        found = _cases()[(family, case_id)]
        if edit is None:
            return found
        return replace(found, exchange=replace(found.exchange, raw=edit(found.exchange.raw)))

    return answer


def built(sc: Scenario, raw: str) -> Callable[[], Answer]:
    return lambda: Answer(sc, exchange(sc, raw))


@dataclass(frozen=True)
class Claim:
    """What a rule's citation says one SDK does with an answer that breaks the rule."""

    rule: str
    client: str  # OPENAI or ANTHROPIC
    answer: Callable[[], Answer]
    says: str  # the breakage, as the citation describes it
    holds: Callable[[sdk.Reading, Answer], bool]
    # How the application reads the answer; by default the SDK's own reading of the dialect (a stream
    # through its accumulating helper, a body through ``create()``).
    reader: sdk.Reader | None = None

    @property
    def id(self) -> str:
        return f"{self.rule}-{self.client}-{self.says[:40]}"


def raises(pattern: str) -> Callable[[sdk.Reading, Answer], bool]:
    """The SDK (or the application's first plain use of its result) raises ``Type: message`` matching."""
    return lambda reading, _: reading.error is not None and re.search(pattern, reading.raised, re.DOTALL) is not None


def delivers(test: Callable[[sdk.Reading], bool]) -> Callable[[sdk.Reading, Answer], bool]:
    """Nothing raises, and what the application holds is as ``test`` says."""
    return lambda reading, _: reading.error is None and test(reading)


def default_reader(exchange: Exchange) -> sdk.Reader:
    by_dialect = {
        "openai": (sdk.openai_stream, sdk.openai_body),
        "anthropic": (sdk.anthropic_stream, sdk.anthropic_body),
        "responses": (sdk.responses_stream, sdk.responses_stream),
    }
    streamed, whole = by_dialect[exchange.profile.answers.name]
    return streamed if exchange.stream else whole


