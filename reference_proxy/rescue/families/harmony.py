"""gpt-oss's Harmony messages, as text (the OpenAI Harmony response format; vLLM's
``openai`` tool parser reads the same messages from tokens).

    <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{json}<|call|>

One message per call, several calls one message after another. The recipient may also
stand in the role part of the header (``<|start|>assistant to=functions.NAME<|channel|>
commentary json<|message|>``), and the answer's first message has no ``<|start|>assistant``
(the prompt ends with it), so a header may begin at ``<|channel|>``.

Only a ``commentary`` or ``analysis`` message to a declared ``functions.`` tool whose
body is one JSON object closed by ``<|call|>`` is a call: gpt-oss also addresses calls
from its analysis channel, and llama.cpp's and vLLM's gpt-oss parsers take them. An
``analysis`` message with no recipient is reasoning: text as a whole up to its
``<|end|>``, and no call inside it counts, as in a ``<think>`` block. A message said to
the user (``final``, with or without ``<|constrain|>json`` or a recipient, or a
``commentary`` preamble with no recipient) is its body alone: its header and its closing
token are markup the user never sees, as llama.cpp's and vLLM's gpt-oss parsers deliver
only the body; nothing in the body is scanned for calls. A closing token ends such a message
only where the next message (``<|start|>``) or the end of the answer follows it: a message's
body holds no special token, so a ``<|call|>`` inside it (a call shown in an answer that
explains the format) is the model's text, which the user reads. (vLLM would also take a
``final`` message addressed to a function; llama.cpp does not, and the Harmony format
makes ``final`` the answer to the user, so neither does this family.) Any other message
(to a built-in tool) is text, and scanning goes on after its header.
"""

from __future__ import annotations

import re
from typing import Final

from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    MAX_GAP, Call, Carry, Context, Family, MarkerParser, Opener, Verdict, accept, emit, passing, reject, skip_ws,
    starts,
)
from reference_proxy.rescue.jsonscan import MORE, JsonScanner
from reference_proxy.rescue.toolbox import Toolbox

START: Final = "<|start|>assistant"
CHANNEL: Final = "<|channel|>"
MESSAGE: Final = "<|message|>"
CALL: Final = "<|call|>"
END: Final = "<|end|>"
# What closes a message said to the user: the end of a message, of the turn (``<|return|>``
# after ``final``), or a ``<|call|>`` the model wrote where it meant one of them.
_SAID_CLOSERS: Final = re.compile(r"<\|(?:end|return|call)\|>")
_LONGEST_SAID_CLOSER: Final = len("<|return|>")
_NEXT: Final = "<|start|>"
_BLANKS: Final = " \t\r\n"
_MAX_HEADER: Final = 256
"""Longest header (opener to ``<|message|>``) waited for; real ones are a few dozen characters."""
_HEADER: Final = re.compile(
    r"(?:<\|start\|>assistant(?:[ \t]+to=(?P<role_to>[^\s<]+))?)?<\|channel\|>(?P<channel>[a-z_]+)"
    r"(?:[ \t]+to=(?P<channel_to>[^\s<]+))?[ \t]*(?:<\|constrain\|>)?[ \t]*(?:[a-z_]+)?[ \t]*<\|message\|>\Z"
)
_NOT_HEADER: Final = re.compile(r"[\n`]")
_FUNCTIONS: Final = "functions."
_CALL_CHANNELS: Final = ("commentary", "analysis")

_HEAD: Final = 0
_JSON: Final = 1
_CALL: Final = 2
_THOUGHT: Final = 3
_SAID: Final = 4



_GLUED: Final = "json"


def _function(tools: Toolbox, recipient: str) -> str | None:
    """The declared tool a ``functions.NAME`` recipient names, or None. gpt-oss sometimes
    glues the content type to the name (``to=functions.shelljson``, llama.cpp#15158):
    a name that is no tool but is one without a trailing ``json`` names that tool."""
    if not recipient.startswith(_FUNCTIONS):
        return None
    name = recipient[len(_FUNCTIONS) :]
    found = tools.resolve(name)
    if found is None and name.endswith(_GLUED) and len(name) > len(_GLUED):
        found = tools.resolve(name[: -len(_GLUED)])
    return found

