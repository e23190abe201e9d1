"""Rescue of tool calls that backends wrote as text.

A pure, incremental parser: feed text as it arrives, get back visible text and
complete tool calls as events. Each text format lives in its own module under
``families``; ``scanner`` multiplexes them.
"""

from reference_proxy.rescue.events import (
    ArgumentsDelta,
    Event,
    RescuedCall,
    Text,
    ToolCallEnd,
    ToolCallStart,
    ToolSpec,
    collect,
    tools_from_request,
)
from reference_proxy.rescue import scanner
from reference_proxy.rescue.scanner import Rescuer, rescue_text

COMPILED: bool = not (scanner.__file__ or "").endswith(".py")
"""Whether the parser runs compiled by mypyc (a wheel built where a C compiler was
present) rather than as Python source (an editable install, or a pure wheel)."""

__all__ = [
    "ArgumentsDelta",
    "COMPILED",
    "Event",
    "RescuedCall",
    "Rescuer",
    "Text",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolSpec",
    "collect",
    "rescue_text",
    "tools_from_request",
]
