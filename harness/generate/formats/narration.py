"""Pseudo-formats: calls a model narrates in its text instead of making them, in a shape its
client's history taught it.

- ``[Called NAME with args: {json}]``: Claude served through Kiro, after a proxy flattened
  earlier calls into that text (imhuimie/kiro2api ``prompt.md``, a captured answer holding
  ``[Called TodoWrite with args: {…}] [Called Bash with args: {…}]``).
- ``[TOOL_CALL]`` … ``[/TOOL_CALL]`` around ``{tool => "NAME", args => {--key value}}``: the
  arrow form MiniMax models write under Roo Code (RooCodeInc/Roo-Code#10547), one value per
  ``--key`` line, each value JSON.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from harness.generate.formats.base import Call, FormatError, Writer, json_text

_KEY = re.compile(r"[A-Za-z_][\w-]*")


class Narration(Writer, id="narration", family="narration", model="claude-sonnet-4"):
    delimiters = ("[Called ", " with args: ")

    def text(self, calls: Sequence[Call]) -> str:
        return " ".join(f"[Called {c.name} with args: {json_text(dict(c.arguments))}]" for c in calls)


class RooToolCall(Writer, id="roo-tool-call", family="roo-tool-call", model="minimax-m2.1"):
    delimiters = ("[TOOL_CALL]", "{tool => ", ", args => {", "[/TOOL_CALL]")

    def text(self, calls: Sequence[Call]) -> str:
        blocks = []
        for call in calls:
            lines = []
            for key, value in call.arguments.items():
                if not _KEY.fullmatch(key):
                    raise FormatError(f"{key!r}: the arrow form writes keys as --flags, so a key must be a word")
                lines.append(f"  --{key} {json_text(value)}\n")
            blocks.append(f"[TOOL_CALL]\n{{tool => {json_text(call.name)}, args => {{\n{''.join(lines)}}}}}\n"
                          "[/TOOL_CALL]")
        return "\n".join(blocks)
