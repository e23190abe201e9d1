"""Reading a scenario's YAML text: stricter than ``yaml.safe_load``, and every problem
located at the line an author has to fix.

A duplicate key is refused rather than silently won by its last value (``id: a`` then
``id: b`` would give a scenario nobody wrote), and the reader's errors, which only
know a character position, are given a line too.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from functools import cached_property
from typing import Any

import yaml

from harness.core.errors import ScenarioError, ScenarioProblem


def _refuse_duplicates(node: yaml.Node) -> None:
    if isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], yaml.Node] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode) or key.value == "<<":
                continue
            seen = first.setdefault((key.tag, key.value), key)
            if seen is not key:
                raise yaml.constructor.ConstructorError(
                    None, None,
                    f"duplicate key '{key.value}' (first given on line {seen.start_mark.line + 1}); "
                    "give each key once",
                    key.start_mark,
                )


class _UniqueKeyLoader(yaml.SafeLoader):
    """``SafeLoader`` that refuses a mapping holding the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        _refuse_duplicates(node)
        return super().construct_mapping(node, deep=deep)


class _FastUniqueKeyLoader(yaml.CSafeLoader):
    """The same on libyaml's parser, several times faster on a library of hundreds of
    files. Only a clean file is read with it: a broken one is read again with the pure
    Python loader, whose messages and positions the problems report."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        _refuse_duplicates(node)
        return super().construct_mapping(node, deep=deep)


_FAST = getattr(yaml, "__with_libyaml__", False)


def load_yaml(text: str, where: str) -> Any:
    """The document in ``text``; ``ScenarioError`` with file, line and reason when it is not valid YAML."""
    if _FAST:
        try:
            return yaml.load(text, Loader=_FastUniqueKeyLoader)  # a SafeLoader: no arbitrary objects
        except yaml.YAMLError:
            pass  # read again below, for the pure Python loader's located message
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        what = f"unacceptable character #x{exc.character:04x}" if isinstance(exc.character, int) else "bad input"
        raise ScenarioError([ScenarioProblem(where, line, "(yaml)", f"not valid YAML: {what}: {exc.reason}")]) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([ScenarioProblem(where, mark.line + 1 if mark is not None else None, "(yaml)",
                                             f"not valid YAML: {problem}")]) from exc


class Lines:
    """Maps a JSON path inside a YAML document to the line it was written on.

    Only a problem needs a line, so the text is composed into nodes on the first
    question, never for a file that loads cleanly."""

    def __init__(self, text: str | None) -> None:
        self._text = text

    @cached_property
    def _root(self) -> yaml.Node | None:
        if self._text is None:
            return None
        try:
            return yaml.compose(self._text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            return None

    def line(self, path: Sequence[str | int], *, key: bool = False) -> int | None:
        node = self._root
        line = None if node is None else node.start_mark.line + 1
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for k, v in node.value:
                    if k.value == part:
                        line = (k if key and part == path[-1] else v).start_mark.line + 1
                        node = v
                        break
                else:
                    return line
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line
