"""Scenario YAML as people read it: block style in insertion order, no line folding, list items
indented under their key, short collections on one line, and texts whose every character shows.
Both writers of scenario files (the format generator and the capture importer) use it, so a
generated file and an imported one look alike."""

from __future__ import annotations

import json
import re
from typing import Any

import yaml


class Quoted(str):
    """Written double-quoted: every character visible, escapes for the invisible ones (a frame's
    text, so its split points show)."""


class FlowMap(dict[str, Any]):
    """Written on one line."""


class FlowList(list[Any]):
    """Written on one line."""


# PyYAML mangles Unicode line separators and control characters in any style but double quotes.
_NEEDS_ESCAPES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


class _LiteralDumper(_Dumper):
    """Multi-line text as a literal block (the emitter falls back to quotes when the text
    cannot be one, e.g. with trailing spaces)."""


def _quoted_lines(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if ("\n" in data or _CONTROL.search(data)) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _literal_lines(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = '"' if _NEEDS_ESCAPES.search(data) else ("|" if "\n" in data.rstrip("\n") else None)
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


for _cls, _text in ((_Dumper, _quoted_lines), (_LiteralDumper, _literal_lines)):
    _cls.add_representer(str, _text)
    _cls.add_representer(Quoted, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", str(s), style='"'))
    _cls.add_representer(FlowMap, lambda d, m: d.represent_mapping("tag:yaml.org,2002:map", dict(m), flow_style=True))
    _cls.add_representer(FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", list(v), flow_style=True))


def compact(value: Any, width: int) -> Any:
    """Collections whose JSON fits in ``width`` characters (and holds no line break) on one
    line, longer ones in block style, their members compacted the same way."""
    if isinstance(value, (dict, list)):
        try:
            flat = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            flat = "\n"
        if value and len(flat) <= width and "\\n" not in flat:
            return FlowMap(value) if isinstance(value, dict) else FlowList(value)
        if isinstance(value, dict):
            return {k: compact(v, width) for k, v in value.items()}
        return [compact(v, width) for v in value]
    return value


def dump(data: Any, *, literal_blocks: bool = False) -> str:
    """``data`` as YAML; a multi-line text as a literal block with ``literal_blocks``, else
    double-quoted on one line."""
    return yaml.dump(data, Dumper=_LiteralDumper if literal_blocks else _Dumper, sort_keys=False, allow_unicode=True,
                     width=2**31 - 1, default_flow_style=False)
