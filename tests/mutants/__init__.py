"""Deliberately broken proxies the harness must catch, and one correct-but-different
proxy it must pass (``tests/test_mutants.py`` plays them).

Adding a mutant is adding one ``Mutant`` entry: what it breaks, the rule ids the
harness must report, the scenarios that expose it, and how it is built from the
reference proxy (``base.rewritten`` with a ``Rewriter`` for wire breakage,
``base.substituted`` for a swapped piece of behaviour). Chat-completion mutants live
in ``mutants.openai``, Messages mutants (rewriters of ``SSEEvent``s with their
``event:`` names) in ``mutants.anthropic``.
"""

from mutants import anthropic, formats, openai
from mutants.base import Mutant
from mutants.different import CORRECT_BUT_DIFFERENT

MUTANTS: tuple[Mutant, ...] = (*openai.MUTANTS, *anthropic.MUTANTS, *formats.MUTANTS)
CORRECT: tuple[Mutant, ...] = (CORRECT_BUT_DIFFERENT, anthropic.CORRECT_BUT_DIFFERENT_MESSAGES)
ALL: tuple[Mutant, ...] = (*MUTANTS, *CORRECT)
