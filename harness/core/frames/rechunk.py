"""Re-splitting a scenario's frames (shrinking a failing split is ``harness.core.frames.shrink``).

A proxy that works for the frame boundaries a scenario author happened to write may
still break when the same text arrives cut elsewhere: inside a tag, inside a JSON
string, one character at a time, or with a UTF-8 character torn across two network
writes. The same holds for a native tool call's arguments (OpenAI ``arguments``
fragments, Anthropic ``partial_json``): a proxy that parses them as they come must not
care where they are cut. This module produces such variants from a seed (so a failure
can be reproduced) and, given a predicate that re-runs the exchange, reduces a failing
split to the few boundaries that matter. Pure: no I/O, the predicate does the work.

A split is a set of offsets into the scenario's cuttable text: its content text (all
content frames joined), then its native argument text (every native frame's argument
pieces joined, in frame order). A cut in the content re-splits the content frames; a
cut in the native text splits the native piece it falls in (an OpenAI call's later
pieces become deltas with only the ``index`` and ``arguments``; an Anthropic block
gets one more ``partial_json`` fragment). What the author wrote stays a boundary for
native frames, and native and raw frames keep their positions relative to the text; a
content frame that carries its own delay keeps its start as a boundary, so timing
cases stay timing cases.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import hashlib
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final

from harness.core.dialects.frames import (ContentFrame, EventFrame, Frame, RawFrame, ToolCallFrame, ToolUseFrame,
                                          frame_to_mapping)
from harness.core.replay.planned import wire_events
from harness.core.scenario.model import Scenario

STRATEGIES: Final[tuple[str, ...]] = ("per-char", "tags", "random", "multibyte", "native-per-char", "native-json")
MAX_TORN_WRITES: Final[int] = 1000
# A variant cuts a text into about this many pieces at most: one character per frame of an
# 83 KB answer is 83,000 events through the mock, the proxy and the judge (most of a minute
# of CPU), where a cut every few characters, with one character per frame inside its markup,
# reaches the same states of a parser (what it gives up is load).
MAX_FRAMES: Final[int] = 4096

# Markup openers and closers whose insides a proxy must be able to receive in pieces.
_TAG = re.compile(r"</?[A-Za-z_][^<>]*>|</?")
_FENCE = re.compile(r"```+")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def native_pieces(frame: Frame) -> tuple[str, ...]:
    """The argument text a native frame carries, in the pieces its author wrote."""
    if isinstance(frame, ToolCallFrame):
        return (frame.arguments,) if frame.arguments else ()
    if isinstance(frame, ToolUseFrame):
        return frame.input_json
    return ()


def _resplit(frame: Frame, pieces: Sequence[str]) -> list[Frame]:
    """``frame`` carrying its argument text in ``pieces``."""
    if isinstance(frame, ToolUseFrame):
        return [dataclasses.replace(frame, input_json=tuple(pieces))]
    assert isinstance(frame, ToolCallFrame)
    first = dataclasses.replace(frame, arguments=pieces[0])
    return [first, *(ToolCallFrame(frame.index, arguments=piece) for piece in pieces[1:])]


def _starts(offset: int, pieces: Sequence[str]) -> list[int]:
    """Where each of ``pieces`` starts when they follow each other from ``offset``."""
    out = []
    for piece in pieces:
        out.append(offset)
        offset += len(piece)
    return out


@dataclass(frozen=True)
class Layout:
    """A scenario's frames seen as one cuttable text plus what sits between its pieces."""

    text: str  # the content text
    anchors: tuple[tuple[int, Frame], ...]  # non-content frames and the text offset they precede
    fixed: frozenset[int]  # boundaries every variant keeps (delayed content frames start there)
    delays: Mapping[int, float]  # offset -> delay_ms of the piece starting there
    original: tuple[int, ...]  # the scenario's own content boundaries
    native: str  # the argument text of every native frame, joined in frame order
    native_spans: tuple[tuple[int, int], ...]  # per anchor: its [start, end) in ``native``
    native_fixed: frozenset[int]  # the author's boundaries in ``native``

    @property
    def whole(self) -> str:
        """What split offsets index: the content text, then the native text."""
        return self.text + self.native

    @cached_property
    def native_cuts(self) -> frozenset[int]:
        """Every offset of ``whole`` that cuts the native text where its author did not."""
        n = len(self.text)
        return frozenset(
            n + k for start, end in self.native_spans for k in range(start + 1, end) if k not in self.native_fixed
        )

    def frames(self, splits: Iterable[int]) -> tuple[Frame, ...]:
        """The frames for ``splits``: content cut at every split and fixed point, native
        arguments cut at every split in them, other frames back in their places."""
        n = len(self.text)
        wanted = set(splits)
        cuts = sorted({s for s in wanted if 0 < s < n} | {s for s in self.fixed if 0 < s < n})
        native_cuts = sorted(s - n for s in wanted if s > n)

        def inside(start: int, end: int) -> list[int]:
            return native_cuts[bisect.bisect_right(native_cuts, start) : bisect.bisect_left(native_cuts, end)]

        anchors_at: dict[int, list[Frame]] = {}
        for (offset, frame), (first, last) in zip(self.anchors, self.native_spans, strict=True):
            frames = [frame]
            if inside(first, last):
                pieces: list[str] = []
                for a, piece in zip(_starts(first, native_pieces(frame)), native_pieces(frame)):
                    inner = inside(a, a + len(piece))
                    pieces += [self.native[x:y] for x, y in zip([a, *inner], [*inner, a + len(piece)])]
                frames = _resplit(frame, pieces)
            anchors_at.setdefault(offset, []).extend(frames)
        stops = sorted(set(cuts) | set(anchors_at) | {0, n})
        out: list[Frame] = []
        for start, end in zip(stops, stops[1:] + [None]):
            out.extend(anchors_at.get(start, ()))
            if end is not None and end > start:
                out.append(ContentFrame(self.text[start:end], self.delays.get(start)))
        return tuple(out)


