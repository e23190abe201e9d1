"""Which rules no mutant proves against a live broken proxy.

Unit cases (``tests/judge/test_rules*.py``) show each rule tells a broken answer from a
correct one; a mutant shows the harness reports it end to end, through the runner,
against a served proxy. ``python tests/mutants/coverage.py`` lists the rules no
mutant of ``mutants.MUTANTS`` (both dialects) names; ``tests/project/test_mutants.py`` keeps
that list equal to its allow-list.
"""

from __future__ import annotations

import sys
from pathlib import Path


def unproven() -> list[str]:
    """Rule ids no mutant names, in catalogue order."""
    from harness.judge.rules import RULES
    from mutants import MUTANTS

    named = {rule for mutant in MUTANTS for rule in mutant.rules}
    return [rule_id for rule_id in RULES if rule_id not in named]


if __name__ == "__main__":
    # tests/ on the path, not this folder: its "anthropic" module would shadow the SDK.
    sys.path[0] = str(Path(__file__).resolve().parent.parent)
    missing = unproven()
    print("\n".join(missing) if missing else "every rule is named by some mutant")
