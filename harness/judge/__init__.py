"""What judges an answer, with no I/O: the readers that parse what a client receives
(``readers``), the named rules (``rules``), semantic comparison (``compare``), the search for
leaked markup (``markup``), the soak"s verdicts (``soak``) and its tally (``soak_tally``)."""

__all__ = ["compare", "markup", "readers", "rules", "soak", "soak_tally"]
