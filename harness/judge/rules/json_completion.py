"""Telling, fragment by fragment, when streamed JSON text has closed into a complete value
(TOOL-007 asks it of every prefix of a call's arguments)."""

from __future__ import annotations

import json


class JsonCompletion:
    """Follows JSON text fragment by fragment and tells when a top-level value closed,
    in one pass (re-parsing every prefix would be quadratic)."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escaped = False
        self.started = False
        self.closed = False
        self.scalar = False
        self.text: list[str] = []

    def feed(self, fragment: str) -> bool:
        """Add ``fragment``; whether the text so far is a complete JSON object or array.
        (Arguments that are not an object at all are TOOL-006's finding.)"""
        self.text.append(fragment)
        if self.scalar:
            return False
        for ch in fragment:
            if self.closed:
                break
            if self.in_string:
                if self.escaped:
                    self.escaped = False
                elif ch == "\\":
                    self.escaped = True
                elif ch == '"':
                    self.in_string = False
                continue
            if not self.started:
                if ch.isspace():
                    continue
                self.started = True
                if ch not in "{[":
                    self.scalar = True
                    return False
            if ch == '"':
                self.in_string = True
            elif ch in "{[":
                self.depth += 1
            elif ch in "}]":
                self.depth -= 1
                if self.depth == 0:
                    self.closed = True
        return self.closed and self._parses()

    def _parses(self) -> bool:
        try:
            json.loads("".join(self.text))
        except ValueError:
            return False
        return True
