"""The words a rule and the reading it judges share: the profile an answer is read as, the
stage at which a rule has something to judge, and the options of a run that decide which
rules apply. Apart from the registry so that the reading (``context``) and the registry of
checks over it can both use them without importing each other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.core.dialects.clients import DEFAULT_PROFILE
from harness.core.dialects.clients import ClientProfile as Profile

# When a rule has something to judge: every run, any HTTP response (no transport
# error, no timeout), a 200 answer, a 200 SSE stream, or a 200 single JSON body.
Stage = Literal["always", "response", "answer", "stream", "single"]


@dataclass(frozen=True)
class Options:
    profile: Profile = DEFAULT_PROFILE
    strict: bool = False
    features: frozenset[str] = frozenset()
