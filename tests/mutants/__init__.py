"""Deliberately broken proxies the harness must catch, and one correct-but-different
proxy it must pass (``tests/test_mutants.py`` plays them).

Adding a mutant is adding one ``Mutant`` entry: what it breaks, the rule ids the
harness must report, the scenarios that expose it, and how it is built from the
reference proxy (``base.rewritten`` with a ``Rewriter`` for wire breakage,
``base.substituted`` for a swapped piece of behaviour). A mutant of the Anthropic
dialect is a ``Rewriter`` over ``SSEEvent``s with their ``event:`` names, listed the
same way once the reference proxy serves ``/v1/messages``.
"""

from mutants.base import Mutant
from mutants.different import CORRECT_BUT_DIFFERENT
from mutants.openai import MUTANTS

ALL: tuple[Mutant, ...] = (*MUTANTS, CORRECT_BUT_DIFFERENT)
