"""Captured traffic turned into scenarios (the ``import`` command): telling the capture"s
format apart (``detect``), reading each kind, and mapping it to a scenario a person can
review (``importer``)."""

__all__ = ["detect", "errors", "importer", "model"]
