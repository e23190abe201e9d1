"""Where markers may start: the openers of all families, compiled for fast scanning.

Openers are grouped by first character, one pattern per group: a pattern that starts
with a literal character is searched by the regular-expression engine at C speed,
where one alternation of everything would be tried at every position. Callers keep
each group's next match between searches (``Cursor``), so no text is searched twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from reference_proxy.rescue.family import Family, Opener

WORD_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def is_word_char(c: str) -> bool:
    return c in WORD_CHARS


THEN_BLANKS: Final = 16
"""Blanks after an opener with a ``then`` rule that are still held as a trailing piece."""


def _alternation(literals: Sequence[str]) -> str:
    # Longest first, so a literal never loses to one of its own prefixes.
    return "|".join(re.escape(x) for x in sorted(set(literals), key=lambda x: (-len(x), x)))


def _pattern(opener: Opener) -> str:
    out = re.escape(opener.literal)
    if opener.word:  # placed after the literal, so the pattern keeps its literal start
        out += f"(?<![A-Za-z0-9]{re.escape(opener.literal)})"
    if opener.then:
        # Decided by what follows; a short blank run at the end of the text is held as a
        # trailing piece instead (see ``Openers.hold``), a long one starts the marker.
        out += rf"(?=[ \t\r\n]*[{re.escape(opener.then)}]|[ \t\r\n]{{{THEN_BLANKS},}}\Z)"
    if opener.plain:
        # After the literal, so the pattern keeps its literal start (searched at C speed).
        out += f"(?:(?P<plain>{opener.plain})|)"
    return out


class Openers:
    """The openers of a set of families and the patterns that find them."""

    def __init__(self, families: Sequence[Family]) -> None:
        self.families: dict[str, list[Family]] = {}
        self.specs: dict[str, Opener] = {}
        for family in families:
            for opener in family.openers:
                known = self.specs.setdefault(opener.literal, opener)
                if known != opener:
                    raise ValueError(f"opener {opener.literal!r} is declared with different rules")
                self.families.setdefault(opener.literal, []).append(family)
        anywhere = [o for o in self.specs.values() if not o.line_start]
        at_line = [o.literal for o in self.specs.values() if o.line_start]
        by_first: dict[str, list[Opener]] = {}
        for opener in anywhere:
            by_first.setdefault(opener.literal[0], []).append(opener)
        for group in by_first.values():
            if sum(1 for o in group if o.plain) > 1:
                raise ValueError(f"openers {[o.literal for o in group]} hold more than one plain pattern")
        self.group_by_first = {
            first: re.compile("|".join(_pattern(o) for o in sorted(group, key=lambda o: -len(o.literal))))
            for first, group in sorted(by_first.items())
        }
        self.groups = list(self.group_by_first.values())
        never = re.compile(r"(?!)")
        if at_line:
            self.line_after_newline = re.compile(rf"\n[ \t]*({_alternation(at_line)})")
            self.line_here = re.compile(rf"[ \t]*({_alternation(at_line)})")
            self.line_here_firsts = " \t" + "".join(sorted({x[0] for x in at_line}))
            # A line opener that begins with a letter may also be cut after its first
            # letters ("\nfunc" then "tools["): a piece ending so is at risk too.
            begun = [x[:k] for x in at_line if is_word_char(x[0]) for k in range(1, len(x))]
            ending = f"(?:{_alternation(begun)})?" if begun else ""
            self.line_risk = re.compile(rf"\n[ \t]*(?:{_alternation(at_line)}|{ending}\Z)")
            # What every match of ``line_risk`` begins with, looked for first: one character
            # class instead of every alternative after each newline of a piece.
            firsts = "".join(sorted({x[0] for x in at_line} | {x[0] for x in begun}))
            self.line_risk_hint = re.compile(rf"\n[ \t]*(?:[{re.escape(firsts)}]|\Z)")
            # Matched against the last line only (``last_line_begun``): a search for it
            # would try every position of a long piece, having no literal to look for.
            self.line_begun = re.compile(rf"[ \t]*(?:{_alternation(begun)})" if begun else r"(?!)")
            # The characters such a last line can end in: any other, and it is not one.
            self.line_begun_ends = "".join(sorted({x[-1] for x in begun}))
        else:
            self.line_after_newline = self.line_here = never
            self.line_here_firsts = ""
            self.line_risk = self.line_risk_hint = re.compile(r"\n[ \t]*\Z")
            self.line_begun = never
            self.line_begun_ends = ""
        # Searched with the others, but its match starts at the newline before the opener.
        self.line_group = len(self.groups)
        self.groups.append(self.line_after_newline)
        # The groups' ``search`` and the line opener's ``match``, bound once (``Cursor.find``
        # calls them for every marker; compiled, ``pattern.search(...)`` looks the method up
        # by name on every call).
        self.group_searches: list[Callable[[str, int], re.Match[str] | None]] = [p.search for p in self.groups]
        self.line_here_match: Callable[[str, int], re.Match[str] | None] = self.line_here.match
        # The character every match of each group starts with: a group whose character is
        # not in the text is not searched (``in`` costs less than a search).
        self.group_firsts = [*self.group_by_first, "\n"]
        # Trailing pieces to hold: proper prefixes of openers; those that only begin word
        # openers are held only at a word start.
        self.prefix_needs_word: dict[str, bool] = {}
        for opener in self.specs.values():
            for k in range(1, len(opener.literal)):
                prefix = opener.literal[:k]
                self.prefix_needs_word[prefix] = self.prefix_needs_word.get(prefix, True) and opener.word
        self.hold_chars = "".join(sorted({x[0] for x in self.specs if len(x) > 1}))
        then_openers = [o for o in anywhere if o.then]
        self.then_tail = re.compile(
            "|".join(f"{_pattern(Opener(o.literal, word=o.word))}[ \\t\\r\\n]{{0,{THEN_BLANKS - 1}}}\\Z" for o in then_openers)
            or "(?!)"
        )
        self.then_span = max((len(o.literal) for o in then_openers), default=0) + THEN_BLANKS - 1
        self.longest = max((len(x) for x in self.specs), default=1)
        # Per first character: the longest opener that counts anywhere (a line opener
        # found at a line start yields to a longer one that begins the same way).
        self.longest_anywhere_at: dict[str, int] = {}
        for o in anywhere:
            first = o.literal[0]
            self.longest_anywhere_at[first] = max(self.longest_anywhere_at.get(first, 0), len(o.literal))
        self.anywhere_prefixes = frozenset(o.literal[:k] for o in anywhere for k in range(1, len(o.literal)))
        # For the plain-text fast path: text can hold no opener (nor the start of one)
        # if it has none of ``signal_chars``, no word opener, and does not end in the
        # beginning of one.
        self.signal_chars = "".join(sorted({o.literal[0] for o in anywhere if not is_word_char(o.literal[0])}))
        self.words = tuple(sorted(o.literal for o in anywhere if is_word_char(o.literal[0])))
        # Per signal character: the characters an opener continues it with, anywhere and at
        # a line start, and whether it is an opener by itself (``harmless``).
        self.next_anywhere: dict[str, frozenset[str]] = {}
        self.next_at_line: dict[str, frozenset[str]] = {}
        self.alone: dict[str, tuple[bool, bool]] = {}
        for first in self.signal_chars:
            group = [o for o in self.specs.values() if o.literal[0] == first]
            self.next_anywhere[first] = frozenset(o.literal[1] for o in group if len(o.literal) > 1 and not o.line_start)
            self.next_at_line[first] = frozenset(o.literal[1] for o in group if len(o.literal) > 1 and o.line_start)
            self.alone[first] = (
                any(o.literal == first and not o.line_start for o in group),
                any(o.literal == first and o.line_start for o in group),
            )
        self.word_prefixes = tuple(sorted({w[:k] for w in self.words for k in range(1, len(w))}))
        self.word_prefix_set = frozenset(self.word_prefixes)
        for word in self.words:  # ``word_hold`` finds a held piece by the last first letter
            if word[0] in word[1:]:
                raise ValueError(f"word opener {word!r} repeats its first letter")

    def harmless(self, s: str, first: str) -> bool:
        """Whether no ``first`` (a signal character) in ``s`` can begin an opener or the
        start of one: each is followed, within ``s``, by a character no opener continues
        it with, and one that a line opener continues it with (or that is a line opener by
        itself, like ``[``) has a non-blank before it in ``s``: it is mid-line. Prose and
        code hold many such (``a < b``, ``x[0]``, ``<b>``), which then cost no opener search."""
        anywhere = self.next_anywhere[first]
        at_line = self.next_at_line[first]
        alone, alone_at_line = self.alone[first]
        if alone:
            return False
        n = len(s)
        k = s.find(first)
        while k >= 0:
            if k + 1 >= n:
                return False
            after = s[k + 1]
            if after in anywhere:
                return False
            if (alone_at_line or after in at_line) and (k == 0 or s[k - 1] in " \t\r\n"):
                return False
            k = s.find(first, k + 1)
        return True

    def last_line_begun(self, s: str) -> bool:
        """Whether the last line of ``s`` (all of it when it holds no newline) is blanks
        and the first letters of a line opener that begins with a letter ("\nfunc")."""
        return self.line_begun.fullmatch(s, s.rfind("\n") + 1) is not None

    def word_hold(self, s: str, before: str) -> int:
        """``hold`` for a string known to hold no opener and no non-word opener character:
        only a word opener can begin at its end ("c".."coun", or "count" and a few blanks)."""
        n = len(s)
        best = n
        for word in self.words:
            k = s.rfind(word[0], max(0, n - len(word) - THEN_BLANKS))
            if k < 0 or k >= best:
                continue
            piece = s[k:]
            if piece in self.word_prefix_set or (
                self.specs[word].then and len(piece) < len(word) + THEN_BLANKS and piece.rstrip(" \t\r\n") == word
            ):
                if not (self.specs[word].word and is_word_char(s[k - 1] if k else before)):
                    best = k
        return best

    def hold(self, s: str, i: int, before: str) -> int:
        """Where a trailing piece of ``s[i:]`` that may begin an opener starts (``len(s)``: none).

        ``before`` is the character preceding ``s`` ('' at the start of the text).
        """
        n = len(s)
        best = n
        if self.then_span:
            m = self.then_tail.search(s, max(i, n - self.then_span))
            while m is not None:
                k = m.start()
                literal = m.group().rstrip(" \t\r\n")
                if not (self.specs[literal].word and is_word_char(s[k - 1] if k else before)):
                    best = k
                    break
                m = self.then_tail.search(s, k + 1)
        start = max(i, n - self.longest + 1)
        for first in self.hold_chars:
            k = s.find(first, start, best)
            while k >= 0:
                needs_word = self.prefix_needs_word.get(s[k:])
                if needs_word is not None and not (needs_word and is_word_char(s[k - 1] if k else before)):
                    best = k
                    break
                k = s.find(first, k + 1, best)
        return best


class Cursor:
    """Finds the openers in one string from left to right, each part searched once."""

    __slots__ = ("_openers", "_s", "_next", "_known")

    def __init__(self, openers: Openers, s: str) -> None:
        self._openers = openers
        self._s = s
        # Per group: its first match at or after the last search position, once known. A
        # group whose first character is not in ``s`` is known to have none (looked at when
        # the group is first needed: a cursor is made for every marker).
        self._next: list[re.Match[str] | None] = [None] * len(openers.groups)
        self._known = [False] * len(openers.groups)

    def find(self, i: int, line_blank: bool, before: str) -> tuple[int, str, int] | None:
        """The first opener at or after ``i``: (its position, its literal, 0); or the
        first plain text an opener's family knows (``Opener.plain``): (its position, '',
        where it ends).

        ``line_blank``: ``s[i]`` starts a line (only blanks before it on its line);
        ``before``: the character before ``s[0]`` ('' at the start of the text).
        """
        s = self._s
        openers = self._openers
        best: tuple[int, str, int] | None = None
        if line_blank:
            here = openers.line_here_match(s, i)
            if here is not None:
                best = (here.start(1), here.group(1), 0)
                # A longer opener at the same place wins ("[TOOL_CALLS]" over a line's "[");
                # while the text may still become one, the line opener waits (held).
                if len(best[1]) >= openers.longest_anywhere_at.get(best[1][0], 0):
                    return best
        line_group = openers.line_group
        known = self._known
        for g, search in enumerate(openers.group_searches):
            m = self._next[g]
            if not known[g] and openers.group_firsts[g] not in s:
                known[g] = True  # (``m`` is None)
                continue
            if not known[g] or (m is not None and m.start() < i):
                m = search(s, i)
                if m is not None and m.start() == 0 and g != line_group and _word_blocked(openers, m, before):
                    m = search(s, 1)
                self._next[g] = m
                self._known[g] = True
            if m is None:
                continue
            # A line opener after a newline starts at its group, anything else at the match.
            if g == line_group:
                hit = (m.start(1), m.group(1), 0)
            elif m.lastgroup == "plain":
                hit = (m.start(), "", m.end())
            else:
                hit = (m.start(), m.group(), 0)
            if best is None or hit[0] < best[0] or (hit[0] == best[0] and len(hit[1]) > len(best[1])):
                best = hit
        if (
            best is not None
            and len(s) - best[0] < openers.longest_anywhere_at.get(best[1][:1], 0)
            and s[best[0] :] in openers.anywhere_prefixes
        ):
            return None  # the text ends in what may become a longer opener: held
        return best


def _word_blocked(openers: Openers, m: re.Match[str], before: str) -> bool:
    """A word opener at the very start of a string right after a word character."""
    spec = openers.specs.get(m.group())
    return spec is not None and spec.word and is_word_char(before)
