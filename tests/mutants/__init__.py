"""Deliberately broken proxies the harness must catch, and one correct-but-different
proxy it must pass; see ``base`` for how they are made and ``tests/test_mutants.py``
for the test that plays them."""

from mutants.base import Mutant
from mutants.different import CORRECT_BUT_DIFFERENT
from mutants.openai import MUTANTS

ALL: tuple[Mutant, ...] = (*MUTANTS, CORRECT_BUT_DIFFERENT)