class HarmonyParser(MarkerParser):
    def __init__(self, tools: Toolbox) -> None:
        self._tools = tools
        self._carry = Carry()
        self._state = _HEAD
        self._name = ""
        self._json = JsonScanner()
        self._call: Call | None = None

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        s, i = carry.join(text, start)
        n = len(s)
        if self._state == _HEAD:
            verdict, i = self._header(s, i)
            if verdict is not None:
                if self._state == _SAID:  # the header is markup; the body waits for the next piece
                    carry.keep(s, i)
                return verdict
        if self._state == _SAID:
            return self._said(s, i)
            if self._state == _HEAD:
                carry.keep(s, i)  # the header so far, kept whole: it is short
                return None
        if self._state == _THOUGHT:
            k = s.find(END, i)
            if k >= 0:
                return reject(carry.base + k + len(END))
            return carry.pass_through(s, max(i, n - len(END) + 1))  # the closer may be cut at the piece's end
        if self._state == _JSON:
            scanner = self._json
            if not scanner.text():
                i = skip_ws(s, i)
            if i < n:
                i = scanner.feed(s, i)
                if scanner.status is not MORE:
                    value = scanner.result()
                    call = json_call(self._name, value) if isinstance(value, dict) else None
                    if call is None:
                        return reject(carry.base + i)
                    self._call = call
                    self._state = _CALL
        if self._state == _CALL:
            i = skip_ws(s, i)
            found = starts(s, i, CALL)
            if found:
                assert self._call is not None
                return accept((self._call,), carry.base + i + len(CALL))
            if found is False:
                return reject(carry.base + i)
        carry.keep(s, min(i, n))
        return None

    def _header(self, s: str, h: int) -> tuple[Verdict | None, int]:
        """Reads the header starting at ``s[h]`` (marker position 0): a verdict when it is
        no call's, else where its body starts (the state set to what it leads to)."""
        k = s.find(MESSAGE, h, h + _MAX_HEADER + len(MESSAGE))
        head = s[h : k + len(MESSAGE)] if k >= 0 else s[h : h + _MAX_HEADER]
        opener = len(START) if head.startswith(START) else len(CHANNEL)
        if _NOT_HEADER.search(head) is not None or (k < 0 and len(s) - h > _MAX_HEADER):
            return reject(opener), h
        if k < 0:
            return None, h
        m = _HEADER.match(head)
        if m is None:
            return reject(opener), h
        body = k + len(MESSAGE)
        channel = m.group("channel")
        recipient = m.group("channel_to") or m.group("role_to") or ""
        if channel == "analysis" and not recipient:
            self._state = _THOUGHT
            return None, body
        if channel == "final" or (channel == "commentary" and not recipient):
            self._state = _SAID
            return emit((), self._carry.base + body), body
        name = _function(self._tools, recipient)
        if channel not in _CALL_CHANNELS or name is None:
            return reject(len(head)), h
        self._name = name
        self._state = _JSON
        return None, body

    def _said(self, s: str, i: int) -> Verdict | None:
        """The body of a message to the user: let it through, then take its closer as markup
        (first the body before the closer, then, on the next piece or at the end, the closer)."""
        carry = self._carry
        start, end, found = _closing(s, i, final=False)
        if found and start == i:  # the body before it is through
            return accept((), carry.base + end)
        return carry.pass_through(s, start)

    def finish(self) -> Verdict:
        carry = self._carry
        if self._state == _SAID:
            start, end, found = _closing(carry.text, 0, final=True)
            if found and start == 0:
                return accept((), carry.pos + end)
            if found:  # the body first, then (asked again) its closer
                carry.base = carry.pos
                carry.keep(carry.text, start)
                carry.sent = carry.pos
                return passing(carry.pos)
        return reject(carry.end)


def _closing(s: str, i: int, final: bool) -> tuple[int, int, bool]:
    """The first closer from ``s[i]`` that ends a message said to the user: its start, its
    end and True; else where the part not yet decided starts (a closer whose follower has not
    arrived, a closer cut at the end of ``s``; ``len(s)`` when all of it is body), twice, and
    False. ``final``: ``s`` is the end of the answer."""
    n = len(s)
    j = i
    while True:
        closer = _SAID_CLOSERS.search(s, j)
        if closer is None:
            tail = -1 if final else s.rfind("<", max(j, n - _LONGEST_SAID_CLOSER + 1))
            keep = n if tail < 0 else tail
            return keep, keep, False
        k = closer.end()
        while k < n and k - closer.end() <= MAX_GAP and s[k] in _BLANKS:
            k += 1
        follows = True if k == n and final else (None if k == n else starts(s, k, _NEXT))
        if k - closer.end() > MAX_GAP:
            follows = False
        if follows:
            return closer.start(), closer.end(), True
        if follows is None:
            return closer.start(), closer.start(), False
        j = closer.end()  # the closer's text inside the body: the body goes on


class Harmony(Family):
    name = "harmony"
    formats: tuple[str, ...] = ("gpt-oss",)
    openers: tuple[Opener, ...] = (Opener(START), Opener(CHANNEL))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return HarmonyParser(tools)
