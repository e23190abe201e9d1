"""The habits real servers stream with, each a pure rewrite of an answer's events.

The mock writes an answer the way an ideal server of its dialect would. Real servers
differ in small ways (a ``null`` where OpenAI writes ``""``, a call sent whole, a comment
line before the first token), and proxies break on them in the field. A ``Habit`` is one
such way, with where it was seen and what a proxy must do with it: *tolerate* it (no
crash, no text lost, no call lost or split) or *normalise* it before its client sees it,
the latter only where a named client breaks on it. ``servers`` groups habits into the
servers that have them.

An event is a ``Piece``: its JSON data when it is one ``data:`` line of JSON, else its bytes
kept as they are (``[DONE]``, a comment, a raw scenario frame, half an event of a fault).
Habits only touch the pieces they recognise, so a scenario's deliberately broken frames
stay broken exactly as written.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Verdict = Literal["tolerate", "normalise"]


@dataclass(frozen=True, slots=True)
class Piece:
    """One event of a streamed answer: its JSON ``value`` (None: ``raw`` is sent as it is)."""

    value: Any
    raw: bytes = b""
    delay: float = 0.0
    event: str | None = None  # the ``event:`` line's name, when it has one

    def encode(self) -> bytes:
        if self.value is None:
            return self.raw
        head = b"" if self.event is None else b"event: " + self.event.encode() + b"\n"
        return head + b"data: " + dumps(self.value) + b"\n\n"


def dumps(value: Any) -> bytes:
    """Compact JSON as servers write it (UTF-8, not ASCII-escaped; escapes for lone surrogates)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


def parse(data: bytes, delay: float = 0.0) -> Piece:
    """``data`` as a piece: JSON when it is one event of one ``data:`` line (an ``event:`` line before it allowed)."""
    event: str | None = None
    body = data
    if body.startswith(b"event: "):
        line, _, body = body.partition(b"\n")
        event = line[len(b"event: "):].decode("utf-8", "replace")
    if body.startswith(b"data: ") and body.endswith(b"\n\n") and body.count(b"\n") == 2 and body[6:7] == b"{":
        try:
            return Piece(json.loads(body[6:-2]), data, delay, event)
        except ValueError:
            pass
    return Piece(None, data, delay)


Rewrite = Callable[[list[Piece]], list[Piece]]


@dataclass(frozen=True)
class Habit:
    """One way a real server streams that an ideal one does not."""

    name: str
    says: str  # what the server does, in one sentence
    sources: tuple[str, ...]  # public reports where it was seen (issue, PR, docs)
    verdict: Verdict
    why: str  # tolerate: who reads it relayed unchanged; normalise: the clients (and versions) that break on it
    rewrite: Rewrite = field(repr=False)

    def apply(self, pieces: Sequence[Piece]) -> list[Piece]:
        return self.rewrite([replace(p, value=copy.deepcopy(p.value)) for p in pieces])


# --------------------------------------------------------------------------- chat chunks


def choice(piece: Piece) -> dict[str, Any] | None:
    """A chunk's first choice, when it is a chat chunk with one."""
    value = piece.value
    if not isinstance(value, dict):
        return None
    choices = value.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def delta(piece: Piece) -> dict[str, Any] | None:
    found = choice(piece)
    d = None if found is None else found.get("delta")
    return d if isinstance(d, dict) else None


def is_chunk(piece: Piece) -> bool:
    return isinstance(piece.value, dict) and isinstance(piece.value.get("choices"), list)


def is_finish(piece: Piece) -> bool:
    found = choice(piece)
    return found is not None and found.get("finish_reason") not in (None, "")


def is_usage(piece: Piece) -> bool:
    """The usage chunk of ``include_usage``: no choices, a usage object."""
    value = piece.value
    return is_chunk(piece) and not value["choices"] and isinstance(value.get("usage"), dict)


def is_role_only(piece: Piece) -> bool:
    d = delta(piece)
    return d is not None and d.get("role") == "assistant" and not d.get("content") and "tool_calls" not in d


def calls_of(piece: Piece) -> list[dict[str, Any]]:
    d = delta(piece)
    calls = None if d is None else d.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _with_key_after(value: dict[str, Any], after: str, key: str, item: Any) -> dict[str, Any]:
    """``value`` with ``key`` placed right after ``after`` (at the end when it is absent)."""
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k != key:
            out[k] = v
        if k == after:
            out[key] = item
    out.setdefault(key, item)
    return out


