"""Throughput of the rescue parser, in MB/s of input text, by text size and frame size.

Four texts: plain prose (paragraphs of common English words, no markup at all), a mixed answer
(prose with tool calls of every family, plus near misses: ``a < b``, inline code,
braces, the word "count", non-call JSON and shell fences), file writes (prose with calls
whose values are 1-3 KB of code), and an adversarial one made
only of openers that never become calls (``<invoke `` repeated). Each is fed to a fresh
``Rescuer`` in frames of 1, 16 and 1024 characters and in one piece, then finished. Each run
is timed in segments of 50,000 characters, as CPU time of this process (``time.process_time``),
and a rate is the input over the sum of each segment's best time across runs, so other work
on the machine disturbs the figures less, and the same for every input size. Two first lines
give the floors of the machine: the rate of a feed that does nothing but wrap each 16-char
frame in an event object, and of one that answers each frame with itself. Run: ``.venv/bin/python benchmarks/parser_throughput.py``.

The parser measured is the one importable first: the clone's sources, or an installed wheel's
mypyc-compiled modules (``PYTHONPATH=/path/to/site``, say); its ``parser:`` line says which.
"""

from __future__ import annotations

import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after an installed copy (PYTHONPATH)

from reference_proxy.rescue import COMPILED, Rescuer, ToolSpec  # noqa: E402

