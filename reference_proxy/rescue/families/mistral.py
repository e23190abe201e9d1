"""Mistral's ``[TOOL_CALLS]`` (mistral-common tokenizers; vLLM's ``mistral`` parser).

Before tokenizer v11 the token is followed by a JSON list of call objects
(``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]``); from v11 on by
``NAME[ARGS]{json}``, each call with its own token; later tokenizers drop ``[ARGS]``
and write ``NAME{json}`` (vLLM's fixtures for Mistral-Small-3.2:
https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_mistral_tool_parser.py).
What follows the token tells the forms apart: ``[`` or ``{`` starts the JSON form,
anything else a name. The marker ends with the last JSON value that another token does
not follow at once.
"""

from __future__ import annotations

from typing import Any, Final

from reference_proxy.rescue.families.json_calls import CallWatcher, calls_from_values, json_call
from reference_proxy.rescue.family import (
    MAX_NAME, NO_NAME, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, emit, name_end, reject,
    skip_ws, starts,
)
from reference_proxy.rescue.jsonscan import MORE, NOT_JSON, JsonScanner
from reference_proxy.rescue.toolbox import Toolbox

TOOL_CALLS: Final = "[TOOL_CALLS]"
ARGS: Final = "[ARGS]"

_HEAD: Final = 0
_NAME: Final = 1
_JSON: Final = 2
_AFTER: Final = 3


class MistralParser(CarriedParser):
    """A special token, then a JSON list of call objects (or, ``named``, the v11
    ``NAME[ARGS]{json}`` form); the token may repeat before each further call."""

    def __init__(self, tools: Toolbox, token: str = TOOL_CALLS, *, named: bool = True) -> None:
        super().__init__(len(token))
        self._tools = tools
        self._token = token
        self._named = named
        self._state = _HEAD
        self._name: str | None = None  # set: the v11 form, arguments follow
        self._json = JsonScanner()
        self._searched = 0
        self._last_end = 0  # end of the last call's markup
        self._calls: list[Call] = []  # complete, not yet reported

    def _done(self, value: Any, end: int) -> bool:
        """The value is complete: is it a call?"""
        if self._name is None:
            calls = calls_from_values([value], self._tools)
        else:
            call = json_call(self._name, value) if isinstance(value, dict) else None
            calls = None if call is None else (call,)
        if not calls:
            return False
        # Another [TOOL_CALLS] may follow at once (v11 writes one per call).
        self._calls += calls
        self._state, self._name, self._last_end = _AFTER, None, end
        return True

    def _stop(self, at: int) -> Verdict:
        """The marker is over: calls not yet reported, text from ``at`` scanned again."""
        calls, self._calls = tuple(self._calls), []
        if calls:
            return Verdict(calls, self._last_end, True, at)
        return reject(at)

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        verdict = super().feed(text, start)
        if verdict is None and self._calls:
            calls, self._calls = tuple(self._calls), []
            return emit(calls, self._last_end)
        return verdict

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        while i < n:
            if self._state == _JSON:
                scanner = self._json
                i = scanner.feed(s, i)
                if scanner.status is MORE:
                    break
                value = scanner.result()
                if value is NOT_JSON or not self._done(value, base + i):
                    return self._stop(base + i)
                continue
            if self._state == _AFTER:
                i = skip_ws(s, i)
                if i >= n:
                    break
                found = starts(s, i, self._token)
                if found is None:
                    break
                if not found:
                    return self._stop(self._last_end)
                i += len(self._token)
                self._state = _HEAD
                continue
            if self._state == _NAME:
                k = name_end(s, i, ARGS, self._searched)
                brace = s.find("{", i, i + MAX_NAME + 1 if k < 0 else k)
                if brace > i:  # NAME{json}: the name ends where its arguments begin
                    self._searched = 0
                    self._name = self._tools.resolve(s[i:brace])
                    if self._name is None:
                        return self._stop(base + brace)
                    i = brace
                    self._json = JsonScanner()
                    self._state = _JSON
                    continue
                if k < 0:
                    if k == NO_NAME:
                        return self._stop(base + i)
                    self._searched = max(0, n - i - len(ARGS) + 1)
                    break
                self._searched = 0  # the next call's name is searched from its start
                self._name = self._tools.resolve(s[i:k])
                if self._name is None:
                    return self._stop(base + k)
                i = skip_ws(s, k + len(ARGS))
                if i >= n:
                    self._state = _HEAD
                    break
                if s[i] != "{":
                    return self._stop(base + i)
                self._json = JsonScanner()
                self._state = _JSON
                continue
            # _HEAD: after the token (or after [ARGS]), blanks, then the body
            i = skip_ws(s, i)
            if i >= n:
                break
            if self._name is not None:
                if s[i] != "{":
                    return self._stop(base + i)
                self._json = JsonScanner()
            elif s[i] in "[{":
                self._json = JsonScanner(CallWatcher(self._tools))
            elif self._named:
                self._state = _NAME
                continue
            else:
                return self._stop(base + i)
            self._state = _JSON
        return i

    def finish(self) -> Verdict:
        return self._stop(self._last_end if self._state == _AFTER else self._carry.end)


class Mistral(Family):
    name = "mistral"
    formats: tuple[str, ...] = ("mistral", "mistral-v11")
    openers: tuple[Opener, ...] = (Opener(TOOL_CALLS),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return MistralParser(tools)


GRANITE: Final = "<|tool_call|>"


class Granite(Family):
    """IBM Granite 3.x: ``<|tool_call|>[{"name": ..., "arguments": {...}}]`` (vLLM's
    ``granite`` parser). The token is followed by the same JSON list as Mistral's."""

    name = "granite"
    formats: tuple[str, ...] = ("granite",)
    openers: tuple[Opener, ...] = (Opener(GRANITE),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return MistralParser(tools, GRANITE, named=False)


PHI4_MINI: Final = "functools"


class Phi4Mini(Family):
    """Phi-4-mini: ``functools[{"name": ..., "arguments": {...}}]`` (vLLM's
    ``phi4_mini_json`` parser): the word, then the same JSON list as Mistral's. Only
    ``functools`` at the start of a line counts, where the model writes it (as a pythonic
    list): mid-line it is Python's module of that name, in prose."""

    name = "phi4-mini"
    formats: tuple[str, ...] = ("phi4-mini",)
    openers: tuple[Opener, ...] = (Opener(PHI4_MINI, line_start=True),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return MistralParser(tools, PHI4_MINI, named=False)
