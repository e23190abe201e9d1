"""The harness: the shared model (``core``), what judges an answer (``judge``), what writes
answers (``generate``), what reports a run (``report``), what reads captures (``capture``), and the
shells that play a run (``run``, ``pytest``, ``cli``). Each layer imports only the ones before it
(docs/architecture.md)."""

__all__ = ["capture", "cli", "core", "generate", "judge", "pytest", "report", "run"]
