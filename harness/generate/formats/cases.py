"""The case taxonomy played in every text format: one scenario per format × case id.

Each builder takes a format's writer and returns the scenario mapping for one cell,
or raises ``NotApplicable`` when the format cannot express the case. The frames are
the writer's text, split where the case needs (inside delimiters, escapes,
multi-byte characters); the expectation is what an agent client needs, never what a
given proxy happens to do. ``generate`` writes the mappings as YAML files.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

import yaml

from harness.core.dialects import OPENAI
from harness.core.dialects.clients import OPENAI_CLIENT, XML_CLIENT
from harness.generate.formats.base import Call, TextFormat

Mapping_ = dict[str, Any]


class NotApplicable(Exception):
    """This format cannot express the case (the taxonomy records why)."""


@dataclass(frozen=True)
class CaseId:
    id: str
    meaning: str


@dataclass(frozen=True)
class Taxonomy:
    cases: tuple[CaseId, ...]
    not_applicable: Mapping[str, Mapping[str, str]]
    """format id -> case id -> why the cell cannot exist."""
    pending: Mapping[str, str]
    """format id -> why its cells are not written yet (an open gap, shown as such)."""

    def reason(self, format_id: str, case_id: str) -> str | None:
        return self.not_applicable.get(format_id, {}).get(case_id)


@cache
def taxonomy() -> Taxonomy:
    """The taxonomy as ``taxonomy.yaml`` (next to this module) holds it."""
    data = yaml.safe_load(resources.files("harness.generate.formats").joinpath("taxonomy.yaml").read_text("utf-8"))
    cases = tuple(CaseId(c["id"], c["meaning"]) for c in data["cases"])
    return Taxonomy(cases, data.get("not_applicable") or {}, data.get("pending") or {})


# --------------------------------------------------------------------------- tools


def _tool(name: str, description: str, properties: Mapping[str, Any], required: Sequence[str] = ()) -> Mapping_:
    parameters: Mapping_ = {"type": "object", "properties": dict(properties)}
    if required:
        parameters["required"] = list(required)
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


READ_FILE = _tool("read_file", "Read a file of the workspace.", {"path": {"type": "string"}}, ["path"])
WRITE_FILE = _tool(
    "write_file", "Write a file.", {"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]
)
GET_TIME = _tool("get_time", "The current time.", {})
CREATE_ISSUE = _tool(
    "create_issue",
    "File an issue.",
    {
        "title": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"},
        "steps": {"type": "array", "items": {"type": "object"}},
    },
    ["title"],
)
CONFIGURE = _tool(
    "configure",
    "Change the build settings.",
    {
        "retries": {"type": "integer"},
        "ratio": {"type": "number"},
        "verbose": {"type": "boolean"},
        "timeout": {"type": ["integer", "null"]},
        "targets": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object"},
    },
    ["retries"],
)
TAG_RELEASE = _tool(
    "tag_release",
    "Tag a release.",
    {"ticket": {"type": "string"}, "version": {"type": "string"}, "flag": {"type": "string"},
     "nothing": {"type": "string"}, "big": {"type": "string"}},
    ["ticket"],
)

READ = Call("read_file", {"path": "src/app.py"})
READ_B = Call("read_file", {"path": "src/util.py"})


def _name(tool: Mapping_) -> str:
    return str(tool["function"]["name"])


# --------------------------------------------------------------------------- frames


def cut(text: str, points: Iterable[int]) -> list[str]:
    """``text`` cut at ``points`` (empty pieces dropped)."""
    pieces, last = [], 0
    for p in sorted(set(points)):
        if last < p < len(text):
            pieces.append(text[last:p])
            last = p
    pieces.append(text[last:])
    return [p for p in pieces if p]


def inside_delimiters(text: str, fmt: TextFormat, every_char: bool = False, limit: int = 8) -> list[int]:
    """Cut points in the middle of the delimiters' occurrences (or at each of their characters)."""
    points: list[int] = []
    for delimiter in fmt.delimiters:
        if len(delimiter) < 2:
            continue
        start = text.find(delimiter)
        while start >= 0 and len(points) < limit * 8:
            if every_char:
                points.extend(range(start + 1, start + len(delimiter) + 1))
                points.append(start)
            else:
                points.append(start + len(delimiter) // 2)
            start = text.find(delimiter, start + len(delimiter))
    if not every_char:
        points = sorted(set(points))[:limit]
    return points


def natural(text: str, fmt: TextFormat) -> list[str]:
    """``text`` in frames cut inside its delimiters, but never inside one of the format's
    special tokens: a detokenizer sends a special token whole, so a cut that would fall in
    one falls before it (only the labelled split-delimiters stress case cuts them)."""
    return cut(text, whole_tokens(text, fmt, inside_delimiters(text, fmt)))


def whole_tokens(text: str, fmt: TextFormat, points: Iterable[int]) -> list[int]:
    """``points`` with each one inside an occurrence of a special token moved to its start."""
    spans: list[tuple[int, int]] = []
    for token in fmt.special:
        start = text.find(token)
        while start >= 0:
            spans.append((start, start + len(token)))
            start = text.find(token, start + len(token))
    return [next((a for a, b in spans if a < p < b), p) for p in points]


def markers(fmt: TextFormat, text: str, content: str = "") -> list[str]:
    """The format's delimiters that the text holds and the expected content does not."""
    return [d for d in fmt.delimiters if len(d) >= 3 and d.strip() and d in text and d not in content]


def native_frames(call: Call, call_id: str) -> list[Mapping_]:
    arguments = json.dumps(dict(call.arguments))
    half = len(arguments) // 2
    return [
        {"tool_call": {"index": 0, "id": call_id, "type": "function", "name": call.name, "arguments": ""}},
        {"tool_call": {"index": 0, "arguments": arguments[:half]}},
        {"tool_call": {"index": 0, "arguments": arguments[half:]}},
    ]


# --------------------------------------------------------------------------- cells


@dataclass
class Cell:
    """What a case builder decides; ``scenario`` adds what every cell shares."""

    title: str
    why: str
    frames: list[Any]
    tools: list[Mapping_]
    user: str
    calls: list[Call]
    content: str
    exact: bool = False
    finish: str = "stop"
    backend: Mapping_ | None = None
    request: Mapping_ | None = None
    marker_text: str | None = None
    top: Mapping_ | None = None  # top-level fields (rechunk)
    source: str | None = None  # None: the synthetic template's own line
    # The model's own text, as a proxy that relays what is not a call may pass it on: accepted as well as
    # ``content`` where no client breaks on it (openai-python and the anthropic SDK show it as text beside
    # the one call, and raise nothing).
    relayed: str | None = None


def kept_text(title: str, why: str, frames: list[Any], user: str, text: str, *, tools: list[Mapping_] | None = None,
              finish: str = "stop", request: Mapping_ | None = None) -> Cell:
    """A cell whose markup makes no call: the client gets the text exactly as the model wrote
    it (with the ``read_file`` tool declared, unless ``tools`` says otherwise)."""
    return Cell(title, why, frames, [READ_FILE] if tools is None else tools, user, [], text, exact=True,
                finish=finish, request=request)


CLIENT_READ: frozenset[str] = frozenset({"cline-xml"})
"""Formats no proxy rescues: the XML client reads them from the text the proxy relays, so
their cells are played under ``XML_CLIENT`` (the profile that reads XML calls out of the
content itself: Cline, Roo, Kilo) and expect the calls as that client reads them (values
are text, compared as JSON where the schema types them)."""


def scenario(fmt: TextFormat, case: str, cell: Cell) -> Mapping_:
    text = "".join(f for f in cell.frames if isinstance(f, str))
    backend: Mapping_ = {"dialect": OPENAI.name, "frames": cell.frames, "finish_reason": cell.finish}
    backend.update(cell.backend or {})
    request: Mapping_ = {"model": fmt.model, "stream": True, "messages": [{"role": "user", "content": cell.user}]}
    if cell.tools:
        request["tools"] = cell.tools
    request.update(cell.request or {})
    client: Mapping_ = {"request": request}
    top = dict(cell.top or {})
    if fmt.id in CLIENT_READ:
        client = {"profile": XML_CLIENT.name, "profiles": [XML_CLIENT.name], "request": request}
        top.setdefault("requires", list(XML_CLIENT.features))
    elif not cell.calls or any(d in cell.content for d in fmt.delimiters if len(d) >= 3):
        # An XML-reading client reads markup left in the text as calls of its own: a
        # case whose answer keeps markup as text is about what an OpenAI client sees.
        client = {"profiles": [OPENAI_CLIENT.name], "request": request}
    expect: Mapping_ = {"tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in cell.calls]}
    if cell.relayed is not None:
        expect["content_regex"] = either(cell.content, cell.relayed)
    elif cell.exact and enveloped(fmt):
        expect["content_regex"] = markup_optional(fmt, cell.content)
    else:
        expect["content"] = cell.content
    if cell.exact and not enveloped(fmt):
        expect["content_exact"] = True
    calls_finish = cell.calls and fmt.id not in CLIENT_READ  # an XML client reads its calls from a "stop" answer
    expect["finish_reason"] = "tool_calls" if calls_finish else ("length" if cell.finish == "length" else "stop")
    leak = markers(fmt, cell.marker_text if cell.marker_text is not None else text, cell.content)
    if leak and cell.calls:
        expect["markers"] = leak
    return {
        "id": f"{fmt.family}-{stem(fmt, case)}",
        "title": f"{fmt.id}: {cell.title}",
        "tags": sorted({fmt.family, f"format-{fmt.id}", f"case-{case}", "generated"}),
        "source": cell.source or f"synthetic, generated from the case taxonomy ({case}) with the {fmt.id} writer: {cell.why}",
        **top,
        "backend": backend,
        "client": client,
        "expect": expect,
    }


def enveloped(fmt: TextFormat) -> bool:
    """Every word the model writes is inside a message of its format (gpt-oss's Harmony
    channels): prose is written in the format's own envelope, never bare."""
    return bool(fmt.prose.open)


def said(fmt: TextFormat, before: str, markup: str, after: str = "") -> str:
    """Prose, then markup (a call, a broken one, a cut one), then prose, as the model writes
    them: on lines of their own, or (an enveloped format) the prose before as a message of
    its own and nothing after the markup, which ends the turn."""
    if not enveloped(fmt):
        return "\n".join(p for p in (before, markup, after) if p)
    return fmt.prose.wrap(before) + markup + (fmt.prose.wrap(after) if after and fmt.prose.trailing else "")


def markup_optional(fmt: TextFormat, text: str) -> str:
    """A regular expression for ``text`` delivered unchanged, except that the envelope of
    its prose (a message's header and closing token) may be taken off: a proxy that reads
    the format delivers a message's body alone, one that does not relays it whole; both
    lose nothing the user reads."""
    wrappers = sorted({w for w in (fmt.prose.open, fmt.prose.close, *fmt.prose.answer) if w}, key=len, reverse=True)
    found = re.compile("|".join(re.escape(w) for w in wrappers))
    parts, last = [], 0
    for m in found.finditer(text):
        parts += [re.escape(text[last : m.start()]), f"(?:{re.escape(m.group())})?"]
        last = m.end()
    parts.append(re.escape(text[last:]))
    return r"\A\s*" + "".join(parts) + r"\s*\Z"


def either(*texts: str) -> str:
    """A pattern for the whole text being one of ``texts``, white space between their words as it may come."""
    return r"^\s*(?:" + "|".join(r"\s+".join(re.escape(word) for word in text.split()) for text in texts) + r")\s*$"


def stem(fmt: TextFormat, case: str) -> str:
    """File stem of a cell: ``<format id>.<case id>`` (hand-written files have no dot)."""
    return f"{fmt.id}.{case}"


Builder = Callable[[TextFormat], Cell]
BUILDERS: dict[str, Builder] = {}


def builds(case: str) -> Callable[[Builder], Builder]:
    def register(fn: Builder) -> Builder:
        BUILDERS[case] = fn
        return fn

    return register


@builds("one-call")
def _one_call(fmt: TextFormat) -> Cell:
    return Cell("one call is the whole answer, delimiters split across frames", "the basic rescue.",
                natural(fmt.write([READ]), fmt), [READ_FILE], "Open src/app.py.", [READ], "")


def around(fmt: TextFormat, before: str, calls: str, after: str) -> tuple[str, str]:
    """The answer holding ``calls`` with prose before and after them, in the model's own
    envelope for prose (gpt-oss: a preamble message, and nothing after its calls), and the
    content a client must see."""
    prose = fmt.prose
    gap = "\n\n" if not prose.open else ""
    text = prose.wrap(before) + gap + calls
    if not prose.trailing:
        return text, before
    return text + gap + prose.wrap(after), f"{before}\n\n{after}"


@builds("text-around")
def _text_around(fmt: TextFormat) -> Cell:
    text, content = around(fmt, "I'll read the entry point first.", fmt.write([READ]), "Then I will summarise it.")
    return Cell("prose before and after the call stays", "only the markup may go; the prose is the user's.",
                natural(text, fmt), [READ_FILE], "What does src/app.py do?", [READ], content)


@builds("two-calls-one-block")
def _two_calls_one_block(fmt: TextFormat) -> Cell:
    text = fmt.write([READ, READ_B])
    return Cell("two calls in one block give two calls in order", "parallel calls, as the format groups them.",
                natural(text, fmt), [READ_FILE], "Compare src/app.py with src/util.py.", [READ, READ_B], "")


@builds("two-calls-separate-blocks")
def _two_calls_separate(fmt: TextFormat) -> Cell:
    text = fmt.write([READ]) + fmt.prose.joint + fmt.write([READ_B])
    return Cell("two calls in two blocks give two calls in order", "parallel calls, one block each.",
                natural(text, fmt), [READ_FILE], "Compare src/app.py with src/util.py.", [READ, READ_B], "")


@builds("no-arguments")
def _no_arguments(fmt: TextFormat) -> Cell:
    call = Call("get_time", {})
    return Cell("a call with no arguments gives {}", "a tool without parameters is called with an empty object.",
                natural(fmt.write([call]), fmt), [GET_TIME], "What time is it?", [call], "")


NESTED = Call("create_issue", {
    "title": "Crash on {empty} input [parser]",
    "labels": ["bug", "parser"],
    "meta": {"priority": 2, "assignee": {"login": "mia", "teams": ["core"]}},
    "steps": [{"n": 1, "do": "open"}, {"n": 2, "do": "submit {}"}],
})


@builds("nested-arguments")
def _nested(fmt: TextFormat) -> Cell:
    text = fmt.write([NESTED])
    return Cell("nested objects and arrays arrive intact", "a scanner that stops at the first '}' cuts them.",
                natural(text, fmt) if len(text) < 64 else cut(text, range(40, len(text), 37)),
                [CREATE_ISSUE], "File a bug for the empty-input crash.", [NESTED], "")


TYPED = Call("configure", {
    "retries": 3, "ratio": 0.75, "verbose": True, "timeout": None,
    "targets": ["linux", "mac"], "env": {"CI": "1", "depth": 2},
})


@builds("schema-types")
def _schema_types(fmt: TextFormat) -> Cell:
    return Cell("arguments typed by the schema: integer, number, boolean, null, array, object",
                "formats that write bare text are typed by the tool's JSON Schema.",
                natural(fmt.write([TYPED]), fmt), [CONFIGURE], "Retry three times, verbose, no timeout.", [TYPED], "")


NUMERIC = Call("tag_release", {"ticket": "0042", "version": "1.10", "flag": "true", "nothing": "null", "big": "1e3"})


@builds("numeric-string")
def _numeric_string(fmt: TextFormat) -> Cell:
    return Cell("number-, boolean- and null-looking strings stay strings",
                "the schema says string, so '0042' must not become 42 (nor 'true' a boolean).",
                natural(fmt.write([NUMERIC]), fmt), [TAG_RELEASE], "Tag 1.10 for ticket 0042.", [NUMERIC], "")


UNICODE = Call("write_file", {"path": "docs/日本語/café.md",
                              "content": 'Grüße 👋 from 東京 — "quoted" and back\\slash\ttab 🎉'})


@builds("unicode")
def _unicode(fmt: TextFormat) -> Cell:
    text = fmt.write([UNICODE])
    cuts = [text.index("東") + 1, text.index("👋"), text.index("\\") + 1]
    return Cell("accents, CJK, emoji, quotes, backslashes and tabs arrive unchanged",
                "values must be decoded once, never re-escaped or mangled.",
                cut(text, cuts), [WRITE_FILE], "Write the greeting file.", [UNICODE], "")


@builds("split-escape")
def _split_escape(fmt: TextFormat) -> Cell:
    call = Call("write_file", {"path": "notes.txt", "content": 'say "hi"\nbell \u0007 and café & Tom &amp; Jerry'})
    text = fmt.write([call])
    points = []
    for escape in ('\\"', "\\n", "\\u0007", "&amp;"):
        at = text.find(escape)
        if at >= 0:
            points.extend([at + 1, at + len(escape) // 2 + 1])
    return Cell("frames cut inside escapes, network writes inside a multi-byte character",
                "a decoder must join an escape or a UTF-8 sequence across reads.",
                cut(text, points), [WRITE_FILE], "Write the notes.", [call], "",
                backend={"split_multibyte": True})


@builds("delimiter-in-value")
def _delimiter_in_value(fmt: TextFormat) -> Cell:
    closers = [d for d in fmt.delimiters if d.startswith("</") or d.startswith("\n```") or d == "```"]
    if not closers:  # a format with no closer: its other delimiters
        closers = [d for d in fmt.delimiters if len(d.strip()) >= 2 and not d.startswith("{")]
    if not closers:
        raise NotApplicable
    inner = " and ".join(d.strip() for d in closers)
    call = Call("write_file", {"path": "docs/format.md", "content": f"Each call ends with {inner} after its value."})
    text = fmt.write([call])
    first = text.index(inner) + len(closers[0].strip())
    return Cell("the format's closing delimiters inside a string value do not end the call",
                "a non-greedy match or a scanner closing on the first closer cuts the value; the frame ends "
                "right after the inner delimiter.",
                cut(text, [first]), [WRITE_FILE], "Document how a call ends in docs/format.md.", [call], "",
                marker_text=text.replace(inner, ""))


LONG = Call("write_file", {"path": "data/big.txt", "content": "".join(
    f"line {i:04d}: the quick brown fox jumps over the lazy dog {{x}} [y] <z>\n" for i in range(600))})


@builds("long-argument")
def _long_argument(fmt: TextFormat) -> Cell:
    text = fmt.write([LONG])
    assert len(str(LONG.arguments["content"])) >= 40_000
    return Cell("a 40 KB argument in 256-character frames arrives whole",
                "no buffer cap below what real file writes need; nothing lost or duplicated. Not "
                "re-split: one character per event would make 40,000 events per variant and test "
                "nothing the other cells' re-splits do not.",
                cut(text, range(256, len(text), 256)), [WRITE_FILE], "Write data/big.txt.", [LONG], "",
                top={"rechunk": False})


@builds("split-delimiters")
def _split_delimiters(fmt: TextFormat) -> Cell:
    text = fmt.prose.wrap("Reading it.") + ("" if fmt.prose.open else "\n") + fmt.write([READ])
    return Cell("stress: every delimiter cut at every character, special tokens too",
                "a tag split anywhere is still one tag (no detokenizer splits a special token; a proxy "
                "that re-chunks text may).",
                cut(text, inside_delimiters(text, fmt, every_char=True)), [READ_FILE], "Open src/app.py.",
                [READ], "Reading it.")


def _json_body(fmt: TextFormat) -> str:
    """The writer's text for READ, for formats that write the arguments as JSON (or as
    Python literals)."""
    text = fmt.write([READ])
    if not any(shape in text for shape in ('"path": "src/app.py"', 'path="src/app.py"', '--path "src/app.py"')):
        raise NotApplicable
    return text


@builds("malformed-body")
def _malformed(fmt: TextFormat) -> Cell:
    broken = _json_body(fmt).replace('"src/app.py"', "src/app.py")
    full = said(fmt, "Let me look.", broken, "If that fails I will list the folder.")
    return kept_text("a call with invalid JSON is no call; it and the text after it are delivered",
                     "nothing is lost: the client sees what the model wrote when no call can be read from it.",
                     natural(full, fmt), "Open src/app.py.", full)


def _truncated(fmt: TextFormat) -> str:
    text = fmt.write([READ])
    return said(fmt, "Let me look.", text[: text.index("src/app") + 5])


@builds("unterminated")
def _unterminated(fmt: TextFormat) -> Cell:
    full = _truncated(fmt)
    return kept_text("the answer ends inside a call: no call, the text is delivered",
                     "an incomplete call must not be emitted nor completed with guessed arguments.",
                     natural(full, fmt), "Open src/app.py.", full)


@builds("length-cutoff")
def _length_cutoff(fmt: TextFormat) -> Cell:
    full = _truncated(fmt)
    return kept_text("cut off by the length limit inside a call: no call, the text kept, finish length",
                     "the client must learn the answer was cut, and gets what was written.",
                     natural(full, fmt), "Open src/app.py.", full, finish="length",
                     request={"max_tokens": 24})


@builds("undeclared-tool")
def _undeclared(fmt: TextFormat) -> Cell:
    text = said(fmt, "Here is what I would run:", fmt.write([Call("delete_repo", {"name": "core"})]), "Shall I?")
    return kept_text("a call naming an undeclared tool is not a call; its text stays",
                     "only tools the request declares may be called; the text is not lost.",
                     natural(text, fmt), "Clean up the old repository.", text)


@builds("no-tools")
def _no_tools(fmt: TextFormat) -> Cell:
    text = said(fmt, "A call would look like this:", fmt.write([READ]), "but you asked for none.")
    return kept_text("a request without tools gets the markup as text", "with no tool declared nothing can be called.",
                     natural(text, fmt), "How do you read a file?", text, tools=[])


@builds("prose-mention")
def _prose_mention(fmt: TextFormat) -> Cell:
    opener = next(d for d in fmt.delimiters if d.strip())
    shown = fmt.write([READ]).replace("\n", " ")
    ticks = "`" * (4 if "```" in shown else 1)
    text = fmt.prose.alone(f"The model writes {opener.strip()} before a call, as in {ticks} {shown} {ticks}; "
                           f"a proxy must look past that {ticks} {opener.strip()} {ticks}.")
    return kept_text("the opener mentioned in prose and inline code is text",
                     "explaining the format must not set off a call.",
                     natural(text, fmt), "How does the model call tools?", text)


@builds("fenced-example")
def _fenced_example(fmt: TextFormat) -> Cell:
    text = fmt.prose.alone("A call looks like this:\n\n````text\nExample:\n" + fmt.write([READ]) +
                           "\n````\n\nTell me when you want me to run it.")
    return kept_text("a call shown in a fenced example (with other lines) is text",
                     "an example amid prose is documentation, not a call.",
                     natural(text, fmt), "Show me the call syntax.", text)


@builds("reasoning-block")
def _reasoning(fmt: TextFormat) -> Cell:
    draft = fmt.write([READ_B])
    if enveloped(fmt):  # a draft inside a message is its words: the special tokens would end the message
        for token in fmt.special:
            draft = draft.replace(token, "")
    body = "The user wants the entry point. I could write\n" + draft + "\nbut src/app.py is the right file."
    thought = fmt.reasoning.wrap(body)  # in the model's own reasoning form
    text = thought + fmt.write([READ])
    where = f"a closed {fmt.reasoning.open.strip()} block"
    return Cell(f"a call inside {where} is text; the call after it is a call",
                "reasoning is not an answer: a model that drafts a call while thinking has not made it.",
                natural(text, fmt), [READ_FILE], "Open the entry point.", [READ], thought.strip(),
                marker_text=fmt.write([READ]))


@builds("opener-prefix-at-end")
def _prefix_at_end(fmt: TextFormat) -> Cell:
    opener = fmt.delimiters[0]
    if len(opener.strip()) < 3:
        raise NotApplicable
    text = "I will call the tool next: " + opener[: len(opener) - 1]
    frames = cut(text, [len(text) - len(opener) + 2])
    token = next((t for t in fmt.special if opener.startswith(t) and t != opener), None)
    if enveloped(fmt) and token is not None:  # the turn stops right after the next message's first token
        text = fmt.prose.wrap("I will call the tool next:") + token
        frames = cut(text, [len(text) - len(token)])
    return kept_text("the answer ends with a prefix of the opener; it is delivered",
                     "text held back in case an opener starts must be released when the answer ends.",
                     frames, "Go on.", text)


@builds("native-and-leaked-copy")
def _native_and_copy(fmt: TextFormat) -> Cell:
    frames: list[Any] = natural(fmt.prose.wrap("Reading it.") + ("" if fmt.prose.open else "\n\n") + fmt.write([READ]),
                                fmt)
    frames += native_frames(READ, "call_native_01")
    return Cell("a native call plus a text copy of it give one call",
                "a backend that both parses and leaks the call must not make the client run it twice; the copy "
                "may stay as the model's text, which no client runs.",
                frames, [READ_FILE], "Open src/app.py.", [READ], "Reading it.", finish="tool_calls",
                relayed="Reading it.\n\n" + fmt.write([READ]))


VARIANTS: dict[str, Callable[[str], str]] = {
    # The closing tag left out at the end of the answer (Qwen and Hermes models stop on
    # the end-of-turn token right after the JSON).
    "hermes": lambda text: text[: text.rindex("</tool_call>")].rstrip(),
    # No <tool_call> wrapper around <function=…> (Qwen3-Coder models drop it).
    "qwen-coder": lambda text: text.replace("<tool_call>\n", "").replace("\n</tool_call>", ""),
    # No <function_calls> wrapper around the <invoke> (the VTC design).
    "invoke-xml": lambda text: text.replace("<function_calls>\n", "").replace("\n</function_calls>", ""),
    # The opening fence in the middle of a line, not at its start (the Roo-Cline transformer spec).
    "tool-code": lambda text: "Running it now: " + text,
    # No blank after the token, and the call's id inside the object, as the Mistral-Nemo
    # and Ministral templates render it (ml-explore/mlx-lm#1374, #1643).
    # Blanks instead of newlines between the tags, the call in the middle of a line
    # (GLM-4.5-Air under llama.cpp: ikawrakow/ik_llama.cpp discussion #753).
    "glm": lambda text: "Listing it: " + text.replace("\n", " "),
    # "<tool_call>" spelled out instead of the <|tool_call|> token, as Granite 3.1 writes it
    # (vLLM's granite parser accepts both).
    "granite": lambda text: text.replace("<|tool_call|>", "<tool_call>"),
    # Each token on its own line and the name without its "functions." prefix, as
    # ik_llama.cpp documents Kimi-K2 output (examples/server/function_calls.md).
    "kimi-k2": lambda text: text.replace("|>", "|>\n").replace("functions.", ""),
    # <|python_tag|> before the JSON: Llama 3.1 marks code for its built-in tools so, and
    # models put it before ordinary calls too (vLLM's llama3_json parser strips it).
    "llama3-json": lambda text: "<|python_tag|>" + text,
    # The recipient in the role part of the header and the content type without
    # <|constrain|>, which the Harmony format allows ("the recipient may be in the role or
    # the channel section") and gpt-oss writes.
    "gpt-oss": lambda text: text.replace("<|channel|>commentary to=functions.read_file <|constrain|>json",
                                         " to=functions.read_file<|channel|>commentary json"),
    # The wrapper named <｜DSML｜tool_calls>, as later DeepSeek models write it and hosts
    # leak it into the content.
    "deepseek-v32": lambda text: text.replace("DSML｜function_calls>", "DSML｜tool_calls>"),
    # The section opener spelled with blanks for "▁", as DeepSeek-R1's distilled models
    # write it (llama.cpp's deepseek_r1 parser accepts it and four other spellings).
    "deepseek-v3": lambda text: text.replace("<｜tool▁calls▁begin｜>", "<｜tool calls begin｜>"),
    # No <|python_end|> at the very end of the answer: the model stops on its end-of-turn
    # token right after the list (vLLM's llama4_pythonic parser takes the token as optional).
    "llama4-pythonic": lambda text: text.removesuffix("<|python_end|>"),
    "mistral": lambda text: text.replace("[TOOL_CALLS] [", "[TOOL_CALLS][")[:-2] + ', "id": "a1b2c3d4e"}]',
    # Gemma 4 served with its special tokens stripped: the call reads call:NAME{key:value}, the
    # tokens around it and the string delimiters gone (NousResearch/hermes-agent#7449, #38376).
    "gemma4": lambda text: text.replace("<|tool_call>", "").replace("<tool_call|>", "").replace('<|"|>', ""),
    # Each tag of a MiniMax M3 call on a line of its own: a line break after the invoke's
    # opening tag and after every closing tag, as ml-explore/mlx-lm#1416 quotes M3's output.
    "minimax-m3": lambda text: re.sub(r"(\]<\]minimax\[>\[</[^>]*>)(?=\]<\])", r"\1\n",
                                      text.replace('">]<]minimax[>[', '">\n]<]minimax[>[')),
}


@builds("opener-variant")
def _opener_variant(fmt: TextFormat) -> Cell:
    variant = VARIANTS.get(fmt.id)
    if variant is None:
        raise NotApplicable
    text = variant(fmt.write([READ]))
    prose = next((p for p in ("Running it now:", "Listing it:") if text.startswith(p)), "")
    return Cell("the wrapper or opener missing or altered as models write it is still a call",
                "models of this format really write it so, and the call is unambiguous.",
                natural(text, fmt), [READ_FILE], "Open src/app.py.", [READ], prose)


ORPHANS: dict[str, str] = {"qwen-tools": "</tools>", "hermes": "</tool_call>", "qwen-coder": "</tool_call>",
                           "glm": "</tool_call>", "seed-oss": "</seed:tool_call>",
                           "minimax-m2": "</minimax:tool_call>", "kimi-k2": "<|tool_calls_section_end|>", "deepseek-v31": "<｜tool▁calls▁end｜>",
                           "deepseek-v3": "<｜tool▁calls▁end｜>",
                           "deepseek-v32": "</｜DSML｜function_calls>",
                           "llama4-pythonic": "<|python_end|>",
                           "invoke-xml": "</function_calls>", "cline-xml": "</read_file>",
                           "gemma4": "<tool_call|>", "kimi-k3": "<|close|>tools<|sep|>", "glm47": "</tool_call>",
                           "deepseek-v4": "</｜DSML｜tool_calls>", "roo-tool-call": "[/TOOL_CALL]",
                           "minimax-m3": "]<]minimax[>[</tool_call>"}


@builds("orphan-closer")
def _orphan_closer(fmt: TextFormat) -> Cell:
    closer = ORPHANS.get(fmt.id)
    if closer is None:
        raise NotApplicable
    text = fmt.write([READ]) + "\n" + closer + "\nDone."
    return Cell("a closer left over after the call is text: dropped or relayed",
                "models repeat a closer; the call is made once, and the closer left over is the model's text, "
                "which no client runs.",
                natural(text, fmt), [READ_FILE], "Open src/app.py.", [READ], "Done.", relayed=closer + "\nDone.")


@builds("tool-choice-none")
def _tool_choice_none(fmt: TextFormat) -> Cell:
    text = said(fmt, "I would call it like this:", fmt.write([READ]))
    return kept_text("with tool_choice none the markup is delivered as text",
                     "the client asked for no calls; relaying the model's text unchanged is correct.",
                     natural(text, fmt), "Describe, do not call.", text,
                     request={"tool_choice": "none"})


RUN_SHELL = _tool(
    "run_shell",
    "Run a shell command in the workspace and return its combined output.",
    {"command": {"type": "string", "description": "The command, run with bash -lc."},
     "timeout": {"type": "integer", "description": "Seconds before the command is killed."},
     "cwd": {"type": "string", "description": "Working directory, relative to the workspace root."}},
    ["command"],
)
EDIT_FILE = _tool(
    "edit_file",
    "Replace an exact string in a file with another.",
    {"path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"},
     "replace_all": {"type": "boolean", "default": False}},
    ["path", "old_string", "new_string"],
)
GREP_SEARCH = _tool(
    "grep_search",
    "Search the workspace for a regular expression.",
    {"pattern": {"type": "string"}, "include": {"type": "string", "description": "Glob of the files to search."},
     "case_sensitive": {"type": "boolean"}},
    ["pattern"],
)
SESSION_SHELL = Call("run_shell", {
    "command": "grep -rn \"def parse(\" src/ --include='*.py' | sed -e 's/\\t/  /g' | head -n 20",
    "timeout": 30,
})
SESSION_EDIT = Call("edit_file", {
    "path": "src/toolparse/values.py",
    "old_string": "    end = text.find(CLOSE)\n    return text[:end]\n",
    "new_string": "".join((
        "    # 閉じタグは値の中にも現れる（例：このパーサー自身のドキュメント）。\n",
        "    # A value may quote the closer itself: a README that shows\n",
        "    #     <parameter=path>\n",
        "    #     docs/format.md\n",
        "    #     </parameter>\n",
        "    # so a closer counts only where the next tag follows it.\n",
        "    end = text.find(CLOSE)\n",
        "    while end >= 0 and not text.startswith((\"\\n<parameter=\", \"\\n</function>\"), end + len(CLOSE)):\n",
        "        end = text.find(CLOSE, end + 1)\n",
        "    if end < 0:\n",
        "        raise ValueError(f\"unterminated value: {text[:40]!r}…\")\n",
        "    return text[:end]\n",
    )),
    "replace_all": False,
})
SESSION_SEARCH = Call("grep_search", {"pattern": "エラー|错误|unterminated value", "include": "docs/**/*.md",
                                       "case_sensitive": False})


@builds("realistic-session")
def _realistic_session(fmt: TextFormat) -> Cell:
    calls = [SESSION_SHELL, SESSION_EDIT, SESSION_SEARCH]
    text, content = around(
        fmt,
        "The traceback points at `read_value()` in src/toolparse/values.py: it stops at the first "
        "`</parameter>` even when the value quotes one. 先に呼び出し箇所を確認してから修正します。",
        fmt.write(calls),
        "Once the search comes back I'll run `pytest -q tests/test_values.py` — the fix should make "
        "`test_closer_inside_value` pass.",
    )
    return Cell("a coding agent's turn: prose, a shell command, an edit whose code quotes the markup, a CJK search",
                "what the model's users see, not one template call.", natural(text, fmt),
                [RUN_SHELL, EDIT_FILE, GREP_SEARCH], "`read_value` cuts values that contain a closing tag; fix it.",
                calls, content,
                source=f"synthetic: a realistic coding-agent turn written with the {fmt.id} writer in its model's envelope "
                "(prose as the model writes it, three tools with real schemas, a shell command with quotes "
                "and backslashes, Python code quoting closing tags, CJK, a multi-line value); modelled on "
                "agent sessions, not a capture (captured outputs are in scenarios/captured/)")


def build(fmt: TextFormat, case: str) -> Mapping_:
    """The scenario mapping of one cell; ``NotApplicable`` when the format cannot express it."""
    return scenario(fmt, case, BUILDERS[case](fmt))
