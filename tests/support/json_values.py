"""JSON documents taken apart: every place in one, for the tests that break a document at each."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def places(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of ``node`` itself (``()``) and of every value inside it, keys and indexes."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from places(value, (*path, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from places(value, (*path, index))
