"""The rule registry: every conformance rule, its stable id, and the check behind it.

Each group module is named for its rules' id prefix (``HTTP-001`` is in ``http.py``)
and declares its rules with ``rule_group(...)``; a rule's decorator says what is behaviour (its check,
stage, profiles, features), and the group's catalogue beside it (``http.yaml``,
``harness.judge.rules.catalogue``) what the rule says and who it breaks. Registering is the only
side effect of importing a group module. Ids never change meaning once
published: a retired rule keeps its id out of use.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar, Unpack

from harness.core.dialects import OPENAI
from harness.core.dialects.clients import ANTHROPIC_CLIENT, RESPONSES_CLIENT
from harness.core.dialects.clients import CLIENTS as PROFILES_BY_NAME
from harness.core.dialects.clients import ClientProfile as Profile
from harness.judge.rules.catalogue import Described, RuleCatalogueError, Severity, load
from harness.judge.rules.citations import Breaks
from harness.judge.rules.context import Context
from harness.judge.rules.terms import Options, Stage

_ID = re.compile(r"^[A-Z]+-\d{3}$")


@dataclass(frozen=True)
class Rule:
    id: str
    statement: str
    severity: Severity
    group: str
    # Who breaks, for a client rule (required); the spec pages a rule comes from (optional).
    breaks: Breaks | None = None
    source: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Violation:
    """One instance of a broken rule; a rule's violations fold into one failure."""

    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)


Check = Callable[[Context], Iterable[Violation]]
PairCheck = Callable[[Context, Context], Iterable[Violation]]
# Judges every answer of one test item together: (label of the exchange, its reading).
ItemCheck = Callable[[Sequence[tuple[str, Context]]], Iterable[Violation]]
# Judges a round of exchanges played one after another and at once (``harness.judge.rules.iso.Round``).
RoundCheck = Callable[[Any], Iterable[Violation]]
C = TypeVar("C", PairCheck, ItemCheck, RoundCheck)


@dataclass(frozen=True)
class Entry:
    rule: Rule
    stage: Stage
    profiles: frozenset[Profile]
    features: frozenset[str]
    check: Check | None = None
    pair_check: PairCheck | None = None
    item_check: ItemCheck | None = None
    round_check: RoundCheck | None = None
    # Judges how a complete answer ends (a finish reason, a usage chunk): not applied
    # to a stream that ended with an error the scenario accepts.
    ending: bool = False
    # Asked for when any one of ``features`` is claimed, not only all of them: the check judges the
    # promises of each feature the proxy claims (the cases say which).
    any_feature: bool = False

    def enabled(self, options: Options) -> bool:
        """Whether ``options`` ask for this rule at all (severity, profile, features)."""
        return (
            (self.rule.severity != "spec" or options.strict)
            and options.profile.judged_as in self.profiles
            and (bool(self.features & options.features) if self.any_feature else self.features <= options.features)
        )


ENTRIES: dict[str, Entry] = {}
# The profiles a rule applies to: those reading Chat Completions answers (openai, xml-client), ...
OPENAI_PROFILES: frozenset[Profile] = frozenset(p for p in PROFILES_BY_NAME.values() if p.answers is OPENAI)
ANTHROPIC: frozenset[Profile] = frozenset({ANTHROPIC_CLIENT})
RESPONSES: frozenset[Profile] = frozenset({RESPONSES_CLIENT})
EVERY_PROFILE: frozenset[Profile] = frozenset(PROFILES_BY_NAME.values())
# The default of a rule: the OpenAI chat-completions dialect, whichever client reads it.
ALL_PROFILES = OPENAI_PROFILES


def _register(entry: Entry) -> None:
    rule = entry.rule
    if not _ID.match(rule.id):
        raise ValueError(f"rule id {rule.id!r} is not PREFIX-NNN")
    if rule.id in ENTRIES:
        raise ValueError(f"rule id {rule.id} is registered twice")
    if (rule.severity == "feature") != bool(entry.features):
        raise ValueError(f"rule {rule.id}: a rule of severity 'feature' names the features it judges, and only it")
    ENTRIES[rule.id] = entry


class Said(TypedDict, total=False):
    """What a rule's decorator may say besides its id (``profiles``: where it is judged, the
    group's profiles unless said); the rest of the rule is its catalogue entry."""

    profiles: Iterable[Profile]