def _each_chunk(change: Callable[[Piece], Piece | None]) -> Rewrite:
    def rewrite(pieces: list[Piece]) -> list[Piece]:
        out = []
        for piece in pieces:
            changed = change(piece) if is_chunk(piece) else piece
            if changed is not None:
                out.append(changed)
        return out

    return rewrite


def top_fields(fields: dict[str, Any], *, after: str = "model") -> Rewrite:
    """Every chunk carries ``fields`` (placed after ``after``)."""

    def change(piece: Piece) -> Piece:
        value = piece.value
        for key, item in fields.items():
            value = _with_key_after(value, after, key, item)
        return replace(piece, value=value)

    return _each_chunk(change)


def usage_null(pieces: list[Piece]) -> list[Piece]:
    """With a usage chunk at the end, every other chunk says ``"usage": null``."""
    if not any(is_usage(p) for p in pieces):
        return pieces
    return [replace(p, value={**p.value, "usage": None}) if is_chunk(p) and not is_usage(p) else p for p in pieces]


def obfuscation(pieces: list[Piece]) -> list[Piece]:
    """Each delta chunk carries an ``obfuscation`` string of padding (deterministic here)."""
    out = []
    for i, p in enumerate(pieces):
        if choice(p) is not None:
            pad = hashlib.sha256(str(i).encode()).hexdigest()[: 4 + i % 9]
            p = replace(p, value={**p.value, "obfuscation": pad})
        out.append(p)
    return out


def openai_finish(pieces: list[Piece]) -> list[Piece]:
    """The role chunk says ``refusal: null``; the finish chunk's delta is ``{}`` and has no ``stop_reason``."""
    for p in pieces:
        d = delta(p)
        if d is None:
            continue
        found = choice(p)
        assert found is not None
        if is_role_only(p):
            d["refusal"] = None
        if is_finish(p) and not d.get("content") and "tool_calls" not in d:
            found["delta"] = {}
            found.pop("stop_reason", None)
    return pieces


SAFE_FILTER = {name: {"filtered": False, "severity": "safe"} for name in ("hate", "self_harm", "sexual", "violence")}


def prompt_filter_first(pieces: list[Piece]) -> list[Piece]:
    """A first chunk with empty ``id``, ``model`` and ``object``, no choices, and the prompt's filter results."""
    first = {"choices": [], "created": 0, "id": "", "model": "", "object": "", "system_fingerprint": None,
             "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": SAFE_FILTER}]}
    return [Piece(first), *pieces] if any(is_chunk(p) for p in pieces) else pieces


def content_filter_results(pieces: list[Piece]) -> list[Piece]:
    """Every choice whose delta has text carries ``content_filter_results``."""
    for p in pieces:
        d = delta(p)
        if d is not None and d.get("content"):
            found = choice(p)
            assert found is not None
            found["content_filter_results"] = SAFE_FILTER
    return pieces


def filter_offsets_chunk(pieces: list[Piece]) -> list[Piece]:
    """Before the finish chunk, a chunk whose choice has no ``delta``: only the filter's results and offsets."""
    at = next((i for i, p in enumerate(pieces) if is_finish(p)), None)
    if at is None:
        return pieces
    text = sum(len(d.get("content") or "") for p in pieces if (d := delta(p)) is not None)
    annotation = {"choices": [{"index": 0, "finish_reason": None, "content_filter_results": SAFE_FILTER,
                               "content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": text}}],
                  "created": 0, "id": "", "model": "", "object": ""}
    return [*pieces[:at], Piece(annotation), *pieces[at:]]


def continuous_usage(pieces: list[Piece]) -> list[Piece]:
    """With a usage chunk asked for, every chunk carries the usage so far (vLLM's ``continuous_usage_stats``)."""
    last = next((p for p in pieces if is_usage(p)), None)
    if last is None:
        return pieces
    prompt = int(last.value["usage"].get("prompt_tokens") or 0)
    out, made = [], 0
    for p in pieces:
        if is_chunk(p) and not is_usage(p):
            made += 1 if choice(p) is not None and not is_finish(p) else 0
            p = replace(p, value={**p.value, "usage": {"prompt_tokens": prompt, "total_tokens": prompt + made,
                                                          "completion_tokens": made}})
        out.append(p)
    return out


