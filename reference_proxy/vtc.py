"""Tool calls as Cline-style XML, for clients that read calls from the text (the ``vtc`` profile).

Cline, Roo and Kilo parse ``<tool_name>\\n<param>value</param>\\n</tool_name>`` out of
the accumulated content, match tags against their own tool list and trim values.
They never unescape entities, so values are written raw: ``&lt;`` would end up
literally in the user's files. The price is that a value holding its own closing
tag cannot be represented (the client ends a parameter at its first closing tag,
except ``write_to_file``'s ``content``, which ends at the last ``</content>``);
such a value is written raw anyway and logged, since every alternative is worse.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from reference_proxy.openai_stream import dumps

log = logging.getLogger("reference_proxy.vtc")

#: Parameters the client closes at the *last* closing tag, so they may contain it.
LAST_CLOSE_PARAMS = frozenset({("write_to_file", "content")})


def is_vtc_client(user_agent: str | None, patterns: Sequence[str]) -> bool:
    """Whether the User-Agent names an XML-reading client (case-insensitive substring)."""
    if not user_agent or not patterns:
        return False
    agent = user_agent.lower()
    return any(p in agent for p in patterns)


def value_text(value: object) -> str:
    """Strings as they are; any other JSON value as compact JSON."""
    return value if isinstance(value, str) else dumps(value)


def call_to_xml(name: str, arguments: str) -> str:
    """One call as Cline-style XML, parameters in the order the arguments hold them."""
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        parsed = None
    lines = [f"<{name}>"]
    if isinstance(parsed, dict):
        for key, value in parsed.items():
            text = value_text(value)
            if f"</{key}>" in text and (name, key) not in LAST_CLOSE_PARAMS:
                log.warning(
                    "vtc: %s.%s contains its own closing tag </%s>; the client will cut the value there", name, key, key
                )
            lines.append(f"<{key}>{text}</{key}>")
    else:
        log.warning("vtc: arguments of %s are not a JSON object, written without parameters: %.200r", name, arguments)
    lines.append(f"</{name}>")
    return "\n".join(lines)
