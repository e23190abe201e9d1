"""Builders and constants the test modules share."""

from __future__ import annotations

# Seconds an exchange of a *correct* proxy may take in a test that checks verdicts, not
# speed (whole-library runs, correct-but-different proxies, fixed-seed fuzz budgets). On a
# starved CI machine one exchange can stall for many seconds; that says nothing about the
# proxy, and HTTP-002 (the timeout rule) is proven by its own cases and hanging mutants.
PATIENT_TIMEOUT = 60.0