def null_fields(pieces: list[Piece]) -> list[Piece]:
    """Every delta names all its fields, ``null`` when unused; every choice says ``matched_stop``; every chunk ``usage``."""
    for p in pieces:
        d, found = delta(p), choice(p)
        if d is None or found is None:
            continue
        full = {"role": None, "content": None, "reasoning_content": None, "tool_calls": None}
        full.update(d)
        found["delta"] = full
        found.setdefault("matched_stop", None)
        p.value.setdefault("usage", None)
    return pieces


def empty_finish(pieces: list[Piece]) -> list[Piece]:
    """Chunks that do not finish say ``finish_reason: ""`` instead of null."""
    for p in pieces:
        found = choice(p)
        if found is not None and found.get("finish_reason") is None:
            found["finish_reason"] = ""
    return pieces


def two_finishes(pieces: list[Piece]) -> list[Piece]:
    """The last chunk with a delta before the finish chunk carries the finish reason as well."""
    at = next((i for i, p in enumerate(pieces) if is_finish(p)), None)
    if at is None:
        return pieces
    reason = choice(pieces[at])["finish_reason"]  # type: ignore[index]
    before = next((i for i in range(at - 1, -1, -1) if delta(pieces[i]) is not None), None)
    if before is not None and not is_role_only(pieces[before]):
        choice(pieces[before])["finish_reason"] = reason  # type: ignore[index]
    return pieces


def content_null_first(pieces: list[Piece]) -> list[Piece]:
    """The first chunk announces the role with ``content: null``."""
    for p in pieces:
        if is_role_only(p):
            d = delta(p)
            assert d is not None
            d["content"] = None
            break
    return pieces


def done_without_blank_line(pieces: list[Piece]) -> list[Piece]:
    """``data: [DONE]`` ends with one newline, not the blank line that dispatches an event."""
    return [replace(p, raw=b"data: [DONE]\n") if p.value is None and p.raw == b"data: [DONE]\n\n" else p
            for p in pieces]


def _cut_after_backslashes(text: str) -> list[str]:
    pieces, start = [], 0
    for i, ch in enumerate(text):
        if ch == "\\" and i + 1 < len(text):
            pieces.append(text[start : i + 1])
            start = i + 1
    pieces.append(text[start:])
    return pieces


def backslash_cut(pieces: list[Piece]) -> list[Piece]:
    """A text or argument delta is cut right after each backslash: a delta may end in a lone ``\\``."""
    out: list[Piece] = []
    for p in pieces:
        d = delta(p)
        if d is None or is_finish(p):
            out.append(p)
            continue
        content, calls = d.get("content"), calls_of(p)
        if isinstance(content, str) and "\\" in content[:-1] and not calls:
            for k, part in enumerate(_cut_after_backslashes(content)):
                copy_ = replace(p, value=copy.deepcopy(p.value), delay=p.delay if k == 0 else 0.0)
                delta(copy_)["content"] = part  # type: ignore[index]
                out.append(copy_)
            continue
        args = calls[0].get("function", {}).get("arguments") if len(calls) == 1 else None
        if isinstance(args, str) and "\\" in args[:-1] and not content:
            for k, part in enumerate(_cut_after_backslashes(args)):
                copy_ = replace(p, value=copy.deepcopy(p.value), delay=p.delay if k == 0 else 0.0)
                call = calls_of(copy_)[0]
                if k:  # a later piece: only the index and the arguments, as servers continue a call
                    call_delta: dict[str, Any] = {"index": call["index"]} if "index" in call else {}
                    call_delta["function"] = {"arguments": part}
                    delta(copy_)["tool_calls"] = [call_delta]  # type: ignore[index]
                    delta(copy_).pop("role", None)  # type: ignore[union-attr]
                else:
                    call["function"]["arguments"] = part
                out.append(copy_)
            continue
        out.append(p)
    return out


