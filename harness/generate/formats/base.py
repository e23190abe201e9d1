"""What a text format is: how a model writes tool calls as text.

The suite's writers are its own, independent of any proxy's parser (the reference
proxy's included): a bug shared by a writer and a parser would make both agree on
the wrong text. Each writer produces the bytes a model really emits, as its public
chat template renders an assistant turn holding these calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol


@dataclass(frozen=True)
class Call:
    """One tool call: the tool's name and its arguments (JSON-compatible values)."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Reasoning:
    """How a model writes its reasoning into the text when no reasoning parser takes it
    out: the block's opening and closing markup, and what separates it from the answer."""

    open: str
    close: str
    gap: str = "\n\n"

    def wrap(self, body: str) -> str:
        """``body`` as a closed reasoning block, followed by its gap."""
        return f"{self.open}{body}{self.close}{self.gap}"


@dataclass(frozen=True)
class Prose:
    """How a model writes ordinary text (a preamble, a closing remark) in the answer that
    holds its calls: the markup around a stretch of it, whether text may follow the
    calls in the same answer, what separates two blocks of calls, and the markup around an
    answer that makes no call (an explanation of the format, an example)."""

    open: str = ""
    close: str = ""
    trailing: bool = True
    joint: str = "\n"
    answer: tuple[str, str] = ("", "")

    def wrap(self, text: str) -> str:
        return f"{self.open}{text}{self.close}"

    def alone(self, text: str) -> str:
        """``text`` as the whole of an answer that makes no call."""
        return f"{self.answer[0]}{text}{self.answer[1]}"


PLAIN = Prose()
"""Text as it is, before and after the calls."""
PREAMBLE = Prose("<|channel|>commentary<|message|>", "<|end|>", trailing=False, joint="",
                 answer=("<|channel|>final<|message|>", "<|return|>"))
"""gpt-oss: a preamble is a commentary message with no recipient, and a call's <|call|> ends
the turn, so no text follows it (OpenAI cookbook, "OpenAI Harmony Response Format",
Preambles); messages follow one another with nothing but their special tokens between them,
and an answer with no call is a final message ended by <|return|> (the same page, Reasoning)."""


THINK = Reasoning("<think>\n", "\n</think>")
"""Qwen3, DeepSeek-R1, GLM and most reasoning models."""
SEED_THINK = Reasoning("<seed:think>\n", "\n</seed:think>")
"""Seed-OSS (vLLM's seed_oss fixtures: https://github.com/vllm-project/vllm/blob/main/tests/tool_parsers/test_seed_oss_tool_parser.py)."""
ANALYSIS = Reasoning("<|channel|>analysis<|message|>", "<|end|>", "")
"""gpt-oss: an analysis message of Harmony's; the next message's <|start|> follows <|end|> at once."""


class TextFormat(Protocol):
    """A way models write tool calls into their text (read-only: a writer's class says it)."""

    @property
    def id(self) -> str:
        """Stable format id, e.g. ``hermes``, ``qwen-coder``."""

    @property
    def family(self) -> str:
        """The ``scenarios/<family>/`` folder its cases live in."""

    @property
    def model(self) -> str:
        """A model name that emits it (used as ``request.model``)."""

    @property
    def delimiters(self) -> tuple[str, ...]:
        """Every literal marker the format writes (openers, closers, separators)."""

    @property
    def special(self) -> tuple[str, ...]:
        """The delimiters that are one token of the model's tokenizer: a detokenizer never
        splits them across frames (only a labelled stress case does)."""

    @property
    def reasoning(self) -> Reasoning:
        """How the model's reasoning reads in the text."""

    @property
    def prose(self) -> Prose:
        """How the model's ordinary text reads around its calls."""

    def write(self, calls: Sequence[Call]) -> str:
        """The text a model writes for these calls."""
        ...


class FormatError(ValueError):
    """These calls cannot be written in this format (e.g. an argument named like the
    format's own name key)."""


def json_text(value: Any) -> str:
    """JSON as the chat templates write it (Jinja's ``tojson``: ``", "`` and ``": "``
    separators, non-ASCII kept as it is)."""
    return json.dumps(value, ensure_ascii=False)


def bare_value(value: Any) -> str:
    """A value written as bare text between tags (Qwen3-Coder, invoke XML, Cline XML):
    strings as they are, everything else as JSON, which the schema types back."""
    return value if isinstance(value, str) else json_text(value)


def tagged(call: Call, head: str, argument: Callable[[str, Any], str], tail: str) -> str:
    """One call written as a block of markup: ``head``, then each argument as ``argument``
    writes it, in order, then ``tail`` (GLM, Qwen3-Coder, invoke XML, Cline XML)."""
    return head + "".join(argument(key, value) for key, value in call.arguments.items()) + tail


def require_calls(calls: Sequence[Call]) -> None:
    if not calls:
        raise FormatError("a tool-call text needs at least one call")


class Writer:
    """What every writer shares (a template method): an answer without a call is refused
    before the format writes its ``text``; reasoning reads as ``<think>``, prose as plain text, and no delimiter
    is a single token unless the format says so. A writer names its identity where it is
    declared: ``class Hermes(Writer, id="hermes", family="hermes", model="qwen3-8b")``."""

    id: ClassVar[str]
    family: ClassVar[str]
    model: ClassVar[str]
    delimiters: ClassVar[tuple[str, ...]]
    special: ClassVar[tuple[str, ...]] = ()
    reasoning: ClassVar[Reasoning] = THINK
    prose: ClassVar[Prose] = PLAIN

    def __init_subclass__(cls, *, id: str = "", family: str = "", model: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if id:
            cls.id, cls.family, cls.model = id, family, model

    def write(self, calls: Sequence[Call]) -> str:
        require_calls(calls)
        return self.text(calls)

    def text(self, calls: Sequence[Call]) -> str:
        """The text a model writes for these calls (at least one)."""
        raise NotImplementedError


class JsonList(Writer):
    """A marker glued to a JSON list of ``{"name", "arguments"}`` objects (Mistral before
    tokenizer v11, Granite, Phi-4-mini)."""

    prefix: ClassVar[str]

    def text(self, calls: Sequence[Call]) -> str:
        return self.prefix + json_text([{"name": c.name, "arguments": dict(c.arguments)} for c in calls])
