"""Captures of real exchanges made into scenarios (the ``import`` command).

``read_captures`` reads a capture file (SSE, a JSON answer, a HAR file, JSON lines) into
``Capture`` objects, with secrets dropped or redacted; ``import_capture`` makes one a
scenario to review, ``check_names`` checks the id and family asked for first. Every
problem with a capture is one ``CaptureError``.
"""

from __future__ import annotations

from harness.capture.detect import read_captures
from harness.capture.errors import CaptureError, UnsupportedDialect
from harness.capture.importer import ImportedScenario, ImportOptions, check_names, import_capture
from harness.capture.model import FORMAT_NAMES, FORMATS, Capture, CaptureFile, CaptureFormat

__all__ = [
    "Capture",
    "CaptureError",
    "CaptureFile",
    "CaptureFormat",
    "FORMATS",
    "FORMAT_NAMES",
    "ImportOptions",
    "ImportedScenario",
    "UnsupportedDialect",
    "check_names",
    "detect",
    "drift",
    "errors",
    "import_capture",
    "importer",
    "model",
    "read_captures",
    "recorded",
    "recording",
]
