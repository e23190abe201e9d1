"""Anthropic-style invoke XML leaked into text (the VTC design and Kiro-Go PR #114).

``<function_calls>`` wraps one or more ``<invoke name="NAME">`` elements, each holding
``<parameter name="P">VALUE</parameter>`` children. The wrapper may be missing, or
corrupted to the plain word ``count`` (or ``court``: claude-code#64922, #69529, #77061)
right before the first ``<invoke``; a closing
``</function_calls>`` after the last invoke belongs to the markup either way. ``count``
is taken for the wrapper only where the tag plausibly stood: at the start of a line, or
glued to the text before it (``now.count``), with only blanks before the ``<invoke``; or
glued to the ``<invoke`` itself. After a blank in the middle of a line (``Lines to
count``) it is the English word, and the ``<invoke`` after it starts a bare call. Each call
is emitted as soon as its ``</invoke>`` arrives. Names may carry a namespace
(``ns:tool:f``); values are raw text (never entity-unescaped, white space kept), typed by
the tool's schema or the Kiro-Go PR #114 literal rule. A ``</parameter>`` ends a value only
when the next parameter or ``</invoke>`` follows it: file content may quote the tag.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Final

from reference_proxy.rescue.coercion import typed_value
from reference_proxy.rescue.family import (
    MAX_TAG, Call, CarriedParser, Context, Family, MarkerParser, Opener, Verdict, reject, skip_ws,
)
from reference_proxy.rescue.tags import Tags, TextValue
from reference_proxy.rescue.toolbox import Toolbox

WRAPPER: Final = "<function_calls>"
END_WRAPPER: Final = "</function_calls>"
CORRUPT_WRAPPER: Final = "count"
CORRUPT_WRAPPERS: Final = (CORRUPT_WRAPPER, "court")
"""The words the wrapper is seen corrupted to, each the length of the other."""
INVOKE: Final = "<invoke"
END_INVOKE: Final = "</invoke>"
PARAMETER: Final = "<parameter"
END_PARAMETER: Final = "</parameter>"

_NAMED_TAG: Final = r"\s+name\s*=\s*(?:\"([^\"]*)\"|'([^']*)')"
_STRING_ATTRIBUTE: Final = r"(?:\s+string\s*=\s*\"(?P<string>true|false)\")?"
_SPACE: Final = frozenset(" \t\r\n")


class Elements:
    """The element names of one invoke-XML dialect, with what is derived from them built
    once here: every parser of the dialect reads them on every tag. (Not
    ``cached_property``s: compiled with mypyc, those become plain properties, and each
    read built its ``Tags`` or escaped and looked up its pattern again.)"""

    def __init__(self, invoke: str, parameter: str) -> None:
        self.invoke = invoke
        self.parameter = parameter
        self.end_invoke = invoke.replace("<", "</", 1) + ">"
        self.end_parameter = parameter.replace("<", "</", 1) + ">"
        self.after_value = Tags((parameter, self.end_invoke))
        """What may follow a value's closing tag (and so may come next among the parameters)."""
        self.invoke_tag = re.compile(re.escape(invoke) + _NAMED_TAG + r"\s*>")
        self.parameter_tag = re.compile(re.escape(parameter) + _NAMED_TAG + _STRING_ATTRIBUTE + r"\s*>")
        """A parameter's tag; DeepSeek's DSML adds ``string="true|false"`` (raw text or JSON)."""


INVOKE_TAGS: Final = Elements(INVOKE, PARAMETER)


@cache
def _after_wrapper(invoke: str, end_wrapper: str) -> tuple[Tags, Tags]:
    """What may come after the corrupted wrapper (an invoke) and after the wrapper or an
    invoke (another, or the wrapper's close), built once per dialect."""
    return Tags((invoke,)), Tags((invoke, end_wrapper))


# States. _WRAPPER: inside a wrapper, before the first invoke; _AFTER: after an invoke.
_CORRUPT: Final = 0
_WRAPPER: Final = 1
_TAG: Final = 2
_PARAMS: Final = 3
_PARAM_TAG: Final = 4
_VALUE: Final = 5
_AFTER: Final = 6


