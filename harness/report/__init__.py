"""What a run tells people, as text and data: item records and scores (``summary``),
one failure explained (``failure``), the score card in text, Markdown and JSON
(``scorecard``), failures grouped by cause (``causes``), known failures (``known_failures``), and the HAR and HTML record (``record``)."""

__all__ = ["causes", "failure", "known_failures", "record", "scorecard", "summary"]
