"""Tool calls as Cline-style XML, for clients that read calls from the text (the ``xml-client`` profile).

Cline, Roo and Kilo parse ``<tool_name>\\n<param>value</param>\\n</tool_name>`` out of
the accumulated content, match tags against their own tool list and trim values.
They never unescape entities, so values are written raw: ``&lt;`` would end up
literally in the user's files. The price is that a value holding its own closing
tag cannot be represented (the client ends a parameter at its first closing tag,
except ``write_to_file``'s ``content``, which ends at the last ``</content>``);
such a value is written raw anyway and logged, since every alternative is worse.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence

from reference_proxy.openai_stream import dumps
from reference_proxy.translate.answers import as_object

log = logging.getLogger("reference_proxy.xml_client")

#: Parameters the client closes at the *last* closing tag, so they may contain it.
LAST_CLOSE_PARAMS = frozenset({("write_to_file", "content")})


# A word: a run of digits, a capitalised or lower-case run of letters, or an upper-case run
# not followed by lower case (``HTTPClient`` is ``HTTP`` and ``Client``).
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def words(text: str) -> list[str]:
    """The words of a User-Agent or a pattern, lower-cased: product tokens split at
    punctuation and at case changes (``RooCode/3.1`` is ``roo``, ``code``, ``3``, ``1``)."""
    return [w.lower() for w in _WORD.findall(text)]


def is_xml_client(user_agent: str | None, patterns: Sequence[str]) -> bool:
    """Whether the User-Agent names an XML-reading client.

    A pattern matches whole words, case-insensitively: its letters and digits must be one
    or more consecutive words of the User-Agent joined. ``roo`` matches ``RooCode/3``,
    ``Roo-Code/3.1`` and ``roo-cline``, and ``roocode`` matches the first two; neither
    matches ``Groovy/1.0``, as a substring test would. ``name<version`` matches only the
    versions below ``version`` of a product token ``Name/1.2.3`` (or a User-Agent naming no
    version): Roo Code reads native tool calls only since 3.37 (``roo<3.37``,
    https://github.com/RooCodeInc/Roo-Code/pull/10281; XML tool markup in an answer is refused
    since https://github.com/RooCodeInc/Roo-Code/pull/10841).
    """
    if not user_agent or not patterns:
        return False
    agent = words(user_agent)
    return any(_joins(agent, target) and _below(user_agent, target, bound)
               for target, bound in _targets(tuple(patterns)))


_PRODUCT = re.compile(r"([A-Za-z][\w.-]*)/(\d+(?:\.\d+)*)")


def _below(user_agent: str, target: str, bound: tuple[int, ...] | None) -> bool:
    """Whether the version of the product named ``target`` is below ``bound`` (no bound, or
    no version said: True)."""
    if bound is None:
        return True
    for product, version in _PRODUCT.findall(user_agent):
        if _joins(words(product), target):
            return tuple(int(n) for n in version.split(".")) < bound
    return True


@functools.lru_cache(maxsize=16)
def _targets(patterns: tuple[str, ...]) -> tuple[tuple[str, tuple[int, ...] | None], ...]:
    """Each pattern's words joined, and its version bound: worked out once per configuration."""
    out = []
    for pattern in patterns:
        name, _, bound = pattern.partition("<")
        digits = re.findall(r"\d+", bound)
        out.append(("".join(words(name)), tuple(int(d) for d in digits) if digits else None))
    return tuple(out)


def _joins(agent: list[str], target: str) -> bool:
    """Whether consecutive words of ``agent`` join to ``target``."""
    if not target:
        return False
    for start in range(len(agent)):
        joined = ""
        for word in agent[start:]:
            joined += word
            if joined == target:
                return True
            if not target.startswith(joined):
                break
    return False


def value_text(value: object) -> str:
    """Strings as they are; any other JSON value as compact JSON."""
    return value if isinstance(value, str) else dumps(value)


def call_to_xml(name: str, arguments: str) -> str:
    """One call as Cline-style XML, parameters in the order the arguments hold them."""
    parsed = as_object(arguments)
    if parsed is None:
        # A call without parameters would be one the model never made: the text stays text.
        log.warning("xml-client: arguments of %s are not a JSON object, kept as text: %.200r", name, arguments)
        return arguments
    lines = [f"<{name}>"]
    for key, value in parsed.items():
        text = value_text(value)
        if f"</{key}>" in text and (name, key) not in LAST_CLOSE_PARAMS:
            log.warning(
                "xml-client: %s.%s contains its own closing tag </%s>; the client will cut the value there", name, key, key
            )
        lines.append(f"<{key}>{text}</{key}>")
    lines.append(f"</{name}>")
    return "\n".join(lines)
