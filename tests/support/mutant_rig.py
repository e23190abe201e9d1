"""One mock backend and one reference proxy for a module of mutant tests; every test
serves its own mutant next to them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import pytest

from harness.run.servers import serve
from mock_backends.app import create_app as create_mock
from mutants.base import proxy_config, reference


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