def layout(frames: Sequence[Frame]) -> Layout:
    parts: list[str] = []
    anchors: list[tuple[int, Frame]] = []
    fixed: set[int] = set()
    delays: dict[int, float] = {}
    original: list[int] = []
    native: list[str] = []
    spans: list[tuple[int, int]] = []
    native_fixed: set[int] = set()
    offset = native_offset = 0
    for frame in frames:
        if isinstance(frame, ContentFrame):
            if frame.delay_ms is not None:
                fixed.add(offset)
                delays[offset] = delays.get(offset, 0.0) + frame.delay_ms
            if frame.content:
                original.append(offset)
                parts.append(frame.content)
                offset += len(frame.content)
            continue
        anchors.append((offset, frame))
        start = native_offset
        for piece in native_pieces(frame):
            native_fixed.add(native_offset)
            native.append(piece)
            native_offset += len(piece)
        native_fixed.add(native_offset)
        spans.append((start, native_offset))
    text = "".join(parts)
    return Layout(
        text=text,
        anchors=tuple(anchors),
        fixed=frozenset(fixed),
        delays=delays,
        original=tuple(o for o in original if 0 < o < len(text)),
        native="".join(native),
        native_spans=tuple(spans),
        native_fixed=frozenset(native_fixed),
    )


@dataclass(frozen=True)
class Variant:
    """One re-split of a scenario, reproducible from (seed, scenario id, index)."""

    index: int
    strategy: str
    seed: int
    splits: tuple[int, ...]
    write_bytes: int | None = None
    split_multibyte: bool = False

    @property
    def label(self) -> str:
        network = []
        if self.write_bytes is not None:
            network.append(f"network writes of {self.write_bytes} byte(s)")
        if self.split_multibyte:
            network.append("UTF-8 characters torn across writes")
        extra = f"; {', '.join(network)}" if network else ""
        return f"re-chunk variant {self.index} ({self.strategy}, seed {self.seed}, {len(self.splits)} split(s){extra})"