class InvokeXmlParser(CarriedParser):
    def __init__(self, opener: str, tools: Toolbox, context: Context, wrapper: str = WRAPPER,
                 tags: Elements = INVOKE_TAGS) -> None:
        """``wrapper``: the opening wrapper tag (MiniMax M2 writes ``<minimax:tool_call>``);
        ``tags``: the invoke and parameter elements (DeepSeek's DSML prefixes them)."""
        if opener == wrapper:
            super().__init__(len(wrapper))
            self._state = _WRAPPER
        elif opener in CORRUPT_WRAPPERS:
            super().__init__(len(CORRUPT_WRAPPER))
            self._state = _CORRUPT
        else:
            super().__init__()
            self._state = _TAG
        self._end_wrapper = wrapper.replace("<", "</", 1)
        self._after_corrupt, self._after_wrapper = _after_wrapper(tags.invoke, self._end_wrapper)
        self._t = tags
        self._raw = False  # the value's string="true" attribute: raw text, not typed
        self._tools = tools
        # "count" after a blank mid-line is prose unless "<invoke" follows it at once.
        self._glued = opener in CORRUPT_WRAPPERS and context.after_blank
        self._searched = 0  # how much of a carried tag was already searched for '>'
        self._name = ""
        self._param = ""
        self._params: dict[str, Any] = {}
        self._text = TextValue()
        self._calls: list[Call] = []  # complete, not yet reported
        self._last_end: int | None = None  # end of the last complete invoke
        self._emitted = False

    def report(self) -> Verdict | None:
        """The calls complete and not yet reported, if any; the marker goes on."""
        calls, self._calls = tuple(self._calls), []
        self.ready = False
        if not calls:
            return None
        self._emitted = True
        return Verdict(calls, self._last_end, False, self._last_end or 0)

    def _over(self, resume: int) -> Verdict:
        """The marker is over: the calls not yet reported; scanning resumes at ``resume``."""
        calls, self._calls = tuple(self._calls), []
        self.ready = False
        if calls:
            self._emitted = True
        return Verdict(calls, self._last_end if calls else None, True, resume)

    def _fail(self, at: int) -> Verdict:
        """The text from the last complete invoke on is no call."""
        if self._emitted or self._calls:
            return self._over(at)
        return reject(at)

    def _tag(self, s: str, i: int, pattern: re.Pattern[str], literal: str) -> tuple[int, str | None]:
        """Parse an opening tag at ``s[i]``: (index after it, its name attribute).

        (i, None) with i unchanged: wait for more text; (-1, None): not such a tag.
        """
        after = i + len(literal)
        if after < len(s) and s[after] not in _SPACE:
            return -1, None
        j = s.find(">", i + max(self._searched, len(literal)), i + MAX_TAG + 1)
        if j < 0:
            if len(s) - i > MAX_TAG:
                return -1, None
            self._searched = len(s) - i
            return i, None
        self._searched = 0
        m = pattern.fullmatch(s, i, j + 1)
        if m is None:
            return -1, None
        self._raw = m.groupdict().get("string") == "true"
        return j + 1, m.group(1) if m.group(1) is not None else m.group(2)

    def _typed(self, value: str) -> Any:
        if self._raw:
            return value
        return typed_value(value, self._tools.property_schema(self._name, self._param))

    def scan(self, s: str, i: int) -> Verdict | int:
        base = self._carry.base
        n = len(s)
        self.waits_for = ""
        while i < n:
            state = self._state
            if state == _VALUE:
                i, value = self._text.read(s, i, self._t.end_parameter, self._t.after_value)
                if value is None:
                    # Inside a value, only the closing tag's first character can end it.
                    wait = self._t.end_parameter[0]
                    self.waits_for = wait if s.find(wait, i) < 0 else ""
                    return i
                self._params[self._param] = self._typed(value)
                self._state = _PARAMS
                continue
            if state in (_TAG, _PARAM_TAG):
                t = self._t
                literal, pattern = (t.invoke, t.invoke_tag) if state == _TAG else (t.parameter, t.parameter_tag)
                j, written = self._tag(s, i, pattern, literal)
                if j < 0:
                    return self._fail(base + i + 1)
                if written is None:
                    break
                if state == _TAG:
                    name = self._tools.resolve(written)
                    if name is None:
                        return self._fail(base + j)
                    self._name, self._params = name, {}
                    self._state = _PARAMS
                else:
                    self._param = written
                    self._state = _VALUE
                i = j
                continue
            if not (state == _CORRUPT and self._glued):
                i = skip_ws(s, i)
            if i >= n:
                break
            if state == _PARAMS:
                tag = self._t.after_value.which(s, i)
                if tag is None:
                    break
                if tag < 0:
                    return self._fail(base + i)
                if tag == 0:
                    self._state = _PARAM_TAG
                    continue
                i += len(self._t.end_invoke)
                self._calls.append(Call(self._name, self._params))
                self.ready = True
                self._last_end = base + i
                self._state = _AFTER
                continue
            # _CORRUPT, _WRAPPER, _AFTER: an invoke may start here (and, but after "count", the wrapper close)
            tag = (self._after_corrupt if state == _CORRUPT else self._after_wrapper).which(s, i)
            if tag == 0:
                self._state = _TAG
                continue
            if tag == 1:
                end = base + i + len(self._end_wrapper)
                calls, self._calls = tuple(self._calls), []
                self.ready = False
                return Verdict(calls, end, True, end)
            if tag is None:
                break
            if state == _AFTER:
                assert self._last_end is not None
                return self._over(self._last_end)
            return reject(len(CORRUPT_WRAPPER) if state == _CORRUPT else base + i)
        return i

    def finish(self) -> Verdict:
        if self._state == _AFTER:
            assert self._last_end is not None
            return self._over(self._last_end)
        return self._fail(self._carry.end)


