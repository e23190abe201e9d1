"""One generated case, and the scenario it is: frames, request and expectation.

A ``Case`` holds the parts the strategies drew (tools, prose, calls, where the answer
is cut); ``Case.scenario_data`` writes them as a scenario mapping, the same YAML a
person writes, so a finding is played, judged, saved and replayed like any case of
the library. The expectation comes only from these parts: the calls as drawn (typed
by the schema they were drawn from), the prose joined with a line break where each
call block sat (the harness folds white space, so a proxy that keeps or drops the
line breaks around a call passes either way), and the finish reason a client must get
for an answer with or without calls.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.dialects import NativeCall, WireDialect
from harness.core.dialects.clients import CLIENTS, Profile
from harness.core.dialects.frames import frame_to_mapping
from harness.generate.formats import FORMATS, Call
from harness.judge.markup import DEFAULT_MARKERS

# The client profiles it writes cases for: the plain client of each API (a Responses client's
# cases are written as a Chat Completions client's, and played to it in its own API).
PROFILES: tuple[Profile, ...] = tuple(p for p in CLIENTS.values() if not p.real)
# The plain client of each dialect (``fuzz --client-profile``): those of them reading structured calls.
DIALECT_CLIENTS: tuple[Profile, ...] = tuple(p for p in PROFILES if not p.reads_xml)
SEPARATOR = "\n"  # what a model writes between prose and a call block
NATIVE = "native"  # the format id of answers whose calls come as structured calls
# A torn case tears its first event at every byte and the later ones only within this many bytes
# of their edges, line breaks, non-ASCII bytes and backslashes (``backend.tear_window``): "data: "
# and a character of four bytes with room on each side, every cut the full tear makes there.
TEAR_WINDOW = 6


@dataclass(frozen=True)
class Tool:
    name: str
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Case:
    """The parts of one generated answer, and how it reaches the proxy."""

    profile: Profile
    tools: tuple[Tool, ...]
    format_id: str | None  # the text format of the calls; None: native calls (or no calls)
    prose: tuple[str, ...]  # len(blocks) + 1 stretches of text around the call blocks
    blocks: tuple[tuple[Call, ...], ...]  # call blocks written in the text format, in order
    native: tuple[Call, ...]  # calls the backend sends as structured calls, after the text
    finish: str  # the backend's finish reason, in the backend's dialect
    stream: bool
    tool_choice: Any = None  # None: left out of the request
    # Where the streamed answer is cut: for each of ``pieces``, offsets into that piece
    # (0 cuts just before it). Offsets relative to the piece they cut stay where they were
    # while hypothesis shrinks the other pieces, so a shrunk case keeps the cut it needs.
    cuts: tuple[tuple[int, ...], ...] = ()
    per_character: bool = False  # a frame per character of the text
    write_bytes: int | None = None
    split_multibyte: bool = False
    # A closed reasoning block opening the answer, drafting calls in the format: text, not calls.
    reasoning: str = ""
    seed: int | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ the answer's parts

    @property
    def calls(self) -> tuple[Call, ...]:
        return (*(c for block in self.blocks for c in block), *self.native)

    @property
    def text_pieces(self) -> tuple[str, ...]:
        """The backend's content in the pieces it was drawn as: the reasoning block, the
        prose, and each call block on its own lines."""
        if self.format_id is None or not self.blocks:
            return (self.reasoning, self.prose[0] if self.prose else "")
        writer = FORMATS[self.format_id]
        out = [self.reasoning, self.prose[0]]
        for block, after in zip(self.blocks, self.prose[1:]):
            out += [SEPARATOR, writer.write(block), SEPARATOR, after]
        return tuple(out)

    @property
    def pieces(self) -> tuple[str, ...]:
        """What a stream is cut in: the text's pieces, then each native call's arguments."""
        return (*self.text_pieces, *(json.dumps(dict(c.arguments), ensure_ascii=False) for c in self.native))

    @property
    def text(self) -> str:
        """The backend's content: prose, and each call block on its own lines."""
        return "".join(self.text_pieces)

    @property
    def splits(self) -> tuple[int, ...]:
        """The cuts as offsets into the text, then into the native arguments (``rechunk.Layout``)."""
        text = len(self.text)
        chosen: set[int] = set(range(1, text)) if self.per_character else set()
        start = 0
        for piece, offsets in zip(self.pieces, self.cuts):
            chosen.update(start + min(offset, len(piece)) for offset in offsets)
            start += len(piece)
        return tuple(sorted(c for c in chosen if 0 < c < start and c != text))

    @property
    def visible(self) -> str:
        """The text the client must see: the reasoning block as written, then the prose
        with a line break where each block sat."""
        return self.reasoning + SEPARATOR.join(self.prose)

    @property
    def family(self) -> str:
        return FORMATS[self.format_id].family if self.format_id is not None else "plain"

    @property
    def model(self) -> str:
        return FORMATS[self.format_id].model if self.format_id is not None else "generated-model"

    @property
    def wire(self) -> WireDialect:
        """The client's dialect, which its backend speaks too."""
        return self.profile.written_in

    @property
    def expected_finish(self) -> str:
        return self.wire.native_finish("tool") if self.calls else self.finish

    # ------------------------------------------------------------------ as a scenario

    def frames(self) -> list[Any]:
        frames: list[Any] = [self.text] if self.text else []
        wire = self.wire
        for i, call in enumerate(self.native):
            arguments = json.dumps(dict(call.arguments), ensure_ascii=False)
            native = NativeCall(call.name, f"{wire.call_id_prefix}gen{i:02d}", (arguments,))
            frames.append(frame_to_mapping(wire.calls.whole(i, native)))
        return frames

    def request(self) -> dict[str, Any]:
        question = "Please help with this."
        requests = self.wire.requests
        request: dict[str, Any] = {"model": self.model}
        if requests.needs_max_tokens:
            request["max_tokens"] = 1024
        request |= {
            "stream": self.stream,
            "messages": [{"role": "user", "content": question}],
            "tools": [requests.tool(t.name, t.schema, f"The {t.name} tool.") for t in self.tools],
        }
        if self.tool_choice is not None:
            request["tool_choice"] = self.tool_choice
        return request

    def expect(self) -> dict[str, Any]:
        # A reasoning block shows the format's markup on purpose; the exact content still
        # catches any other markup left in the text.
        markers = (tuple(FORMATS[self.format_id].delimiters)
                   if self.format_id is not None and self.blocks and not self.reasoning else ())
        # Only a delimiter that is markup on its own counts as a leak marker (a bare '>' is prose too).
        own = [m for m in markers if len(m.strip()) > 2 and m.strip() not in DEFAULT_MARKERS]
        expect: dict[str, Any] = {"tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in self.calls]}
        if self.wire.splits_text and self.blocks:
            expect["content_regex"] = seams_pattern(self.prose)
        else:
            expect["content"] = self.visible
        expect["finish_reason"] = self.expected_finish
        if own:
            expect["markers"] = [m.strip() for m in own]
        return expect

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.base_data(), sort_keys=True, ensure_ascii=False,
                                         default=str).encode()).hexdigest()[:10]

    def base_data(self) -> dict[str, Any]:
        """The scenario before its frames are cut (the whole text in one frame)."""
        backend: dict[str, Any] = {"dialect": self.wire.name, "frames": self.frames(), "finish_reason": self.finish}
        written = self.profile.case_profile.name  # a scenario names the profile its request is written for
        played = {"profile": written, "profiles": [written], "request": self.request()}
        data: dict[str, Any] = {"backend": backend, "client": played, "expect": self.expect()}
        if self.profile.features:
            data = {"requires": list(self.profile.features), **data}
        return data

    def describe(self) -> str:
        what = f"{len(self.calls)} call(s)"
        if self.format_id is not None and self.blocks:
            what += f" as {self.format_id} text"
        elif self.native:
            what += " as native calls"
        if self.reasoning:
            what += ", after a reasoning block drafting calls"
        return f"{what}, {len(self.splits)} cut(s), {'streaming' if self.stream else 'non-streaming'}"


