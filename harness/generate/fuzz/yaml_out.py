"""A generated scenario as a YAML file a person can read and commit."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks where YAML allows it, so frames read as text;
    no anchors (a schema repeated in two places is written twice)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and not value[:1].isspace() and value == value.rstrip(" \t"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_scenario(data: Mapping[str, Any], comments: Sequence[str] = ()) -> str:
    body = yaml.dump(dict(data), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)
    return "".join(f"# {line}\n" for line in comments) + body
