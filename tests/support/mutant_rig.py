"""One mock backend and one reference proxy for a module of mutant tests; every test
serves its own mutant next to them. The fuzz-only mutants, whose catching can hang on
when a read ends, are served with a mock of their own in a process apart (``apart``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from harness.run.servers import serve
from mock_backends.app import create_app as create_mock
from mutants.base import proxy_config, reference
from mutants.fuzz_only import FUZZ_ONLY
from support.servers import served_apart


@dataclass(frozen=True)
class Rig:
    mock_url: str
    reference_url: str


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    """One mock and one reference proxy for the module (each stop costs a few tenths
    of a second); every test serves its own mutant next to them with ``servers``."""
    with ExitStack() as stack:
        mock_url = stack.enter_context(serve(create_mock())).url
        reference_url = stack.enter_context(serve(reference(proxy_config(f"{mock_url}/v1")))).url
        yield Rig(mock_url, f"{reference_url}/v1")


@dataclass(frozen=True)
class Apart:
    mock_url: str
    mutant_urls: dict[str, str]  # each fuzz-only mutant's id: its base URL (``…/v1``)


def _fuzz_only_beside_a_mock(stack: ExitStack) -> Apart:
    mock_url = stack.enter_context(serve(create_mock())).url
    return Apart(mock_url, {m.id: f"{stack.enter_context(serve(m.app(f'{mock_url}/v1'))).url}/v1" for m in FUZZ_ONLY})


@pytest.fixture(scope="module")
def apart() -> Iterator[Apart]:
    """A mock and every fuzz-only mutant in front of it, served by a process of their own:
    the bytes of a torn event reach the mutant read by read however busy the test's process
    is, drawing cases or playing them."""
    with served_apart(_fuzz_only_beside_a_mock) as urls:
        yield urls
