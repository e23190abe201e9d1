"""Text-format mutants: rescuers with the defects real tool parsers have, per format.

Each swaps the reference proxy's rescuer (streaming path) for one that gets one thing
about the text formats wrong, and names the generated format × case scenarios that
expose it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mutants.base import Mutant, with_parts
from mutants.openai import with_rescuer
from reference_proxy.parts import Parts
from reference_proxy.pipeline import RescuerLike
from reference_proxy.rescue import Event, Rescuer, Text, ToolSpec
from reference_proxy.rescue.families import CALLS
from reference_proxy.rescue.families.code import Code
from reference_proxy.rescue.families.harmony import Harmony, HarmonyParser
from reference_proxy.rescue.families.hermes import Hermes
from reference_proxy.rescue.families.invoke_xml import DSML_TAGS, DeepSeekDsml, InvokeXmlParser
from reference_proxy.rescue.families.json_calls import calls_from_values
from reference_proxy.rescue.families.qwen3_coder import Qwen3Coder, Qwen3CoderParser
from reference_proxy.rescue.family import Carry, Context, Family, MarkerParser, Verdict, accept, reject
from reference_proxy.rescue.openers import Openers
from reference_proxy.rescue.scanner import FAMILIES
from reference_proxy.rescue.toolbox import Toolbox


def _replaced(old: type[Family], new: Family) -> tuple[Family, ...]:
    """The rescuer's families with one swapped, inside fenced blocks too."""
    calls = tuple(new if isinstance(f, old) else f for f in CALLS)
    swapped = tuple(new if isinstance(f, old) else f for f in FAMILIES)
    return tuple(Code(calls, nest=f.nest) if isinstance(f, Code) else f for f in swapped)


def _rescuers(families: Sequence[Family]) -> Any:
    openers = Openers(families)

    def factory(tools: Sequence[ToolSpec], buffer_cap: int) -> RescuerLike:
        return Rescuer(tools, buffer_cap=buffer_cap, openers=openers)

    return factory


# --------------------------------------------------------------------------- first closer


class FirstCloserParser(MarkerParser):
    """``<tool_call>(.*?)</tool_call>``: the call ends at the first closing tag, even
    inside a JSON string."""

    closer = "</tool_call>"

    def __init__(self, tools: Toolbox) -> None:
        self._tools = tools
        self._carry = Carry()

    def feed(self, text: str, start: int = 0) -> Verdict | None:
        s, i = self._carry.join(text, start)
        k = s.find(self.closer, i + 1)
        if k < 0:
            self._carry.keep(s, i)
            return None
        end = self._carry.base + k + len(self.closer)
        try:
            calls = calls_from_values([json.loads(s[i + len("<tool_call>") : k])], self._tools)
        except ValueError:
            return reject(end)
        return accept(calls, end) if calls else reject(end)

    def finish(self) -> Verdict:
        return reject(self._carry.end)


class FirstCloserHermes(Hermes):
    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return FirstCloserParser(tools)


# --------------------------------------------------------------------------- typing by guess


class GuessingParser(Qwen3CoderParser):
    """Types a bare value by what it looks like (JSON if it parses), not by the schema."""

    def _end_value(self) -> None:
        value = "".join(self._value)
        value = value[:-1] if value.endswith("\n") else value
        try:
            self._params[self._param] = json.loads(value)
        except ValueError:
            self._params[self._param] = value
        self._value = []


class GuessingQwen3Coder(Qwen3Coder):
    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return GuessingParser(opener, tools)


# --------------------------------------------------------------------------- text after a failed call


