"""Where each rule is proven: the unit cases that break it and the mutants it catches.

``docs/rules.md`` shows them next to each rule's function; ``python tests/rule_proofs.py``
rewrites that file, and ``tests/judge/test_rule_proofs.py`` keeps it fresh and fails when a rule has
no breaking case or no mutant. It is the one index of the rule case files: each file
judges its own cases, and the checks that span them all ask ``families()``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from support.rule_family import Family

from harness.judge.rules.report import Proof

ROOT = Path(__file__).resolve().parent.parent
# The test modules whose cases prove the rules, each in the test package of what it tests (pytest puts a
# test module's folder on the path only when it collects that module).
for _folder in ("judge", "run"):
    if str(ROOT / "tests" / _folder) not in sys.path:
        sys.path.append(str(ROOT / "tests" / _folder))


def _chat_modules() -> tuple[ModuleType, ...]:
    """The chat-completion case files, one per group of rule prefixes."""
    import test_rules_chunks
    import test_rules_sse
    import test_rules_text
    import test_rules_tool_calls
    import test_rules_transport
    import test_rules_upstream
    import test_rules_xml_client

    return (test_rules_transport, test_rules_sse, test_rules_chunks, test_rules_tool_calls, test_rules_text,
            test_rules_xml_client, test_rules_upstream)


def families() -> dict[str, Family]:
    """Every file's family of rule cases, each declared as ``FAMILY`` next to the cases; the
    chat-completion answers that break rules join the correct ones of ``test_rules.py``."""
    import test_responses_rules
    import test_rules
    import test_rules_anthropic
    import test_rules_faults
    import test_rules_translation

    accepted, _, options = test_rules.FAMILY
    chat: Family = (accepted, [c for module in _chat_modules() for c in module.BROKEN], options)
    return {"chat completions": chat, "anthropic": test_rules_anthropic.FAMILY,
            "faults": test_rules_faults.FAMILY, "responses": test_responses_rules.FAMILY,
            "translation": test_rules_translation.FAMILY}


def _path(module: ModuleType) -> str:
    assert module.__file__ is not None
    return Path(module.__file__).resolve().relative_to(ROOT).as_posix()


def _broken_cases() -> Iterable[tuple[str, str, Iterable[str]]]:
    """(file, case id, rules the case breaks) for every unit case that breaks a rule."""
    import test_isolation
    import test_responses_rules
    import test_rules
    import test_rules_anthropic
    import test_rules_faults
    import test_rules_translation

    for module in (*_chat_modules(), test_rules_anthropic, test_rules_faults, test_responses_rules,
                   test_rules_translation):
        for case in module.BROKEN:
            yield _path(module), case.id, case.fails
    for pair in test_rules.PAIRS:
        if pair.fails:
            yield _path(test_rules), pair.id, ("EQ-001",)
    for item_id, *_, fails in test_rules.ITEMS:
        if fails:
            yield _path(test_rules), item_id, ("TOOL-010",)
    for name, (_, broken) in test_isolation.ROUNDS.items():
        yield _path(test_isolation), name, broken


def proofs() -> dict[str, Proof]:
    """Every rule's breaking cases and mutants, by file, in the order the files list them."""
    import mutants
    from harness.judge.rules import RULES

    cases: dict[str, dict[str, list[str]]] = {rule_id: {} for rule_id in RULES}
    for path, case_id, broken in _broken_cases():
        for rule_id in broken:
            cases[rule_id].setdefault(path, []).append(case_id)
    caught: dict[str, dict[str, list[str]]] = {rule_id: {} for rule_id in RULES}
    homes = {mutant.id: _path(module) for name, module in list(sys.modules.items())
             if name.startswith("mutants.") and hasattr(module, "MUTANTS") for mutant in module.MUTANTS}
    for mutant in mutants.MUTANTS:
        for rule_id in mutant.rules:
            caught[rule_id].setdefault(homes[mutant.id], []).append(mutant.id)
    return {rule_id: Proof(cases[rule_id], caught[rule_id]) for rule_id in RULES}


if __name__ == "__main__":
    # tests/ on the path for the test modules, the root for the packages.
    sys.path[:1] = [str(ROOT / "tests"), str(ROOT)]
    from harness.judge.rules import rules_markdown

    (ROOT / "docs" / "rules.md").write_text(rules_markdown(proofs()), "utf-8")