TOOLS = [
    ToolSpec(
        "get_weather",
        {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    ),
    ToolSpec("read_file", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("list_files", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec(
        "write_file",
        {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
    ),
]

# Common English words, most frequent first; prose samples them with Zipf weights
# (rank r drawn with weight 1/(r+2)), close to how often words occur in real text.
WORDS = (
    "the of and to a in is it you that he was for on are with as I his they be at one have this from or had by "
    "word but what some we can out other were all there when up use your how said an each she which do their "
    "time if will way about many then them write would like so these her long make thing see him two has look "
    "more day could go come did number sound no most people my over know water than call first who may down "
    "side been now find any new work part take get place made live where after back little only round man year "
    "came show every good me give our under name very through just form sentence great think say help low line "
    "differ turn cause much mean before move right boy old too same tell does set three want air well also play "
    "small end put home read hand port large spell add even land here must big high such follow act why ask "
    "men change went light kind off need house picture try us again animal point mother world near build self "
    "earth father head stand own page should country found answer school grow study still learn plant cover "
    "food sun four between state keep eye never last let thought city tree cross farm hard start might story "
    "saw far sea draw left late run while press close night real life few north open seem together next white "
    "children begin got walk example ease paper group always music those both mark often letter until mile "
    "river car feet care second book carry took science eat room friend began idea fish mountain stop once "
    "base hear horse cut sure watch color face wood main enough plain girl usual young ready above ever red "
    "list though feel talk bird soon body dog family direct pose leave song measure door product black short "
    "numeral class wind question happen complete ship area half rock order fire south problem piece told knew "
    "pass since top whole king space heard best hour better true during hundred five remember step early hold "
    "west ground interest reach fast verb sing listen six table travel less morning ten simple several vowel "
    "toward war lay against pattern slow center love person money serve appear road map rain rule govern pull "
    "cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan figure star "
    "box noun field rest correct able pound done beauty drive stood contain front teach week final gave green "
    "oh quick develop ocean warm free minute strong special mind behind clear tail produce fact street inch "
    "multiply nothing course stay wheel full force blue object decide surface deep moon island foot system "
    "busy test record boat common gold possible plane stead dry wonder laugh thousand ago ran check game shape "
    "equate hot miss brought heat snow tire bring yes distant fill east paint language among"
).split()
WEIGHTS = [1 / (rank + 2) for rank in range(len(WORDS))]

CALLS = [
    '<tools>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tools>',
    '<tool_call>\n{"name": "read_file", "arguments": {"path": "src/app.py"}}\n</tool_call>',
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n"
    "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
    '<function_calls>\n<invoke name="list_files">\n<parameter name="path">.</parameter>\n</invoke>\n'
    "</function_calls>",
    'count\n<invoke name="ns:tool:read_file">\n<parameter name="path">/etc/hosts</parameter>\n</invoke>',
    '```tool_code\n{"tool": "list_files", "path": "docs"}\n```',
    '\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n',
]

NEAR_MISSES = [
    "the account count",
    "we count on it",
    "if a < b then",
    "use `git status` here",
    "a set {x, y} of two",
    "\n{ this line starts with a brace }\n",
    "\n```bash\nls -la\n```\n",
    '\n{"name": "undeclared_tool", "arguments": {}}\n',
    "a <b>bold</b> word",
    "<tool> is not a tag we know",
]


def plain_prose(size: int, seed: int = 1) -> str:
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    paragraph = 0
    words = iter(rng.choices(WORDS, WEIGHTS, k=size))
    while length < size:
        word = next(words)
        paragraph += len(word) + 1
        if paragraph > rng.randint(300, 700):
            word += ".\n\n"
            paragraph = 0
        else:
            word += " "
        parts.append(word)
        length += len(word)
    return "".join(parts)[:size]


def interleaved(size: int, seed: int, steps: tuple[int, int], between: Callable[[random.Random], str]) -> str:
    """Prose cut into runs of ``steps`` characters, with what ``between`` draws after each run."""
    rng = random.Random(seed)
    prose = plain_prose(size, seed)
    parts: list[str] = []
    i = 0
    while i < len(prose):
        step = rng.randint(*steps)
        parts.append(prose[i : i + step])
        i += step
        parts.append(between(rng))
    return "".join(parts)[:size]


def mixed_answer(size: int, seed: int = 2) -> str:
    def between(rng: random.Random) -> str:
        roll = rng.random()
        if roll < 0.15:
            return rng.choice(CALLS)
        return rng.choice(NEAR_MISSES) if roll < 0.6 else ""

    return interleaved(size, seed, (150, 400), between)


CODE = "".join(
    f"def step_{k}(x, y):\n    total = x + y * {k}\n    return total if total > 0 else -total\n\n" for k in range(60)
)


def file_writes(size: int, seed: int = 3) -> str:
    """Prose with calls that write a file, as coding agents ask for: 1-3 KB of code in a
    Qwen3-Coder or an invoke value (no markup inside), where a marker's time is its value."""

    def between(rng: random.Random) -> str:
        value = CODE[: rng.randint(1000, 3000)]
        if rng.random() < 0.5:
            return ("\n<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n"
                    f"<parameter=content>\n{value}\n</parameter>\n</function>\n</tool_call>\n")
        return ('\n<function_calls>\n<invoke name="write_file">\n<parameter name="path">src/a.py</parameter>\n'
                f'<parameter name="content">{value}</parameter>\n</invoke>\n</function_calls>\n')

    return interleaved(size, seed, (300, 900), between)


def opener_spam(size: int) -> str:
    """An adversarial text: marker openers that never become a call ("<invoke " over and
    over). Every one starts a parser; the cost must still grow linearly with the text."""
    return ("<invoke " * (size // 8 + 1))[:size]


def frames_of(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


SEGMENT = 50_000
"""Characters of input per timed segment (see ``best_rate``)."""


def segments_of(frames: list[str]) -> list[list[str]]:
    """The frames in consecutive runs of at least ``SEGMENT`` characters (the last may be shorter)."""
    out: list[list[str]] = [[]]
    size = 0
    for frame in frames:
        if size >= SEGMENT:
            out.append([])
            size = 0
        out[-1].append(frame)
        size += len(frame)
    return out


def run_once(segments: list[list[str]], make: Callable[[list[ToolSpec]], Any] = Rescuer) -> list[float]:
    """CPU time of one run of a fresh ``make(TOOLS)``, per segment (its creation counted in
    the first, its ``finish`` in the last)."""
    clock = time.process_time
    times: list[float] = []
    start = clock()
    rescuer = make(TOOLS)
    feed = rescuer.feed
    for segment in segments:
        for frame in segment:
            feed(frame)
        now = clock()
        times.append(now - start)
        start = now
    rescuer.finish()
    times[-1] += clock() - start
    return times


@dataclass(frozen=True, slots=True)
class Wrapped:
    """An event object around a frame's text: a frozen slotted dataclass with one field."""

    text: str


class FloorRescuer:
    """The least a ``feed`` that wraps each frame in an event object can cost per frame in
    CPython: the call, one ``Wrapped`` event (its one slot filled directly, the cheapest way
    to build it) and its list, nothing checked. It measures the host, so figures taken at
    different times (or under load) compare through it. The rescuer's text events are the
    frames themselves (no object around them), so its plain-text path can beat this floor."""

    def __init__(self, tools: list[ToolSpec]) -> None:
        self.new = Wrapped.__new__
        self.fill = Wrapped.__dict__["text"].__set__

    def feed(self, text: str) -> list[Wrapped]:
        event = self.new(Wrapped)
        self.fill(event, text)
        return [event]

    def finish(self) -> list[Wrapped]:
        return []


class BareFloor:
    """A ``feed`` that answers each frame with itself as its one event, nothing checked: the
    least any feed of this protocol can cost."""

    def __init__(self, tools: list[ToolSpec]) -> None:
        pass

    def feed(self, text: str) -> list[str]:
        return [text]

    def finish(self) -> list[str]:
        return []


def best_rate(
    frames: list[str],
    size_bytes: int,
    budget_s: float = 1.5,
    once: Callable[[list[list[str]]], list[float]] = run_once,
) -> float:
    """MB/s from the best time of each segment over several runs (at least two, more while
    the budget lasts, at most 20). Taking the best of whole runs instead would favour small
    inputs on a shared host: a short run is repeated often and one of its runs finds a quiet
    moment, while a long run always has other work in it; per segment, every input size is
    timed in pieces of the same length and as often (where the budget allows)."""
    segments = segments_of(frames)
    best = once(segments)
    spent = sum(best)
    runs = 1
    while (spent < budget_s or runs < 2) and runs < 20:
        times = once(segments)
        best = [min(a, b) for a, b in zip(best, times)]
        spent += sum(times)
        runs += 1
    return size_bytes / sum(best) / 1e6


def table(make: Callable[[int], str], label: str) -> list[str]:
    sizes = [("1 KB", 1_000), ("100 KB", 100_000), ("1 MB", 1_000_000)]
    frame_sizes = [1, 16, 1024, 0]  # 0: the whole text in one piece, as rescue_text feeds it
    heads = [f"{n}-char frames" if n else "one piece" for n in frame_sizes]
    rows = [f"{label:<14}" + "".join(f"{h:>18}" for h in heads)]
    for name, size in sizes:
        text = make(size)
        size_bytes = len(text.encode("utf-8"))
        cells = [best_rate(frames_of(text, n or len(text)), size_bytes) for n in frame_sizes]
        rows.append(f"{name:<14}" + "".join(f"{c:>13.1f} MB/s" for c in cells))
    return rows


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def main() -> None:
    print(f"machine: {platform.platform()}, {cpu_model()}, {os.cpu_count()} cpus")
    print(f"python:  {platform.python_implementation()} {platform.python_version()}")
    print(f"parser:  {'compiled (mypyc)' if COMPILED else 'pure Python'}: {sys.modules[Rescuer.__module__].__file__}")
    sample = mixed_answer(100_000)
    from reference_proxy.rescue import rescue_text

    _, calls = rescue_text(sample, TOOLS)
    print(f"mixed answer: {len(calls)} calls per 100 KB; a sample call: {json.dumps(calls[0].name)}")
    prose = plain_prose(1_000_000)
    frames, size = frames_of(prose, 16), len(prose.encode("utf-8"))
    floor = best_rate(frames, size, once=lambda segments: run_once(segments, FloorRescuer))
    bare = best_rate(frames, size, once=lambda segments: run_once(segments, BareFloor))
    print(f"floor (a feed that only wraps each frame in an event object), 1 MB in 16-char frames: {floor:.1f} MB/s")
    print(f"bare floor (a feed that answers each frame with itself), 1 MB in 16-char frames: {bare:.1f} MB/s")
    print()
    for line in table(plain_prose, "plain prose"):
        print(line)
    print()
    for line in table(mixed_answer, "mixed answer"):
        print(line)
    print()
    for line in table(file_writes, "file writes"):
        print(line)
    print()
    for line in table(opener_spam, "opener spam"):
        print(line)


if __name__ == "__main__":
    main()