class DropsTextAfterMalformed:
    """Once a marker turned out to be no call (its markup is given back as text), drops
    every later piece of text: the rest of the answer after a broken call is lost."""

    def __init__(self, tools: Sequence[ToolSpec], buffer_cap: int) -> None:
        self.inner = Rescuer(tools, buffer_cap=buffer_cap)
        self._broken = False

    @property
    def overflowed(self) -> bool:
        return self.inner.overflowed

    def _filter(self, events: list[Event]) -> list[Event]:
        out: list[Event] = []
        for event in events:
            if isinstance(event, Text):
                if self._broken:
                    continue
                if "<tool_call>" in event:
                    self._broken = True
                    event = Text(event[: event.index("<tool_call>") + len("<tool_call>")])
            out.append(event)
        return out

    def feed(self, text: str) -> list[Event]:
        return self._filter(self.inner.feed(text))

    def finish(self) -> list[Event]:
        return self._filter(self.inner.finish())


# --------------------------------------------------------------------------- Harmony analysis as text


class AnalysisAsTextParser(HarmonyParser):
    """Reads an ``analysis`` message's header as text and scans its body like any other: a
    call gpt-oss addresses to a function from its analysis channel is lost."""

    def _header(self, s: str, h: int) -> tuple[Verdict | None, int]:
        k = s.find("<|message|>", h)
        if k >= 0 and s.startswith("analysis", s.find("<|channel|>", h) + len("<|channel|>")):
            return reject(k + len("<|message|>") - h), h
        return super()._header(s, h)


class AnalysisAsTextHarmony(Harmony):
    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return AnalysisAsTextParser(tools)


# --------------------------------------------------------------------------- DSML string attribute ignored


class AttributeBlindParser(InvokeXmlParser):
    """Ignores DSML's ``string="true"`` and reads every value that parses as JSON."""

    def _typed(self, value: str) -> Any:
        try:
            return json.loads(value)
        except ValueError:
            return value


class AttributeBlindDsml(DeepSeekDsml):
    def parser(self, opener: str, tools: Toolbox, context: Context) -> MarkerParser:
        return AttributeBlindParser(opener, tools, context, opener, DSML_TAGS)


MUTANTS: tuple[Mutant, ...] = (
    Mutant("stops-at-first-closer", "Ends a Hermes call at the first `</tool_call>`, even inside a string value.",
           ("CALLS-001", "TEXT-001"), ("hermes-hermes.delimiter-in-value",),
           with_parts(Parts(chat_pipeline=with_rescuer(_rescuers(_replaced(Hermes, FirstCloserHermes())))))),
    Mutant("types-by-guessing", "Types Qwen3-Coder values by their look, not the schema: '0042' becomes 42.",
           ("CALLS-001",), ("qwen-coder-qwen-coder.numeric-string",),
           with_parts(Parts(chat_pipeline=with_rescuer(_rescuers(_replaced(Qwen3Coder, GuessingQwen3Coder())))))),
    Mutant("calls-from-reasoning", "Extracts calls the model drafted inside a `<think>` block.",
           ("CALLS-001", "TEXT-001"), ("hermes-hermes.reasoning-block", "qwen-coder-qwen-coder.reasoning-block"),
           with_parts(Parts(chat_pipeline=with_rescuer(_rescuers(tuple(f for f in FAMILIES if f.name != "reasoning")))))),
    Mutant("analysis-all-text", "Reads every Harmony `analysis` message as text, one addressed to a function "
           "too, which llama.cpp's and vLLM's gpt-oss parsers take as a call.",
           ("CALLS-001",), ("gpt-oss-analysis-channel-call",),
           with_parts(Parts(chat_pipeline=with_rescuer(_rescuers(_replaced(Harmony, AnalysisAsTextHarmony())))))),
    Mutant("dsml-ignores-string-attribute", "Reads a DSML value marked string=\"true\" as JSON: '1.10' becomes 1.1.",
           ("CALLS-001",), ("deepseek-deepseek-v32.numeric-string",),
           with_parts(Parts(chat_pipeline=with_rescuer(_rescuers(_replaced(DeepSeekDsml, AttributeBlindDsml())))))),
    Mutant("drops-text-after-malformed", "Drops the text after a call it could not parse.",
           ("TEXT-001",), ("hermes-hermes.malformed-body",),
           with_parts(Parts(chat_pipeline=with_rescuer(DropsTextAfterMalformed)))),
)
