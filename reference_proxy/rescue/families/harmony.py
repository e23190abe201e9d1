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
``<|end|>``, and no call inside it counts, as in a ``<think>`` block. Any other message
(``final``, with or without ``<|constrain|>json``, a preamble, a built-in tool) is text;
scanning goes on after its header. (vLLM would also take a ``final`` message addressed to
a function; llama.cpp does not, and the Harmony format makes ``final`` the answer to the
user, so neither does this family.)
"""

from __future__ import annotations

import re
from typing import Any

from reference_proxy.rescue.families.json_calls import json_call
from reference_proxy.rescue.family import (
    Call,
    Carry,
    Context,
    Family,
    MarkerParser,
    Opener,
    Verdict,
    accept,
    passing,
    reject,
    skip_ws,
    starts,
)
from reference_proxy.rescue.jsonscan import JsonScanner, Status
from reference_proxy.rescue.toolbox import Toolbox

START = "<|start|>assistant"
CHANNEL = "<|channel|>"
MESSAGE = "<|message|>"
CALL = "<|call|>"
END = "<|end|>"
_MAX_HEADER = 256
"""Longest header (opener to ``<|message|>``) waited for; real ones are a few dozen characters."""
_HEADER = re.compile(
    r"(?:<\|start\|>assistant(?:[ \t]+to=(?P<role_to>[^\s<]+))?)?<\|channel\|>(?P<channel>[a-z_]+)"
    r"(?:[ \t]+to=(?P<channel_to>[^\s<]+))?[ \t]*(?:<\|constrain\|>)?[ \t]*(?:[a-z_]+)?[ \t]*<\|message\|>\Z"
)
_NOT_HEADER = re.compile(r"[\n`]")
_FUNCTIONS = "functions."
_CALL_CHANNELS = ("commentary", "analysis")

_HEAD, _JSON, _CALL, _THOUGHT = range(4)


class HarmonyParser(MarkerParser):
    def __init__(self, tools: Toolbox) -> None:
        self._tools = tools
        self._carry = Carry()
        self._state = _HEAD
        self._name = ""
        self._json = JsonScanner()
        self._call: Call | None = None
        self._sent = 0

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        carry = self._carry
        s, i = carry.join(text, start)
        n = len(s)
        if self._state == _HEAD:
            verdict, i = self._header(s, i)
            if verdict is not None:
                return verdict
            if self._state == _HEAD:
                carry.keep(s, i)  # the header so far, kept whole: it is short
                return None
        if self._state == _THOUGHT:
            k = s.find(END, i)
            if k >= 0:
                return reject(carry.base + k + len(END))
            carry.keep(s, max(i, n - len(END) + 1))  # the closer may be cut at the piece's end
            if carry.pos <= self._sent:
                return None
            self._sent = carry.pos
            return passing(carry.pos)
        if self._state == _JSON:
            scanner = self._json
            if not scanner.text():
                i = skip_ws(s, i)
            if i < n:
                i = scanner.feed(s, i)
                if scanner.status is Status.ERROR:
                    return reject(carry.base + i)
                if scanner.status is not Status.MORE:
                    try:
                        value: Any = scanner.value()
                    except ValueError:
                        return reject(carry.base + i)
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
        name = self._tools.resolve(recipient[len(_FUNCTIONS) :]) if recipient.startswith(_FUNCTIONS) else None
        if channel not in _CALL_CHANNELS or name is None:
            return reject(len(head)), h
        self._name = name
        self._state = _JSON
        return None, body

    def finish(self) -> Verdict:
        return reject(self._carry.end)


class Harmony(Family):
    name = "harmony"
    formats = ("gpt-oss",)
    openers = (Opener(START), Opener(CHANNEL))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return HarmonyParser(tools)
