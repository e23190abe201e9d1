"""The client profiles, one object each: the kinds of client the harness plays in front
of the proxy under test.

A profile says which wire dialect its client posts to and reads answers in, which one
a case for it is written in (a Responses client says a Chat Completions case in its own
API's words), how it reads calls (structured, or as XML in the text), and the headers
and claimed features it comes with. Adding a profile is one entry here; what it means
for a case (``default_profiles``) follows from these facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.base import WireDialect
from harness.core.dialects.openai import OPENAI
from harness.core.dialects.responses import RESPONSES
from harness.core.dialects.responses_request import chat_to_responses
from harness.core.scenario.model import Profile


@dataclass(frozen=True, slots=True)
class ClientProfile:
    """One kind of client."""

    name: Profile
    label: str  # how a message names its client ("an Anthropic client")
    answers: WireDialect  # the API it posts to and reads answers in
    written_in: WireDialect  # the API a case's request for it is written in
    headers: Mapping[str, str]  # what its client family sends, so a proxy that looks may recognise it
    # A client of another API than its cases': the profile they are written under, and how
    # its client says such a request in its own API's words.
    written_as: Profile | None = None
    rewrite: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    features: tuple[str, ...] = ()  # what a proxy must claim to be played with this client
    reads_xml: bool = False  # it reads tool calls as XML in the text, not as structured calls

    @property
    def endpoint(self) -> str:
        """Where its client posts, below the proxy's base URL."""
        return self.answers.endpoint

    @property
    def case_profile(self) -> Profile:
        """The profile a case for this client is written under (itself, unless translated)."""
        return self.written_as or self.name


_OPENAI_AGENT = "OpenAI/Python toolcall-conformance"

CLIENTS: Mapping[str, ClientProfile] = MappingProxyType({p.name: p for p in (
    ClientProfile("openai", "an OpenAI client", OPENAI, OPENAI, MappingProxyType({"User-Agent": _OPENAI_AGENT})),
    ClientProfile("xml-client", "an XML-reading client", OPENAI, OPENAI,
                  MappingProxyType({"User-Agent": "Cline/3.38.0 toolcall-conformance"}),
                  features=("xml-client",), reads_xml=True),
    ClientProfile("anthropic", "an Anthropic client", ANTHROPIC, ANTHROPIC, MappingProxyType(
        {"User-Agent": "Anthropic/Python toolcall-conformance", "anthropic-version": "2023-06-01"})),
    ClientProfile("responses", "a Responses client", RESPONSES, OPENAI, MappingProxyType({"User-Agent": _OPENAI_AGENT}),
                  written_as="openai", rewrite=chat_to_responses),
)})


def client(name: str) -> ClientProfile:
    """The profile called ``name``; ``ValueError`` naming the choices."""
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValueError(f"unknown client profile {name!r} (choose from {', '.join(CLIENTS)})") from None


def reads_own_api(name: str) -> bool:
    """Whether no other profile reads answers in the API ``name``'s client reads (so an
    exchange of it can only be read in that API)."""
    own = client(name).answers
    return sum(p.answers is own for p in CLIENTS.values()) == 1


def profiles_written_in(dialect: str) -> tuple[Profile, ...]:
    """The profiles whose cases are written in ``dialect``'s API (not translated into another),
    first the one a case of that API names."""
    return tuple(p.name for p in CLIENTS.values() if p.written_in.name == dialect and p.written_as is None)


def default_profiles(name: str) -> tuple[Profile, ...]:
    """The profiles a case written under ``name`` is meaningful under when it names none:
    every profile whose cases are written in the same API."""
    return profiles_written_in(client(name).written_in.name)
