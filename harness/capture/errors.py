"""The errors of reading a capture, shared by the readers of both dialects."""

from __future__ import annotations

from harness.core.errors import ConformanceError


class CaptureError(ConformanceError):
    """A capture cannot be read; the message is one line that names the file."""


class UnsupportedDialect(CaptureError):
    """The capture is of an API the scenario format cannot express yet."""
