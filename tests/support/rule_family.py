"""What a module of rule cases hands ``tests/rule_proofs.py``: its correct answers, its broken
answers, and the strict options a case is judged under (a case module imports this, never
``rule_proofs``, so the proofs read the case modules without an import circle)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.judge.rules import Options

Family = tuple[Sequence[Any], Sequence[Any], Callable[[Any], Options]]