# The namespace of Claude's own tool-use markup, which Kiro-served models leak with the tags
# (https://github.com/kaitranntt/CLIProxyAPIPlus/pull/146 tolerates it).
NAMESPACE: Final = "ant" "ml:"
NS_WRAPPER: Final = "<" + NAMESPACE + "function_calls>"
NS_TAGS: Final = Elements("<" + NAMESPACE + "invoke", "<" + NAMESPACE + "parameter")


class InvokeXml(Family):
    name = "invoke-xml"
    formats: tuple[str, ...] = ("invoke-xml",)
    openers: tuple[Opener, ...] = (Opener(WRAPPER), *(Opener(w, word=True, then="<") for w in CORRUPT_WRAPPERS), Opener(INVOKE),
               Opener(NS_WRAPPER), Opener(NS_TAGS.invoke))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        if opener.startswith("<" + NAMESPACE):  # the namespaced tags: the same calls
            return InvokeXmlParser(opener, tools, context, NS_WRAPPER, NS_TAGS)
        return InvokeXmlParser(opener, tools, context)


MINIMAX_WRAPPER: Final = "<minimax:tool_call>"


class MiniMaxM2(Family):
    """MiniMax M2: the same ``<invoke name=…><parameter name=…>`` calls inside
    ``<minimax:tool_call>`` (vLLM's ``minimax_m2`` parser)."""

    name = "minimax-m2"
    formats: tuple[str, ...] = ("minimax-m2",)
    openers: tuple[Opener, ...] = (Opener(MINIMAX_WRAPPER),)

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return InvokeXmlParser(opener, tools, context, MINIMAX_WRAPPER)


DSML: Final = "<｜DSML｜"
DSML_WRAPPER: Final = DSML + "function_calls>"
DSML_TOOL_CALLS: Final = DSML + "tool_calls>"
DSML_TAGS: Final = Elements(DSML + "invoke", DSML + "parameter")


class DeepSeekDsml(Family):
    """DeepSeek V3.2's DSML: invoke XML whose tags carry the ``<｜DSML｜`` prefix inside
    ``<｜DSML｜function_calls>``, each parameter saying ``string="true"`` (raw text) or
    ``"false"`` (JSON, typed by the schema); later DeepSeek models name the wrapper
    ``<｜DSML｜tool_calls>``, as DeepSeek V4 and V4.1 do (vLLM's ``deepseek_v32`` and ``deepseek_v4``
    parsers)."""

    name = "deepseek-dsml"
    formats: tuple[str, ...] = ("deepseek-v32", "deepseek-v4")
    openers: tuple[Opener, ...] = (Opener(DSML_WRAPPER), Opener(DSML_TOOL_CALLS))

    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return InvokeXmlParser(opener, tools, context, opener, DSML_TAGS)