def glued(pieces: list[Piece]) -> list[Piece]:
    """Each content chunk leaves in one network write with the chunk after it."""
    out: list[Piece] = []
    i = 0
    while i < len(pieces):
        p = pieces[i]
        if i + 1 < len(pieces) and delta(p) is not None and delta(pieces[i + 1]) is not None:
            nxt = pieces[i + 1]
            out.append(Piece(None, p.encode() + nxt.encode(), p.delay + nxt.delay))
            i += 2
            continue
        out.append(p)
        i += 1
    return out


def no_index(pieces: list[Piece]) -> list[Piece]:
    """Tool-call deltas carry no ``index``."""
    for p in pieces:
        for call in calls_of(p):
            call.pop("index", None)
    return pieces


def whole_calls(pieces: list[Piece]) -> list[Piece]:
    """Every call of the answer arrives whole, all in one chunk, where the first call began."""
    merged: dict[Any, dict[str, Any]] = {}
    first: int | None = None
    out: list[Piece] = []
    for p in pieces:
        calls = calls_of(p)
        d = delta(p)
        if not calls or d is None or d.get("content"):
            out.append(p)
            continue
        for call in calls:
            whole = merged.setdefault(call.get("index"), {"id": None, "type": "function",
                                                          "function": {"name": "", "arguments": ""}})
            if "index" in call:
                whole["index"] = call["index"]
            if call.get("id"):
                whole["id"] = whole["id"] or call["id"]
            fn = call.get("function") or {}
            whole["function"]["name"] += fn.get("name") or ""
            whole["function"]["arguments"] += fn.get("arguments") or ""
        if first is None:
            first = len(out)
            out.append(p)
    if first is None:
        return pieces
    calls = []
    for whole in merged.values():
        call = {k: whole[k] for k in ("index", "id", "type", "function") if k in whole and whole[k] is not None}
        calls.append(call)
    delta(out[first])["tool_calls"] = calls  # type: ignore[index]
    return out


def stop_for_calls(pieces: list[Piece]) -> list[Piece]:
    """An answer that calls tools finishes with ``stop`` rather than ``tool_calls``."""
    for p in pieces:
        found = choice(p)
        if found is not None and found.get("finish_reason") == "tool_calls":
            found["finish_reason"] = "stop"
    return pieces


def role_every_chunk(pieces: list[Piece]) -> list[Piece]:
    """No role-only opening chunk: every delta says ``role: assistant`` (and ``content``) itself."""
    out = []
    for p in pieces:
        if is_role_only(p) and not is_finish(p):
            continue
        d = delta(p)
        if d is not None:
            found = choice(p)
            assert found is not None
            found["delta"] = {"role": "assistant", "content": d.get("content") or "", **{
                k: v for k, v in d.items() if k not in ("role", "content")}}
        out.append(p)
    return out


def role_on_every_delta(pieces: list[Piece]) -> list[Piece]:
    """Every delta with text or a call says ``role: assistant`` again (the role chunk is kept)."""
    for p in pieces:
        d = delta(p)
        if d is not None and "role" not in d and (d.get("content") or d.get("tool_calls")):
            choice(p)["delta"] = {"role": "assistant", **d}  # type: ignore[index]
    return pieces


def usage_key_null(pieces: list[Piece]) -> list[Piece]:
    """Every chunk with choices says ``usage: null`` (last), whether or not a usage chunk comes."""
    return [replace(p, value={**p.value, "usage": None}) if choice(p) is not None and "usage" not in p.value else p
            for p in pieces]


def usage_on_finish(pieces: list[Piece]) -> list[Piece]:
    """The finish chunk carries the usage, asked for or not (counted from the answer's chunks when the
    answer has no usage chunk; a usage chunk that was asked for still comes)."""
    at = next((i for i, p in enumerate(pieces) if is_finish(p)), None)
    if at is None:
        return pieces
    last = next((p for p in pieces if is_usage(p)), None)
    made = sum(1 for p in pieces[:at] if delta(p) is not None and not is_role_only(p))
    usage = dict(last.value["usage"]) if last is not None else {
        "completion_tokens": made, "prompt_tokens": 16, "total_tokens": made + 16}
    finish = pieces[at]
    return [*pieces[:at], replace(finish, value={**finish.value, "usage": usage}), *pieces[at + 1:]]