def variant_random(seed: int, scenario_id: str, index: int) -> random.Random:
    """A generator that depends only on its inputs (not on process hash seeds), so
    every pytest-xdist worker and a later replay derive the same variant."""
    digest = hashlib.sha256(f"{seed}:{scenario_id}:{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def tag_splits(text: str, rng: random.Random) -> set[int]:
    """Cut points inside every tag, fence and JSON string of ``text``."""
    cuts: set[int] = set()
    for m in _TAG.finditer(text):
        start, end = m.span()
        cuts.add(start + 1)  # "<" alone
        if text.startswith("</", start):
            cuts.add(start + 2)  # "</" alone
        if end - start > 3:
            cuts.add(rng.randrange(start + 2, end - 1))  # somewhere in the name or attributes
            cuts.add(end - 1)  # the closing ">" alone
    for m in _FENCE.finditer(text):
        start, end = m.span()
        cuts.update(range(start + 1, end))
    for m in _JSON_STRING.finditer(text):
        start, end = m.span()
        cuts.add(start + 1)
        if end - start > 3:
            cuts.add(rng.randrange(start + 2, end - 1))
        for escape in re.finditer(r"\\.", m.group()):
            cuts.add(start + escape.start() + 1)  # between a backslash and what it escapes
    return {c for c in cuts if 0 < c < len(text)}


def per_char_splits(text: str) -> set[int]:
    """Every offset inside ``text``; in a text of more than ``MAX_FRAMES`` characters, every
    ``step``-th (the smallest step that keeps to ``MAX_FRAMES`` pieces) and every offset in
    and at the edges of a tag or fence, where a parser's state turns."""
    n = len(text)
    step = -(-n // MAX_FRAMES)
    if step <= 1:
        return set(range(1, n))
    cuts = set(range(step, n, step))
    for pattern in (_TAG, _FENCE):
        for m in pattern.finditer(text):
            cuts.update(range(m.start(), m.end() + 1))
    return {c for c in cuts if 0 < c < n}


def _random_cuts(n: int, rng: random.Random) -> set[int]:
    """Up to a third of the offsets inside a text of ``n`` characters (and ``MAX_FRAMES`` at
    most), at random."""
    if n <= 1:
        return set()
    k = min(rng.randint(1, max(1, (n - 1) // 3)), MAX_FRAMES)
    return set(rng.sample(range(1, n), k=min(k, n - 1)))


def torn_write_size(sizes: Sequence[int]) -> int:
    """The smallest write size that tears events of ``sizes`` bytes into at most
    ``MAX_TORN_WRITES`` writes (every event is at least one write, so with more events
    than that, one write each)."""
    lo, hi = 1, max(sizes, default=1)
    while lo < hi:
        mid = (lo + hi) // 2
        if sum(-(-size // mid) for size in sizes) <= MAX_TORN_WRITES:
            hi = mid
        else:
            lo = mid + 1
    return lo


def make_variant(lay: Layout, scenario_id: str, seed: int, index: int, *, sizes: Sequence[int]) -> Variant:
    """Variant ``index``; ``sizes`` are the byte sizes of the scenario's ``wire_events``."""
    rng = variant_random(seed, scenario_id, index)
    strategy = STRATEGIES[index % len(STRATEGIES)]
    n = len(lay.text)
    write_bytes: int | None = None
    split_multibyte = False
    if strategy.startswith("native-") and not lay.native_cuts:
        strategy = "random"  # no native arguments to cut: the content is re-split instead
    if strategy == "native-per-char":  # the content as written, the arguments one character at a time
        cuts = sorted(lay.native_cuts)  # (every few, past MAX_FRAMES of them)
        splits: set[int] = set(lay.original) | set(cuts[:: max(1, -(-len(cuts) // MAX_FRAMES))])
    elif strategy == "native-json":  # the content as written, cuts inside every JSON string of the arguments
        inside = tag_splits(lay.native, rng) | _random_cuts(len(lay.native), rng)
        splits = set(lay.original) | ({n + c for c in inside} & lay.native_cuts)
    elif strategy == "per-char":
        splits = per_char_splits(lay.text)
    elif strategy == "tags":
        splits = tag_splits(lay.text, rng)
        if not splits and n > 1:  # plain prose: fall back to a few random cuts
            splits = set(rng.sample(range(1, n), k=min(n - 1, 3)))
    elif strategy == "random":
        splits = _random_cuts(n, rng)
    else:  # multibyte: keep the author's boundaries, tear the network writes instead
        splits = set(lay.original)
        if any(ord(ch) > 0x7F for ch in lay.text):
            split_multibyte = True
        else:
            # Tiny writes of a long answer would take minutes (the mock pauses between
            # writes so they leave separately): at most about a thousand per answer.
            write_bytes = max(rng.choice((1, 2, 3, 5, 7)), torn_write_size(sizes))
    return Variant(index, strategy, seed, tuple(sorted(splits)), write_bytes, split_multibyte)


def variants(scenario: Scenario, count: int, seed: int) -> list[Variant]:
    """``count`` variants, cycling through the strategies in ``STRATEGIES`` order."""
    lay = layout(scenario.backend.frames)
    sizes = [len(event.data) for event in wire_events(scenario)]
    return [make_variant(lay, scenario.id, seed, i, sizes=sizes) for i in range(count)]


def apply_split(
    scenario: Scenario, splits: Iterable[int], *, write_bytes: int | None = None, split_multibyte: bool = False,
    tear_window: int | None = None,
) -> Scenario:
    """``scenario`` with its content re-split at ``splits`` (and network writes set)."""
    lay = layout(scenario.backend.frames)
    frames = lay.frames(splits)
    backend = dataclasses.replace(
        scenario.backend,
        frames=frames,
        write_bytes=write_bytes if write_bytes is not None else scenario.backend.write_bytes,
        split_multibyte=split_multibyte or scenario.backend.split_multibyte,
        tear_window=tear_window if tear_window is not None else scenario.backend.tear_window,
    )
    raw = copy.deepcopy(dict(scenario.raw))
    raw_backend = dict(raw.get("backend") or {})
    raw_backend["frames"] = [frame_to_mapping(f) for f in frames]
    if backend.write_bytes is not None:
        raw_backend["write_bytes"] = backend.write_bytes
    if backend.split_multibyte:
        raw_backend["split_multibyte"] = True
    if backend.tear_window is not None:
        raw_backend["tear_window"] = backend.tear_window
    raw["backend"] = raw_backend
    return dataclasses.replace(scenario, backend=backend, raw=raw)


def apply_variant(scenario: Scenario, variant: Variant, splits: Iterable[int] | None = None) -> Scenario:
    return apply_split(
        scenario,
        variant.splits if splits is None else splits,
        write_bytes=variant.write_bytes,
        split_multibyte=variant.split_multibyte,
    )


# --------------------------------------------------------------------------- display


def _clip(text: str, width: int) -> str:
    shown = repr(text)
    return shown if len(shown) <= width else shown[: width - 4] + "…" + shown[-3:]


def describe_frames(frames: Sequence[Frame], *, width: int = 72, limit: int = 14) -> list[str]:
    lines = []
    for i, frame in enumerate(frames):
        if len(frames) > limit and limit // 2 <= i < len(frames) - limit // 2:
            if i == limit // 2:
                lines.append(f"  … {len(frames) - limit} more frame(s) …")
            continue
        if isinstance(frame, ContentFrame):
            lines.append(f"  frame {i + 1}: {_clip(frame.content, width)}")
        elif isinstance(frame, RawFrame):
            lines.append(f"  frame {i + 1}: [raw frame]")
        elif isinstance(frame, EventFrame):
            lines.append(f"  frame {i + 1}: [{frame.message_type} {frame.event}]")
        else:
            pieces = " + ".join(_clip(p, width // 2) for p in native_pieces(frame)) or "no arguments"
            lines.append(f"  frame {i + 1}: [native tool call: {pieces}]")
    return lines


def describe_split(scenario: Scenario, splits: Sequence[int], *, context: int = 16) -> list[str]:
    """The frames of a split and each boundary with the text either side of it."""
    lay = layout(scenario.backend.frames)
    lines = describe_frames(lay.frames(splits))
    n = len(lay.text)
    for s in splits:
        text, at, where = (lay.text, s, "") if s <= n else (lay.native, s - n, " of the native arguments")
        before, after = text[max(0, at - context) : at], text[at : at + context]
        lines.append(
            f"  boundary at character {s}{where}: …{_clip(before, context + 8)} ‖ {_clip(after, context + 8)}…"
        )
    return lines