class RuleGroup:
    """The decorators one group module registers its rules with, and what its rules share
    unless one says otherwise: the stage they judge and the profiles they are judged in. What each
    rule says comes from ``described``: the group module's catalogue (``<prefix>.yaml``) unless given."""

    def __init__(self, group: str, prefix: str, *, stage: Stage = "answer",
                 profiles: Iterable[Profile] = ALL_PROFILES,
                 described: Mapping[str, Described] | None = None) -> None:
        self.group = group
        self.prefix = prefix
        self.stage: Stage = stage
        self.profiles = frozenset(profiles)
        self.catalogue = f"harness/judge/rules/{prefix.lower()}.yaml"
        self.described = load(prefix.lower()) if described is None else described

    def _rule(self, rule_id: str) -> Rule:
        if not rule_id.startswith(self.prefix + "-"):
            raise ValueError(f"rule {rule_id} does not belong to group {self.group} ({self.prefix}-…)")
        said = self.described.get(rule_id)
        if said is None:
            raise RuleCatalogueError(f"{self.catalogue}: {rule_id}: the rule is registered but has no entry")
        return Rule(rule_id, said.statement, said.severity, self.group, said.breaks, said.source)

    def _profiles(self, said: Said) -> frozenset[Profile]:
        return frozenset(said["profiles"]) if "profiles" in said else self.profiles

    def __call__(
        self,
        rule_id: str,
        *,
        stage: Stage | None = None,
        features: Iterable[str] = (),
        any_feature: bool = False,
        ending: bool = False,
        **said: Unpack[Said],
    ) -> Callable[[Check], Check]:
        """Register one rule with its catalogue entry (``stage``: the group's unless said;
        ``ending``: it judges how a complete answer ends, so a stream that ended with an error
        the scenario accepts is not asked for it; ``any_feature``: asked for when one of
        ``features`` is claimed)."""

        def register(check: Check) -> Check:
            _register(Entry(self._rule(rule_id), stage or self.stage, self._profiles(said),
                            frozenset(features), check=check, ending=ending, any_feature=any_feature))
            return check

        return register

    def found_by(self, sort: Callable[[Context], Mapping[str, Sequence[Violation]]]) -> Found:
        """The rules whose violations one pass over an exchange (``sort``, run once per exchange)
        finds and files under their ids: each is declared by calling the result with its id (and
        what else its decorator would say), and judged by that pass."""
        return Found(self, sort)

    def pair(self, rule_id: str, *, features: Iterable[str] = (),
             **said: Unpack[Said]) -> Callable[[PairCheck], PairCheck]:
        """A rule judging two exchanges of one scenario (streamed and not)."""
        return self._answers(rule_id, said, features, "pair_check")

    def item(self, rule_id: str, **said: Unpack[Said]) -> Callable[[ItemCheck], ItemCheck]:
        """A rule judging all the answers of one test item together (as written, without
        streaming, re-chunked)."""
        return self._answers(rule_id, said, (), "item_check")

    def round(self, rule_id: str, **said: Unpack[Said]) -> Callable[[RoundCheck], RoundCheck]:
        """A rule judging a round of exchanges of one scenario, played one after another
        and at once (``harness.run.isolation``)."""
        return self._answers(rule_id, said, (), "round_check")

    def _answers(self, rule_id: str, said: Said, features: Iterable[str],
                 kind: str) -> Callable[[C], C]:
        """Register a rule on several answers (its check goes in the entry's ``kind`` field)."""
        rule = self._rule(rule_id)

        def register(check: C) -> C:
            given: Any = check  # one of the three kinds, told apart by ``kind``
            _register(Entry(rule, "answer", self._profiles(said),
                            frozenset(features), pair_check=given if kind == "pair_check" else None,
                            item_check=given if kind == "item_check" else None,
                            round_check=given if kind == "round_check" else None))
            return check

        return register


@dataclass(frozen=True)
class Found:
    """Declares rules judged by one pass (``RuleGroup.found_by``): each takes what the pass files
    under its id."""

    group: RuleGroup
    sort: Callable[[Context], Mapping[str, Sequence[Violation]]]

    def __call__(self, rule_id: str, **said: Unpack[Said]) -> None:
        sort = self.sort

        def check(ctx: Context) -> Iterable[Violation]:
            return ctx.derived(sort).get(rule_id, ())

        check.__module__, check.__qualname__ = sort.__module__, sort.__qualname__
        self.group(rule_id, **said)(check)


def rule_group(group: str, prefix: str, *, stage: Stage = "answer",
               profiles: Iterable[Profile] = ALL_PROFILES,
               described: Mapping[str, Described] | None = None) -> RuleGroup:
    return RuleGroup(group, prefix, stage=stage, profiles=profiles, described=described)
