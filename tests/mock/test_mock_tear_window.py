"""A torn answer with ``backend.tear_window``: every write boundary is one the full tear
makes, every boundary near what a reader of bytes treats apart (an event's edges, a line
break, a non-ASCII byte, a backslash) is kept, the first event is torn whole, and the
stream decodes the same, over a real socket."""

from __future__ import annotations

import re

import pytest
from support.mock_chat import check_stream, make_scenario
from support.mock_server import Mock, shared  # noqa: F401  (shared: fixture)

from harness.core.nonce import NONCE_HEADER
from harness.core.replay.wire import Event, torn, writes

NEAR = re.compile(rb"[\x80-\xff\r\n\\]")

SAMPLES = [
    b'data: {"choices":[{"delta":{"content":"plain ascii only, long enough to be merged"}}]}\n\n',
    'data: {"choices":[{"delta":{"content":"wörld ✓ 😀 and then ascii"}}]}\n\n'.encode(),
    b'event: content_block_delta\ndata: {"delta":{"text":"a\\nb \\"q\\" tail of plain text"}}\n\n',
    "€".encode(),
    b"",
]


def _cuts(pieces: list[bytes]) -> list[int]:
    out, at = [], 0
    for piece in pieces[:-1]:
        at += len(piece)
        out.append(at)
    return out


def _near(data: bytes, cut: int, window: int) -> bool:
    if cut <= window or cut >= len(data) - window:
        return True
    return any(cut - window <= m.start() < cut + window for m in NEAR.finditer(data))


@pytest.mark.parametrize("data", SAMPLES)
@pytest.mark.parametrize(("size", "window"), [(1, 6), (2, 6), (2, 1), (3, 4)])
def test_a_window_keeps_the_full_tears_cuts_near_what_a_reader_treats_apart(data: bytes, size: int,
                                                                             window: int) -> None:
    pieces = torn(data, size, window)
    assert b"".join(pieces) == data
    full = set(range(size, len(data), size))
    cuts = _cuts(pieces)
    assert set(cuts) <= full  # no cut the full tear does not make
    assert {c for c in full if _near(data, c, window)} == set(cuts)  # and every one near what matters
    assert writes(Event(data), write_bytes=size, split_multibyte=False, tear_window=window) == (pieces or [data])


def test_a_character_is_torn_as_the_full_tear_tears_it() -> None:
    data = 'data: {"content":"plain text before 😀 plain text after"}\n\n'.encode()
    for size in (1, 2):
        full = set(range(size, len(data), size))
        start = data.index("😀".encode())
        inside = {c for c in full if start < c < start + 4}
        assert inside <= set(_cuts(torn(data, size, 6)))


def test_the_mock_tears_the_first_event_whole_and_the_rest_near_what_matters(shared: Mock) -> None:  # noqa: F811
    url, control, http = shared
    frames = ["héllo ", "plain ascii that goes in one write ", "wörld ✓ 😀", 'with "quotes" and \\ a\nline']
    scenario = make_scenario("tear-window", frames, request={"model": "m"}, write_bytes=2, tear_window=6)
    nonce = control.arm(scenario)
    pieces: list[bytes] = []
    with http.stream("POST", url + "/v1/chat/completions", json=scenario.client.request,
                     headers={NONCE_HEADER: nonce}) as response:
        assert response.status_code == 200
        pieces.extend(p for p in response.iter_raw() if p)  # one server write is one read here
    raw = b"".join(pieces)
    spans = check_stream(raw, scenario, model="m", include_usage=False)
    boundaries = set(_cuts(pieces))
    first_start, first_end = spans[0]
    assert set(range(first_start + 2, first_end, 2)) <= boundaries  # the first event: every cut
    for start, end in spans[1:]:
        event = raw[start:end]
        inside = {c - start for c in boundaries if start < c < end}
        assert inside == {c for c in range(2, len(event), 2) if _near(event, c, 6)}, event
    assert len(pieces) < len(raw) // 2  # fewer writes than the full tear