def seams_pattern(stretches: Sequence[str]) -> str:
    """A pattern for the stretches of prose in order, with any white space (or none)
    where a call block sat between them. A Messages answer puts the text before and
    after a tool_use into separate text blocks, which the client shows apart and the
    harness reads joined: a proxy may trim each block, so the seams cannot demand a
    line break there."""
    parts = []
    for stretch in stretches:
        pieces = stretch.split()
        parts.append(r"\s+".join(re.escape(p) for p in pieces))
    return r"\A\s*" + r"\s*".join(p for p in parts if p) + r"\s*\Z"


def scenario_data(case: Case, *, rules: Sequence[str] = (), command: str | None = None) -> dict[str, Any]:
    """The case as a scenario mapping, cut as drawn; ``rules`` name what it broke."""
    from harness.core.frames.rechunk import apply_split
    from harness.core.scenario.loading import parse_scenario

    family = case.family
    key = case.digest()
    data: dict[str, Any] = {
        "id": f"{family}-generated-{key}",
        "title": f"Generated: {case.describe()}",
        "tags": ["generated", family] + (["native"] if case.native else []),
        "source": "synthetic, generated by toolcall-conformance fuzz"
                  + (f" (seed {case.seed})" if case.seed is not None else "")
                  + (f"; it broke {', '.join(rules)}" if rules else "")
                  + (f"; found with: {command}" if command else ""),
        **case.base_data(),
    }
    if not case.stream:
        data["rechunk"] = False
    scenario = parse_scenario(data, family=family)
    if case.stream and (case.splits or case.write_bytes or case.split_multibyte):
        scenario = apply_split(scenario, case.splits, write_bytes=case.write_bytes,
                               split_multibyte=case.split_multibyte,
                               tear_window=TEAR_WINDOW if case.write_bytes is not None else None)
    return dict(scenario.raw)
