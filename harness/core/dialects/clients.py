"""The client profiles, one object each: the kinds of client the harness plays in front
of the proxy under test.

A profile says which wire dialect its client posts to and reads answers in, which one
a case for it is written in (a Responses client says a Chat Completions case in its own
API's words), how it reads calls (structured, or as XML in the text), and the headers
and claimed features it comes with. Adding a profile is one entry here; what it means
for a case (``default_profiles``) follows from these facts.

Everything past the edges (scenario files, the command line, reports) holds the
``ClientProfile`` objects themselves; ``CLIENTS`` is the one list of their names.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from harness.core.dialects.anthropic import ANTHROPIC
from harness.core.dialects.base import WireDialect
from harness.core.dialects.client_shapes import CHAT_LAYOUT, MESSAGES_LAYOUT, RESPONSES_LAYOUT, ClientShape, load_shape
from harness.core.dialects.openai import OPENAI
from harness.core.dialects.responses import RESPONSES
from harness.core.dialects.responses_request import chat_to_responses


@dataclass(frozen=True, slots=True, eq=False)
class ClientProfile:
    """One kind of client (one object each: compared and hashed by identity)."""

    name: str
    label: str  # how a message names its client ("an Anthropic client")
    answers: WireDialect  # the API it posts to and reads answers in
    written_in: WireDialect  # the API a case's request for it is written in
    headers: Mapping[str, str]  # what its client family sends, so a proxy that looks may recognise it
    # A client of another API than its cases': the profile they are written under, and how
    # its client says such a request in its own API's words.
    written_as: ClientProfile | None = None
    rewrite: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    features: tuple[str, ...] = ()  # what a proxy must claim to be played with this client
    reads_xml: bool = False  # it reads tool calls as XML in the text, not as structured calls
    # A real client (Claude Code, Copilot Chat, ...): the dialect profile it is judged as, and the
    # shape its requests take (headers, system layout, tools, fields, query string).
    base: ClientProfile | None = None
    shape: ClientShape | None = None

    @property
    def endpoint(self) -> str:
        """Where its client posts, below the proxy's base URL (with its query string)."""
        return self.answers.endpoint + (self.shape.query if self.shape is not None else "")

    @property
    def judged_as(self) -> ClientProfile:
        """The dialect profile whose rules judge this client's exchanges (itself, unless a real client)."""
        return self.base or self

    @property
    def real(self) -> bool:
        """Whether it plays a named real client's requests."""
        return self.shape is not None

    @property
    def case_profile(self) -> ClientProfile:
        """The profile a case for this client is written under (itself, unless translated)."""
        return self.written_as or self

    def body(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """A case's request body as this client sends it."""
        return self.rewrite(request) if self.rewrite is not None else dict(request)

    def __repr__(self) -> str:
        return f"ClientProfile({self.name!r})"


#: A client profile, as the model and the exchange records name its type.
Profile = ClientProfile


_OPENAI_AGENT = "OpenAI/Python toolcall-conformance"

OPENAI_CLIENT = ClientProfile("openai", "an OpenAI client", OPENAI, OPENAI, MappingProxyType({"User-Agent": _OPENAI_AGENT}))
XML_CLIENT = ClientProfile("xml-client", "an XML-reading client", OPENAI, OPENAI,
                           MappingProxyType({"User-Agent": "Cline/3.38.0 toolcall-conformance"}),
                           features=("xml-client",), reads_xml=True)
ANTHROPIC_CLIENT = ClientProfile("anthropic", "an Anthropic client", ANTHROPIC, ANTHROPIC, MappingProxyType(
    {"User-Agent": "Anthropic/Python toolcall-conformance", "anthropic-version": "2023-06-01"}))
RESPONSES_CLIENT = ClientProfile("responses", "a Responses client", RESPONSES, OPENAI,
                                 MappingProxyType({"User-Agent": _OPENAI_AGENT}),
                                 written_as=OPENAI_CLIENT, rewrite=chat_to_responses)



def real_client(base: ClientProfile, shape: ClientShape) -> ClientProfile:
    """A real client over a dialect profile: the base's API and reading, its cases, its request
    rewritten into the base's API and then laid out in the client's shape."""

    def rewrite(request: Mapping[str, Any]) -> dict[str, Any]:
        return shape.apply(base.body(request))

    return ClientProfile(shape.name, f"{shape.client}", base.answers, base.written_in, shape.headers,
                         written_as=base.case_profile, rewrite=rewrite, features=base.features,
                         reads_xml=base.reads_xml, base=base, shape=shape)


#: The real clients, each a dialect profile and its shape (sources: each shape's ``sources``).
REAL_CLIENTS: tuple[ClientProfile, ...] = (
    real_client(OPENAI_CLIENT, load_shape("copilot-chat", CHAT_LAYOUT)),
    real_client(RESPONSES_CLIENT, load_shape("copilot-responses", RESPONSES_LAYOUT)),
    real_client(ANTHROPIC_CLIENT, load_shape("claude-code", MESSAGES_LAYOUT)),
    real_client(RESPONSES_CLIENT, load_shape("codex", RESPONSES_LAYOUT)),
    real_client(OPENAI_CLIENT, load_shape("opencode", CHAT_LAYOUT)),
    real_client(XML_CLIENT, load_shape("cline", CHAT_LAYOUT)),
    real_client(OPENAI_CLIENT, load_shape("roo", CHAT_LAYOUT)),
)

#: Every client profile by name: the one list of profile names.
CLIENTS: Mapping[str, ClientProfile] = MappingProxyType(
    {p.name: p for p in (OPENAI_CLIENT, XML_CLIENT, ANTHROPIC_CLIENT, RESPONSES_CLIENT, *REAL_CLIENTS)})
DEFAULT_PROFILE: ClientProfile = OPENAI_CLIENT  # a case's client when it names none

#: Old spellings still read wherever a profile or feature is named (scenario files, ``--client-profile``,
#: ``--features``): the ``xml-client`` profile and feature, for clients that read tool calls as XML in the
#: content (Cline, Roo Code, Kilo Code), were first called ``vtc``, after "virtual tool calling".
OLD_NAMES: Mapping[str, str] = MappingProxyType({"vtc": XML_CLIENT.name})


def current_name(name: str) -> str:
    """A profile or feature name in today's spelling (an old spelling is translated)."""
    return OLD_NAMES.get(name, name)


def profile_choices() -> str:
    """Every profile name, for a message that offers them (old spellings said as such)."""
    old = "; ".join(f"{o} is the old spelling of {n}" for o, n in OLD_NAMES.items())
    return ", ".join(CLIENTS) + (f" ({old})" if old else "")


def client(name: str) -> ClientProfile:
    """The profile called ``name`` (an old spelling is read as today's); ``ValueError``
    naming every choice."""
    try:
        return CLIENTS[current_name(name)]
    except KeyError:
        raise ValueError(f"unknown client profile {name!r} (choose from {profile_choices()})") from None


def reads_own_api(profile: ClientProfile) -> bool:
    """Whether no other profile reads answers in the API ``profile``'s client reads (so an
    exchange of it can only be read in that API)."""
    judged = profile.judged_as
    return sum(p.answers is judged.answers for p in CLIENTS.values() if not p.real) == 1


def profiles_written_in(dialect: WireDialect) -> tuple[ClientProfile, ...]:
    """The profiles whose cases are written in ``dialect``'s API (not translated into another),
    first the one a case of that API names."""
    return tuple(p for p in CLIENTS.values() if p.written_in is dialect and p.written_as is None and not p.real)


def default_profiles(profile: ClientProfile) -> tuple[ClientProfile, ...]:
    """The profiles a case written under ``profile`` is meaningful under when it names none:
    every profile whose cases are written in the same API."""
    return profiles_written_in(profile.written_in)