def role_with_first_delta(pieces: list[Piece]) -> list[Piece]:
    """No role-only opening chunk: the first delta with text or a call says ``role: assistant``."""
    out = [p for p in pieces if not (is_role_only(p) and not is_finish(p))]
    if len(out) == len(pieces):
        return pieces
    for p in out:
        d = delta(p)
        if d is not None and (d.get("content") or d.get("tool_calls")):
            choice(p)["delta"] = {"role": "assistant", **d}  # type: ignore[index]
            break
    return out


def _continuations_named(pieces: list[Piece], name: str | None, type: str | None) -> list[Piece]:
    """Every continuation delta of a call (one without an ``id``) says ``id: ""``, its
    ``type`` when given, and ``name``: the two ways servers repeat a call's identity."""
    for p in pieces:
        for call in calls_of(p):
            if "id" not in call:
                call["id"] = ""
                if type is not None:
                    call["type"] = type
                fn = call.get("function") or {}
                call["function"] = {"name": name, **{k: v for k, v in fn.items() if k != "name"}}
    return pieces


def empty_identity(pieces: list[Piece]) -> list[Piece]:
    """A call's continuation deltas repeat its identity empty: ``id: ""``, ``type`` and ``name: ""``."""
    return _continuations_named(pieces, "", "function")


def calls_as_object(pieces: list[Piece]) -> list[Piece]:
    """A delta's ``tool_calls`` is the one call object itself, not a list of calls."""
    for p in pieces:
        d = delta(p)
        calls = calls_of(p)
        if d is not None and len(calls) == 1:
            d["tool_calls"] = calls[0]
    return pieces


def null_name_continuations(pieces: list[Piece]) -> list[Piece]:
    """Continuation deltas say ``id: ""`` and ``name: null``."""
    return _continuations_named(pieces, None, None)


def arguments_object(pieces: list[Piece]) -> list[Piece]:
    """A call sent whole carries its ``arguments`` as a JSON object, not a string."""
    for p in pieces:
        for call in calls_of(p):
            fn = call.get("function")
            if not isinstance(fn, dict):
                continue
            args = fn.get("arguments")
            if isinstance(args, str):
                try:
                    parsed = json.loads(args)
                except ValueError:
                    continue
                if isinstance(parsed, dict):
                    fn["arguments"] = parsed
    return pieces


def comments_first(*lines: bytes) -> Rewrite:
    """SSE comment lines before the first event (a gateway's keep-alive while the model starts)."""

    def rewrite(pieces: list[Piece]) -> list[Piece]:
        return [*(Piece(None, line + b"\n\n") for line in lines), *pieces]

    return rewrite


def native_finish(pieces: list[Piece]) -> list[Piece]:
    """Every choice also says the provider's own ``native_finish_reason``."""
    for p in pieces:
        found = choice(p)
        if found is not None:
            found["native_finish_reason"] = found.get("finish_reason")
    return pieces


def finish_in_last_delta(pieces: list[Piece]) -> list[Piece]:
    """No separate finish chunk: the last chunk with text or a call carries the finish reason (and usage)."""
    at = next((i for i, p in enumerate(pieces) if is_finish(p)), None)
    if at is None:
        return pieces
    finish = pieces[at]
    d = delta(finish)
    before = next((i for i in range(at - 1, -1, -1) if delta(pieces[i]) is not None), None)
    if before is None or (d and (d.get("content") or d.get("tool_calls"))) or is_role_only(pieces[before]):
        return pieces
    choice(pieces[before])["finish_reason"] = choice(finish)["finish_reason"]  # type: ignore[index]
    out = pieces[:at] + pieces[at + 1:]
    usage = next((i for i, p in enumerate(out) if is_usage(p)), None)
    if usage is not None:
        out[before] = replace(out[before], value={**out[before].value, "usage": out[usage].value["usage"]})
        del out[usage]
    return out


# --------------------------------------------------------------------------- Messages events


def pings(pieces: list[Piece]) -> list[Piece]:
    """A ``ping`` event after the first ``content_block_start``, where the API sends it (unless one is there)."""
    kinds = [p.value.get("type") if isinstance(p.value, dict) else None for p in pieces]
    if "ping" in kinds or "content_block_start" not in kinds:
        return pieces
    at = kinds.index("content_block_start") + 1
    return [*pieces[:at], Piece({"type": "ping"}, event="ping"), *pieces[at:]]
